import GateCore

/// The verdict on protocol v2: which protocol the ESP32 answers a signed status query in.
extension DoctorVerdict {
    public static func v2(_ facts: V2ProbeFacts, keyID: UInt8, file: String) -> DoctorFinding {
        switch facts {
        case .answered(let status, let target):
            let epoch = String(status.epoch, radix: 16)
            let answered = "the ESP32 at \(target) answers protocol v2 to key \(keyID): a signed "
            guard status.acceptsV1 else {
                return .ok(
                    .v2,
                    answered + "0x92 (epoch \(epoch)) to a status query, which moves nothing; it refuses v1 openings"
                )
            }
            return .warn(
                .v2,
                answered + "0x94 (epoch \(epoch)): it still accepts v1 openings (its migration setting), which anyone "
                    + "on the network can send; once every client has [esp32] protocol = 2, turn the firmware's "
                    + "migration setting off (menuconfig, or NVS migration = 0)"
            )
        case .silent(let ignored, let budget, let target):
            let others = ignored == 0 ? "" : " (\(ignored) other datagram\(ignored == 1 ? "" : "s") ignored)"
            return .misconfigured(
                .v2,
                "no signed answer from \(target) to a status query for key \(keyID) within "
                    + "\(budget.humanReadable)\(others): the ESP32 runs a v1 firmware, holds another key for key id "
                    + "\(keyID), or is not there",
                fix: "give the firmware the key that `gate key new` printed, as key \(keyID) (firmware/README.md, "
                    + "\"Provisioning a key\"), or set [esp32] protocol = 1 in \(file) while it speaks v1"
            )
        case .unreachable(let why):
            return .unavailable(
                .v2,
                "cannot ask the ESP32 for its status: \(why)",
                fix: "is the ESP32 powered and on the network? is udp.host right? (in \(file))"
            )
        case .noKey(let why):
            return .misconfigured(
                .v2,
                why,
                fix: "run `gate key new` and give the key it prints to the firmware, or give the service the systemd "
                    + "credential esp32-key (LoadCredentialEncrypted=esp32-key)"
            )
        }
    }
}
