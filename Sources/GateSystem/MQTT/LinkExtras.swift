import GateCore

/// What a link carries besides the relay's topics: a last will, more subscriptions.
public struct LinkExtras: Sendable, Equatable {
    public var will: OutgoingMessage?
    public var subscriptions: [String]
    /// Protocol v2's replies and epoch announcement topics (`[esp32] protocol = 2`).
    public var v2: V2Subscription?
    /// The link then speaks MQTT 5 and subscribes to `subscriptions` with "retain as
    /// published": a retained message keeps its flag even when it arrives live (a
    /// retained command must never be taken for a press, docs/CONTRACT.md#home-assistant).
    public var retainAsPublished: Bool

    public init(
        will: OutgoingMessage? = nil,
        subscriptions: [String] = [],
        retainAsPublished: Bool = false,
        v2: V2Subscription? = nil
    ) {
        self.will = will
        self.subscriptions = subscriptions
        self.retainAsPublished = retainAsPublished
        self.v2 = v2
    }
}
