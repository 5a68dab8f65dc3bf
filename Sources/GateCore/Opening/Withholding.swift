/// Why an adapter sent nothing although it could have (docs/CONTRACT.md#evidence-and-time).
public enum Withholding: Sendable, Hashable {
    /// The budget ended while this was still under way (resolving a name, connecting).
    case budgetSpent(during: String)
    /// A `1` without its `0` was seen on the status topic before the trigger.
    case relayActive
    /// The relay already answered an earlier trigger of this opening (seen on the
    /// status topic): the answer is on its way to the machine.
    case relayAnswered
    /// The process that asked for the opening (a control socket client) hung up
    /// before the trigger: nobody waits for it.
    case openerGone
}
