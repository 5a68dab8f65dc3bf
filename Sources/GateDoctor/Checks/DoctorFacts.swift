import GateCore
/// What `gate doctor` gathered from the system, in plain values, so that the
/// judgement (`DoctorVerdict`) can be tested without the system.
