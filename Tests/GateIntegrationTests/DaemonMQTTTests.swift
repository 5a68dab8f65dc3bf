import Foundation
import GateTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

private let triggerTopic = "iot/house/gate/esp32/trigger"

/// The simulator's options to use `broker` as well as UDP.
private func simulatorMQTT(_ broker: MosquittoBroker) -> [String] {
    ["--mqtt-host", "127.0.0.1", "--mqtt-port", String(broker.port)]
}

/// The trigger another MQTT client (the phone app) would publish: the Unix time in seconds.
private func publishForeignTrigger(_ broker: MosquittoBroker) throws {
    try broker.publish(topic: triggerTopic, payload: String(Int(Date().timeIntervalSince1970)), qos: 0)
}

extension DaemonTests {
    @Suite("The warm MQTT link")
    struct Link {
        @Test(
            "Broker killed: a press opens over UDP; broker back on the same port: the link comes up again and an MQTT opening works"
        )
        func brokerKilledAndRestarted() throws {
            let broker = try MosquittoBroker(.plain)
            let sim = try Simulator(simulatorMQTT(broker))
            let config = try TestConfig(daemonConfigText(udpPort: sim.udpPort, mqttPort: broker.port, cooldown: 0))
            let daemon = try DaemonProcess(config: config.path, environment: GateRunner.isolatedEnvironment())
            try daemon.waitForReady()
            #expect(daemon.waitForLog("gate: info: MQTT link up"), "\(daemon.log)")
            daemon.waitForSettling()

            broker.kill()
            #expect(daemon.waitForLog("gate: warning: MQTT link lost; reconnecting"), "\(daemon.log)")
            let whileDown = try daemon.press()
            #expect(daemon.waitForPressHandled(edgeNs: whileDown), "\(daemon.log)")
            let last = DaemonFiles.last(daemon.status())
            #expect(last?["outcome"] as? String == "success", "\(String(describing: last))\n\(daemon.log)")
            #expect(last?["adapter"] as? String == "udp")
            #expect(last?["source"] as? String == "button")
            #expect(try sim.activations().map(\.via) == ["udp"])

            try broker.restart()
            // libmosquitto's backoff (1 s doubling up to 30 s) decides when: a generous deadline.
            #expect(daemon.waitForLog("gate: info: MQTT link up", count: 2, timeout: .seconds(60)), "\(daemon.log)")
            #expect(
                waitUntil(.seconds(60)) { sim.stderrText.contains("subscribed to \(triggerTopic) again") },
                "\(sim.stderrText)"
            )

            // UDP made unusable: nothing listens on the new port, so the datagram draws ICMP
            // port unreachable and the opening falls back to MQTT through the warm link.
            let closedPort = try freeUDPPort()
            try daemonConfigText(udpPort: closedPort, mqttPort: broker.port, cooldown: 0)
                .write(toFile: config.path, atomically: true, encoding: .utf8)
            daemon.send(SIGHUP)
            #expect(daemon.waitForLog("configuration reloaded; changed: udp.port "), "\(daemon.log)")
            #expect(daemon.logLines(containing: "MQTT link replaced").isEmpty, "[mqtt] did not change: the link stays")

            let afterRestart = try daemon.press()
            #expect(daemon.waitForPressHandled(edgeNs: afterRestart), "\(daemon.log)")
            let activations = try sim.activations()
            #expect(activations.map(\.via) == ["udp", "mqtt"], "\(activations)\n\(daemon.log)")
            let final = DaemonFiles.last(daemon.status())
            #expect(final?["outcome"] as? String == "success", "\(String(describing: final))\n\(daemon.log)")
            #expect(final?["adapter"] as? String == "mqtt")
            // Through the warm link: the opening made no connection of its own.
            #expect(daemon.logLines(containing: "connecting afresh").isEmpty, "\(daemon.log)")
            let history = try daemon.history()
            #expect(history.map { $0["adapter"] as? String } == ["udp", "mqtt"], "\(history)")
            #expect(history.allSatisfy { $0["source"] as? String == "button" && $0["outcome"] as? String == "success" })
            #expect(daemon.stop() == .exited(0), "\(daemon.log)")
        }

        @Test(
            "Warm link waiting out its backoff, broker back: a press connects afresh for its MQTT attempt and opens"
        )
        func freshLinkWhileTheWarmLinkWaits() throws {
            let broker = try MosquittoBroker(.plain)
            broker.kill()
            // Nothing listens on the UDP port: ICMP port unreachable, and the press falls back to MQTT.
            let config = try TestConfig(
                daemonConfigText(udpPort: try freeUDPPort(), mqttPort: broker.port, cooldown: 0)
            )
            let daemon = try DaemonProcess(config: config.path, environment: GateRunner.isolatedEnvironment())
            try daemon.waitForReady()
            // Four refusals (retries after 1, 2 and 4 s): the link's next try is 8 s away.
            #expect(
                daemon.waitForLog("MQTT link down; retrying", count: 4, timeout: .seconds(20)),
                "\(daemon.log)"
            )
            try broker.restart()
            let sim = try Simulator(simulatorMQTT(broker))
            #expect(daemon.logLines(containing: "MQTT link up").isEmpty, "\(daemon.log)")

            let press = try daemon.press()
            #expect(daemon.waitForPressHandled(edgeNs: press), "\(daemon.log)")
            let last = DaemonFiles.last(daemon.status())
            #expect(last?["outcome"] as? String == "success", "\(String(describing: last))\n\(daemon.log)")
            #expect(last?["adapter"] as? String == "mqtt")
            #expect(try sim.activations().map(\.via) == ["mqtt"])
            #expect(daemon.logLines(containing: "connecting afresh").count == 1, "\(daemon.log)")
            // The attempt's own link logs with the opening's source; the warm link without one.
            let warmUp = daemon.logLines(containing: "MQTT link up").filter { !$0.contains("source=") }
            #expect(
                warmUp.isEmpty,
                "the warm link was still waiting: the attempt's own carried the opening\n\(daemon.log)"
            )
            #expect(daemon.stop() == .exited(0), "\(daemon.log)")
        }

        @Test("A cycle caused by another MQTT client is recorded as elsewhere; one by `gate open` is not")
        func elsewhere() throws {
            let broker = try MosquittoBroker(.plain)
            let sim = try Simulator(simulatorMQTT(broker))
            let config = try TestConfig(daemonConfigText(udpPort: sim.udpPort, mqttPort: broker.port, cooldown: 0))
            let environment = GateRunner.isolatedEnvironment()
            let daemon = try DaemonProcess(config: config.path, environment: environment)
            try daemon.waitForReady()
            #expect(daemon.waitForLog("gate: info: MQTT link up"), "\(daemon.log)")

            try publishForeignTrigger(broker)
            let recorded = waitUntil {
                let status = daemon.status()
                return status?["state"] as? String == "ready"
                    && DaemonFiles.last(status)?["source"] as? String == "elsewhere"
            }
            #expect(recorded, "\(String(describing: daemon.status()))\n\(daemon.log)")
            let last = DaemonFiles.last(daemon.status())
            #expect(last?["outcome"] as? String == "success")
            #expect(last?["adapter"] as? String == "mqtt")
            #expect(daemon.log.contains("gate: notice: relay activated by someone else"), "\(daemon.log)")
            #expect(try sim.activations().map(\.via) == ["mqtt"])
            #expect(try daemon.history().map { $0["source"] as? String } == ["elsewhere"])

            // The CLI holds the lock for its whole opening: the 1 and 0 the simulator publishes
            // for it are not someone else's.
            let run = try GateRunner.run(["open", "--config", config.path, "--json"], environment: environment)
            #expect(run.status == 0, "\(run.summary)")
            #expect(try sim.activations().count == 2)
            // A relay 1 within 1 s of a local opening's end counts as that opening's late echo
            // (RelayObserver.echoBound): the next foreign trigger waits that out.
            Thread.sleep(forTimeInterval: 1.5)
            // Status messages are handled in order: once the next foreign cycle is recorded,
            // the CLI's was handled before it.
            try publishForeignTrigger(broker)
            #expect(daemon.waitForLog("relay cycle confirmed, caused elsewhere", count: 2), "\(daemon.log)")
            let sources = try daemon.history().map { $0["source"] as? String }
            #expect(sources == ["elsewhere", "cli", "elsewhere"], "\(daemon.log)")
            #expect(daemon.logLines(containing: "relay activated by someone else").count == 2, "\(daemon.log)")
            #expect(daemon.stop() == .exited(0), "\(daemon.log)")
        }
    }
}
