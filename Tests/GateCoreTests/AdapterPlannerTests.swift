import Testing

@testable import GateCore

private func ip(_ text: String) -> IPAddress { IPAddress(literal: text)! }

private let table = [
    InterfaceAddress(name: "lo", isUp: true, isLoopback: true, address: ip("127.0.0.1"), netmask: ip("255.0.0.0")),
    InterfaceAddress(
        name: "wlan0",
        isUp: true,
        isLoopback: false,
        address: ip("192.168.1.20"),
        netmask: ip("255.255.255.0")
    ),
    InterfaceAddress(
        name: "eth0",
        isUp: false,
        isLoopback: false,
        address: ip("10.0.0.2"),
        netmask: ip("255.255.255.0")
    ),
    InterfaceAddress(
        name: "wlan0",
        isUp: true,
        isLoopback: false,
        address: ip("fd00:1::20"),
        netmask: ip("ffff:ffff:ffff:ffff::")
    ),
]

@Suite("On-link check and adapter order")
struct AdapterPlannerTests {
    @Test(
        "An address in an up interface's subnet is on-link",
        arguments: ["192.168.1.50", "192.168.1.1", "fd00:1::50"]
    )
    func onLink(address: String) {
        #expect(LinkVerdict.of(ip(address), in: table) == .onLink(interface: "wlan0"))
    }

    @Test(
        "Addresses outside every up subnet are off-link",
        arguments: ["192.168.2.50", "10.0.0.5", "8.8.8.8", "fd00:2::1"]
    )
    func offLink(address: String) {
        #expect(LinkVerdict.of(ip(address), in: table) == .offLink)
    }

    @Test(
        "Loopback is always usable, even with an empty table",
        arguments: ["127.0.0.1", "127.8.9.10", "::1", "::ffff:127.0.0.1"]
    )
    func loopback(address: String) {
        #expect(LinkVerdict.of(ip(address), in: []) == .loopback)
    }

    @Test("A down interface does not make its subnet on-link")
    func downInterface() {
        #expect(LinkVerdict.of(ip("10.0.0.9"), in: table) == .offLink)
    }

    @Test("A /32 point-to-point address only holds itself")
    func hostMask() {
        let single = [
            InterfaceAddress(
                name: "tun0",
                isUp: true,
                isLoopback: false,
                address: ip("172.16.0.1"),
                netmask: ip("255.255.255.255")
            )
        ]
        #expect(LinkVerdict.of(ip("172.16.0.1"), in: single) == .onLink(interface: "tun0"))
        #expect(LinkVerdict.of(ip("172.16.0.2"), in: single) == .offLink)
    }

    static let both = GateConfig(
        udp: UDPConfig(host: "192.168.1.50"),
        mqtt: MQTTConfig(host: "broker.example.de", tls: true)
    )

    @Test("auto, on-link: UDP with 2 s, then MQTT with 5 s")
    func autoOrder() {
        let plan = AdapterPlan.make(config: Self.both, selection: .auto, udpLink: .onLink(interface: "wlan0"))
        #expect(plan.adapters == [.init(kind: .udp, budget: .seconds(2)), .init(kind: .mqtt, budget: .seconds(5))])
        #expect(plan.skipped.isEmpty)
        #expect(plan.forced == nil)
    }

    @Test("auto, off-link: UDP skipped with the reason, MQTT only")
    func autoOffLink() {
        let plan = AdapterPlan.make(config: Self.both, selection: .auto, udpLink: .offLink)
        #expect(plan.adapters.map(\.kind) == [.mqtt])
        #expect(plan.skipped.count == 1)
        #expect(plan.skipped[0].outcome == .skipped)
        #expect(plan.skipped[0].reason == .offLink(host: "192.168.1.50"))
        #expect(plan.skipped[0].reason?.description.contains("not on a directly connected network") == true)
    }

    @Test("auto, a host name: UDP is planned; its attempt resolves and checks it within its own budget")
    func autoHostName() {
        let config = GateConfig(
            udp: UDPConfig(host: "esp32.lan"),
            mqtt: MQTTConfig(host: "broker.example.de", tls: true)
        )
        let plan = AdapterPlan.make(config: config, selection: .auto, udpLink: nil)
        #expect(plan.adapters.map(\.kind) == [.udp, .mqtt])
        #expect(plan.skipped.isEmpty)
    }

    @Test("auto with only [udp]: MQTT is listed as not configured")
    func autoUDPOnly() {
        let config = GateConfig(udp: UDPConfig(host: "127.0.0.1", port: 9000, timeout: 1.5))
        let plan = AdapterPlan.make(config: config, selection: .auto, udpLink: .loopback)
        #expect(plan.adapters == [.init(kind: .udp, budget: .milliseconds(1500))])
        #expect(plan.skipped.map(\.adapter) == [.mqtt])
    }

    @Test("--via udp tries UDP even off-link, and nothing else")
    func forcedUDPOffLink() {
        let plan = AdapterPlan.make(config: Self.both, selection: .udp, udpLink: .offLink)
        #expect(plan.adapters.map(\.kind) == [.udp])
        #expect(plan.forced == .udp)
    }

    @Test("--via udp whose name does not resolve fails as a UDP connection failure (69)")
    func forcedUDPUnresolvable() throws {
        let plan = AdapterPlan.make(config: Self.both, selection: .udp, udpLink: nil)
        #expect(plan.adapters.map(\.kind) == [.udp])
        var machine = plan.machine(resetDelay: .seconds(3))
        _ = machine.handle(.start(at: MonotonicInstant(nanoseconds: 1)))
        let actions = machine.handle(
            .adapter(.udp, .unreachable("cannot resolve esp32.lan"), at: MonotonicInstant(nanoseconds: 2))
        )
        guard case .finished(let result, _)? = actions.last else {
            Issue.record("expected a result, got \(actions)")
            return
        }
        #expect(result.error == .udpConnectionFailed)
    }

    @Test("--via mqtt without [mqtt] is a configuration problem")
    func forcedMQTTUnconfigured() {
        let config = GateConfig(udp: UDPConfig(host: "127.0.0.1"))
        var machine = AdapterPlan.make(config: config, selection: .mqtt, udpLink: nil).machine(resetDelay: .seconds(3))
        let actions = machine.handle(.start(at: MonotonicInstant(nanoseconds: 1)))
        guard case .finished(let result, _)? = actions.last else {
            Issue.record("expected a result, got \(actions)")
            return
        }
        #expect(result.error == .configurationMissing)
    }

    @Test("--via mqtt never touches UDP")
    func forcedMQTT() {
        let plan = AdapterPlan.make(config: Self.both, selection: .mqtt, udpLink: .loopback)
        #expect(plan.adapters.map(\.kind) == [.mqtt])
        #expect(plan.skipped.isEmpty)
    }
}

@Suite("UDP reply decoding")
struct UDPReplyDecoderTests {
    @Test func bothBytesInOneDatagram() {
        #expect(UDPReplyDecoder.events(for: [0x01, 0x00]) == [.relay(.activated), .relay(.released)])
    }

    @Test func oneByteAtATime() {
        #expect(UDPReplyDecoder.events(for: [0x01]) == [.relay(.activated)])
        #expect(UDPReplyDecoder.events(for: [0x00]) == [.relay(.released)])
    }

    @Test func garbageStopsDecoding() {
        let events = UDPReplyDecoder.events(for: [0x01, 0x7f, 0x00])
        #expect(events.count == 2)
        #expect(events[0] == .relay(.activated))
        #expect(events[1] == .invalid(.unexpectedByte(0x7f)))
        #expect(InvalidAnswer.unexpectedByte(0x7f).description == "the ESP32 answered byte 0x7f, expected 0x01 or 0x00")
    }

    @Test func emptyDatagramIsInvalid() {
        guard case .invalid? = UDPReplyDecoder.events(for: []).first else {
            Issue.record("an empty datagram must be an invalid response")
            return
        }
    }

    @Test("Every byte value other than 0 and 1 is invalid")
    func everyOtherByte() {
        for byte in UInt8(2)...UInt8(255) {
            guard case .invalid? = UDPReplyDecoder.events(for: [byte]).first else {
                Issue.record("byte \(byte) was accepted")
                return
            }
        }
    }
}

@Suite("JSON result")
struct OpeningResultJSONTests {
    @Test(
        "The --json object has the keys of docs/CONTRACT.md#commands in order, and every attempt says whether its trigger left"
    )
    func shape() {
        let result = OpeningResult(
            error: .operationTimeout,
            adapter: .udp,
            duration: .milliseconds(2003),
            attempts: [
                AttemptRecord(
                    adapter: .udp,
                    outcome: .noAnswer,
                    reason: .noAnswer(budget: .seconds(2)),
                    duration: .milliseconds(2001),
                    triggerSent: true
                ),
                AttemptRecord(
                    adapter: .mqtt,
                    outcome: .skipped,
                    reason: .adapter("not configured \"x\""),
                    duration: nil
                ),
            ],
            explanation: "udp: no answer"
        )
        #expect(
            result.json.serialized() == """
                {"outcome":"timeout","error":"operationTimeout","adapter":"udp","duration_ms":2003,\
                "attempts":[{"adapter":"udp","outcome":"no_answer","reason":"no answer within 2.0 s","duration_ms":2001,"trigger_sent":true},\
                {"adapter":"mqtt","outcome":"skipped","reason":"not configured \\"x\\"","duration_ms":null,"trigger_sent":false}],\
                "message":"udp: no answer"}
                """
        )
    }

    @Test("Control characters are escaped")
    func escaping() {
        #expect(JSONValue.string("a\u{1}b\nc").serialized() == "\"a\\u0001b\\nc\"")
    }
}

@Suite("IP literals")
struct IPAddressTests {
    @Test("Accepted literals", arguments: ["192.168.1.50", "::1", "[::1]", "fe80::1", "::ffff:10.0.0.1", "0.0.0.0"])
    func accepted(text: String) {
        #expect(IPAddress(literal: text) != nil)
    }

    @Test(
        "Refused literals",
        arguments: ["127.0.0.1\u{0}junk", "[1.2.3.4]", "256.1.1.1", "1.2.3", "::1%eth0", "[::1", "", "[]", "1.2.3.4 "]
    )
    func refused(text: String) {
        #expect(IPAddress(literal: text) == nil)
    }

    @Test("Host names with a NUL or a bracketed IPv4 address are refused")
    func hostNames() {
        #expect(HostName.problem(with: "127.0.0.1\u{0}evil") != nil)
        #expect(HostName.problem(with: "[1.2.3.4]") != nil)
        #expect(HostName.problem(with: "esp32.local") == nil)
    }

    @Test("Round trip through the textual form")
    func description() {
        #expect(IPAddress(literal: "[fd00:0:0::1]")?.description == "fd00::1")
        #expect(IPAddress(literal: "10.0.0.7")?.description == "10.0.0.7")
    }
}
