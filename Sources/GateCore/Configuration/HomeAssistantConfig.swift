/// The gate as one Home Assistant device over MQTT discovery (docs/CONTRACT.md#home-assistant).
public struct HomeAssistantConfig: Sendable, Equatable {
    public static let defaultDiscoveryPrefix = "homeassistant"
    public static let defaultNodeID = "garden_gate"
    public static let defaultName = "Garden gate"

    /// HA's discovery prefix (`homeassistant` unless HA was told otherwise).
    public var discoveryPrefix: String
    /// `[A-Za-z0-9_-]+`: the device's and its entities' unique_id stem, and the topics' node.
    public var nodeID: String
    /// The device's name in HA.
    public var name: String

    public init(
        discoveryPrefix: String = HomeAssistantConfig.defaultDiscoveryPrefix,
        nodeID: String = HomeAssistantConfig.defaultNodeID,
        name: String = HomeAssistantConfig.defaultName
    ) {
        self.discoveryPrefix = discoveryPrefix
        self.nodeID = nodeID
        self.name = name
    }

    /// What `node_id` (and `gate homeassistant remove --node-id`) takes: 1–64 characters
    /// of A–Z, a–z, 0–9, `_` and `-`.
    public static func isValidNodeID(_ text: String) -> Bool {
        (1...64).contains(text.utf8.count) && text.utf8.allSatisfy(TOMLLineScanner.isBareKeyByte)
    }
}
