/// What an adapter observed, in the words of the protocol rather than the transport.
///
/// Adapters translate datagrams and MQTT messages into these; the state
/// machine decides what they mean for the opening. Text payloads are the
/// adapter's own account (it knows the host, the call and its error code).
public enum AdapterEvent: Sendable, Hashable {
    /// The trigger left this machine.
    case sent
    /// The ESP32 reported its relay state.
    case relay(RelayState)
    /// The ESP32's address answered something outside the protocol.
    case invalid(InvalidAnswer)
    /// The network refused at once (no route, ICMP port unreachable, connect refused):
    /// there is no evidence that a trigger reached the ESP32.
    case unreachable(String)
    /// The link ended after the trigger left and before any answer: the trigger may
    /// have reached the ESP32.
    case lost(String)
    /// The adapter cannot run as configured (a missing password, say): nothing was sent.
    case misconfigured(String)
    /// The adapter held its trigger back: nothing was sent.
    case withheld(Withholding)
    /// The adapter's budget ran out.
    case deadlineReached
    /// Protocol v2: a genuine reply for the opening's frame (its key id, gate and counter,
    /// its tag checked), with the ESP32's epoch in it. Only v2 adapters report these.
    case signed(V2ReplyKind, epoch: UInt32)
}
