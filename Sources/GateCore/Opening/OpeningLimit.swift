extension GateConfig {
    /// The longest one opening can take (UDP then MQTT budgets at most) plus a margin
    /// for the pipeline's graces and a loaded machine: how long a daemon's shutdown
    /// waits for an opening in flight, and how long a client waits for the daemon
    /// that accepted its opening.
    public var openingLimit: Duration {
        .seconds(fromConfig: (udp?.timeout ?? 0) + (mqtt?.timeout ?? 0) + 5)
    }

    /// The longest `openingLimit` of any configuration that validates: the daemon's
    /// stop waits this long at most for an opening in flight. The opening ends by its
    /// own budgets, read from the configuration it began with, so a stop waits only
    /// as long as that opening needs, whatever a reload changed since the start.
    public static var longestOpeningLimit: Duration {
        .seconds(fromConfig: Double(UDPConfig.maximumTimeout + MQTTConfig.maximumTimeout + 5))
    }
}
