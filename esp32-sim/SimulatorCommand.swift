import ArgumentParser
import CGateProtocol
import Plumbing

@main
struct SimulatorCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "esp32-sim",
        abstract: "Simulate the gate's ESP32 relay controller, for tests and demos.",
        discussion: """
            Listens where the ESP32 would and answers as its firmware does, over UDP and, \
            with --mqtt-host, over MQTT at the same time. There is one relay: a trigger on \
            either side closes it, it is held for --hold-ms, then released and ready again. \
            A trigger that arrives while the relay is held is ignored: no answer, one log line.

            UDP
            A datagram whose first byte is 0x01 is a trigger: 0x01 goes back to the sender's \
            address and port when the relay closes, 0x00 when it releases. Other datagrams \
            are ignored and logged. UDP answers go only to the sender of the trigger.

            MQTT
            With --mqtt-host the device connects to that broker (client id esp32-sim- and 8 \
            random hex digits, keep-alive 60 s, clean session) and subscribes to the trigger \
            topic. A message there (payload: the Unix time as decimal text; any payload is \
            accepted and logged) is a trigger. Retained messages are stale and ignored. Every \
            relay change is published on the status topic, 1 when it closes and 0 when it \
            releases (QoS 0, not retained), whatever triggered it: a UDP trigger shows on \
            MQTT too. The password is read from $\(MQTTSettings.passwordVariable), never \
            from an argument. --mqtt-tls-ca turns on TLS, with the broker's certificate and \
            host name verified against that CA; the port then defaults to 8883. The first \
            connection must succeed (CONNACK and SUBACK within 10 s); after that the device \
            reconnects by itself, every 1–2 s, and subscribes again.

            PROTOCOL 2
            --protocol 2 runs the ESP32's rules of protocol v2 (PROTOCOL-V2.md, \
            docs/CONTRACT.md) through the same C core as the firmware: 32-byte frames with \
            an HMAC tag, a counter per key and the device's epoch; the first copy of an open \
            cycles the relay and later copies (on either transport) are only acknowledged; \
            signed replies 0x90/0x91 (relay on/off), 0x92 (status; 0x94 while v1 is still \
            accepted), 0x93 (busy), 0x9E (stale epoch). Over UDP a frame is one datagram and \
            replies go to its sender. Over MQTT requests come on <trigger>/v2 and replies go \
            to <status>/v2, as 64 lowercase hex digits; at every connection, at every epoch \
            change and after a reboot the device publishes, per key, a signed 0x92 retained on \
            <status>/v2/epoch/<key_id>; it keeps publishing plain 1/0 on the status topic. \
            The epoch is drawn at start and every --epoch-period-ms (the previous one stays \
            valid one period). SIGUSR1 reboots the device without closing its sockets or its \
            broker connection: a new epoch, every counter forgotten, a held relay dropped.

            Keys: each --key-file ID=PATH names a file holding the key as `gate key new` \
            prints it (64 hex digits, one trailing newline allowed), and each environment \
            variable \(ProvisionedKey.variablePrefix)<ID> (ID 1–255) holds one; never on the \
            command line, where every user can read it. Without a key the device speaks v1 \
            only, like the firmware; with one it ignores v1 requests (0x01, the plain trigger \
            topic) unless --accept-v1 keeps them for a migration (the firmware's "migration" \
            setting). At most \(GATE_MAX_KEYS) keys.

            FAULT MODES
            --fault makes the device misbehave so that the gate's error handling can be \
            tried. A fault changes only what the device reports (and, for slow-release, \
            when): the relay itself always cycles, and every activation is written to the \
            trigger log, so a test can tell "triggered but answered wrongly" from "never \
            triggered". A mode applies to both transports; prefix it with udp: or mqtt: to \
            apply it to one (--fault udp:silent --fault mqtt:garbage). --fault may be given \
            once per transport. udp-off and mqtt-off remove their own transport. \
            slow-release lengthens the hold when the trigger came on the transport that \
            has it. Each mode is described under --fault below.

            Under --protocol 2 the modes apply to what goes out on their transport: the \
            signed replies about an opening (0x90, 0x91, 0x93, 0x9E), v1's bytes and the \
            plain 1/0 (garbage sends 0x90 with a tag that fails, or 0x7f, or x). Status \
            replies and epoch announcements are never altered, so a client still learns the \
            epoch. Two modes exist only there: lost-replies loses every reply sent on its \
            transport, status replies included, or a random --loss-fraction of them; busy \
            makes every open arriving on its transport find the relay held by another \
            opening (0x93, the relay does not move; a copy of that counter gets 0x93 again).

            TRIGGER LOG
            --trigger-log FILE appends one JSON line per relay activation (ignored triggers \
            are not written). The file is created if missing (mode 0644) and never truncated; \
            each line is a single append, so a reader never sees half a line:
              {"via":"udp","at":"2026-11-21T10:00:00.123Z","from":"127.0.0.1:5555"}
              {"via":"mqtt","at":"2026-11-21T10:00:02.456Z","payload":"1795255202"}
            "at" is the time of activation in UTC with milliseconds; "from" is the UDP \
            sender's address and port, written as --udp accepts it; "payload" is the MQTT \
            trigger's payload. Under --protocol 2 each line also says what opened: \
            "protocol":2,"key_id":1,"counter":42 for an open, "protocol":1 for a v1 trigger.

            OUTPUT
            Log lines go to stderr as "esp32-sim: <message>"; one names the address actually \
            bound ("listening on udp 127.0.0.1:54321"), which tells a test the port chosen \
            for port 0 (with udp-off the line is "udp off" instead). The line "ready" is \
            printed on stdout once every enabled transport listens: the UDP socket is bound \
            and the broker has acknowledged the subscription. Nothing else is printed there.

            EXIT STATUS
            0 after SIGINT or SIGTERM, 64 for a usage error, 1 when the address cannot be \
            bound, the trigger log cannot be opened, a key cannot be read or is not 64 hex \
            digits, or the first MQTT connection fails (refused, not authorised, TLS error, \
            or no SUBACK within 10 s).

            EXAMPLES
              esp32-sim --udp 0.0.0.0:8080
              esp32-sim --udp [::1]:0 --fault no-release --trigger-log relay.jsonl
              ESP32_SIM_MQTT_PASSWORD=secret esp32-sim --mqtt-host broker.lan \\
                --mqtt-username esp32 --mqtt-tls-ca ca.pem --fault udp-off
              esp32-sim --protocol 2 --key-file 1=pi.key --key-file 2=laptop.key \\
                --mqtt-host 127.0.0.1 --fault udp:lost-replies
            """
    )

    @Option(
        help: ArgumentHelp(
            "Address and port to listen on for UDP triggers.",
            discussion: "127.0.0.1:PORT, [::1]:PORT, 0.0.0.0:PORT, [::]:PORT, localhost:PORT or any "
                + "other IP literal. Port 0 picks a free port (see the \"listening on\" log line).",
            valueName: "host:port"
        )
    )
    var udp = "127.0.0.1:8080"

    @Option(help: ArgumentHelp("The MQTT broker's host name or address; enables MQTT.", valueName: "host"))
    var mqttHost: String?

    @Option(
        help: ArgumentHelp("The broker's port (default 1883, or 8883 with --mqtt-tls-ca).", valueName: "port")
    )
    var mqttPort: Int?

    @Option(
        help: ArgumentHelp(
            "User name for the broker.",
            discussion: "The password comes from $\(MQTTSettings.passwordVariable).",
            valueName: "user"
        )
    )
    var mqttUsername: String?

    @Option(
        name: .customLong("mqtt-tls-ca"),
        help: ArgumentHelp("Connect with TLS, trusting the CA certificates in this PEM file.", valueName: "file")
    )
    var mqttTLSCA: String?

    @Option(
        help: ArgumentHelp(
            "Topic to take triggers from (default \(MQTTSettings.defaultTriggerTopic)).",
            valueName: "topic"
        )
    )
    var mqttTriggerTopic: String?

    @Option(
        help: ArgumentHelp(
            "Topic to publish relay changes on (default \(MQTTSettings.defaultStatusTopic)).",
            valueName: "topic"
        )
    )
    var mqttStatusTopic: String?

    @Option(
        name: .customLong("hold-ms"),
        help: ArgumentHelp("How long the relay stays closed, in milliseconds (0…60000).", valueName: "ms")
    )
    var holdMilliseconds = 400

    @Option(
        help: ArgumentHelp(
            "How the device misbehaves; repeatable, once per transport.",
            discussion: "MODE applies to both transports, udp:MODE or mqtt:MODE to one.",
            valueName: "[udp:|mqtt:]mode"
        )
    )
    var fault: [FaultSetting] = []

    @Option(
        name: .customLong("protocol"),
        help: ArgumentHelp("1 (the plain 0x01) or 2 (signed frames; see PROTOCOL 2).", valueName: "1|2")
    )
    var protocolVersion = 1

    @Option(
        name: .customLong("key-file"),
        help: ArgumentHelp(
            "Provision key ID (1–255) from the file PATH (protocol 2); repeatable.",
            discussion: "The file holds 64 hex digits. Keys also come from $\(ProvisionedKey.variablePrefix)<ID>.",
            valueName: "ID=PATH"
        )
    )
    var keyFiles: [KeyFileSetting] = []

    @Flag(
        help: "Protocol 2 with keys: still act on v1 requests, and say so (0x94) in status replies (migration)."
    )
    var acceptV1 = false

    @Option(
        name: .customLong("epoch-period-ms"),
        help: ArgumentHelp(
            "Protocol 2: how often a new epoch is drawn, in milliseconds (100…86400000; default 600000).",
            valueName: "ms"
        )
    )
    var epochPeriodMilliseconds: Int?

    @Option(
        help: ArgumentHelp(
            "Under --fault [udp:|mqtt:]lost-replies, the share of replies lost at random (0 < f ≤ 1; default 1, all).",
            valueName: "f"
        )
    )
    var lossFraction: Double?

    @Option(
        name: .customLong("trigger-log"),
        help: ArgumentHelp("Append one JSON line per relay activation to this file.", valueName: "file")
    )
    var triggerLogPath: String?

    @Flag(
        name: .shortAndLong,
        help: "Log debug detail: every datagram received, silent faults, libmosquitto's messages."
    )
    var verbose = false

    func validate() throws {
        guard SocketAddress(endpoint: udp) != nil else {
            throw ValidationError(
                "--udp \(udp): expected HOST:PORT with an IPv4 literal, [IPv6 literal] or localhost, "
                    + "and a port 0…65535, e.g. 127.0.0.1:8080 or [::1]:0"
            )
        }
        guard (0...60_000).contains(holdMilliseconds) else {
            throw ValidationError("--hold-ms \(holdMilliseconds): must be 0…60000")
        }
        try validateProtocol()
        try validateMQTT(faults: try Faults(fault))
    }
}
