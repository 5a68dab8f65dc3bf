extension GateConfig {
    /// The longest one opening can take (UDP then MQTT budgets at most) plus a margin
    /// for the pipeline's graces and a loaded machine: how long a daemon's shutdown
    /// waits for an opening in flight, and how long a client waits for the daemon
    /// that accepted its opening.
    public var openingLimit: Duration {
        .seconds(fromConfig: (udp?.timeout ?? 0) + (mqtt?.timeout ?? 0) + 5)
    }
}
