import Foundation
import GateTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Checked once per test; prints why namespaces cannot be made, so that a skip is never silent.
private func namespacesAvailable() -> Bool {
    if let reason = NetNS.unavailableReason {
        print("doctor esp32: skipped: \(reason)")
        return false
    }
    return true
}

private let skipReason: Comment =
    "network namespaces cannot be made here (they need root, ip netns and veth pairs): the esp32 check is not tested"

/// Two namespaces of the test's own, joined by a veth pair: gate's (10.231.7.1/24 on dg0)
/// and the ESP32's (10.231.7.2/24 on de0), where esp32-sim listens on UDP 8080 with a
/// trigger log and the kernel answers ICMP echo. Nothing is added to the machine's own
/// namespace; `tearDown` deletes both (and so the veths).
private final class DoctorNetwork {
    let namespaces = NamespaceSet()
    let gate: String
    let esp: String
    let simulator: NamespacedSimulator
    /// de0's MAC address, as the neighbour table will show it.
    let espMAC: String

    init(pingSocketsOpen: Bool, ipv6: Bool = false) throws {
        do {
            gate = try namespaces.add("dr-gate")
            esp = try namespaces.add("dr-esp")
            try namespaces.connect(gate, "dg0", "10.231.7.1/24", to: esp, "de0", "10.231.7.2/24")
            if ipv6 {
                // nodad: usable at once, not after duplicate address detection.
                try NetNS.ip(["-n", gate, "addr", "add", "fd00:231::1/64", "dev", "dg0", "nodad"])
                try NetNS.ip(["-n", esp, "addr", "add", "fd00:231::2/64", "dev", "de0", "nodad"])
            }
            // A new namespace starts with ping sockets closed ("1 0"); systemd opens them
            // to every group on a normal boot.
            if pingSocketsOpen {
                try NetNS.ip([
                    "netns", "exec", gate, "sh", "-c", "echo '0 2147483647' > /proc/sys/net/ipv4/ping_group_range",
                ])
            }
            let link = try NetNS.ip(["-n", esp, "-o", "link", "show", "de0"])
            let words = link.split(separator: " ")
            espMAC = try #require(words.firstIndex(of: "link/ether").map { String(words[$0 + 1]) }, "\(link)")
            simulator = try NamespacedSimulator(namespace: esp, udp: "10.231.7.2:8080")
        } catch {
            namespaces.tearDown()
            throw error
        }
    }

    func tearDown() {
        simulator.stop()
        namespaces.tearDown()
    }

    /// `gate doctor` inside gate's namespace, text or `--json`.
    func doctor(host: String, timeout: Double = 1.0, json: Bool = false) throws -> (GateRun, TestConfig) {
        let config = try TestConfig.udp(host: host, port: 8080, extra: "timeout = \(timeout)")
        let arguments = ["doctor", "--config", config.path] + (json ? ["--json"] : [])
        return (try ChaosGate.run(in: gate, arguments, environment: GateRunner.isolatedEnvironment()), config)
    }
}

/// The line of `check` in doctor's text output, and the one after it.
private func lines(of check: String, in run: GateRun) throws -> (String, String) {
    let lines = run.stdout.split(separator: "\n").map(String.init)
    let index = try #require(lines.firstIndex { $0.dropFirst(6).hasPrefix(check + " ") }, "\(run.summary)")
    return (lines[index], index + 1 < lines.count ? lines[index + 1] : "")
}

/// Whether `line` is `expected` exactly, where `<ms>` stands for any number of milliseconds
/// and `<state>` for a neighbour state in which nobody answered.
private func matches(_ line: String, _ expected: String) -> Bool {
    let pattern = NSRegularExpression.escapedPattern(for: expected)
        .replacingOccurrences(of: "<ms>", with: "[0-9]+ ms")
        .replacingOccurrences(of: "<state>", with: "(INCOMPLETE|FAILED)")
    return line.range(of: "^\(pattern)$", options: .regularExpression) != nil
}

/// The lead of a text line: status word and check name in their columns.
private func lead(_ word: String, _ check: String) -> String {
    word.padding(toLength: 6, withPad: " ", startingAt: 0) + check.padding(toLength: 15, withPad: " ", startingAt: 0)
}

private let indent = String(repeating: " ", count: 21)

@Suite("gate doctor: is the ESP32 there? (ICMP echo and neighbour table, in network namespaces)", .serialized)
struct DoctorESP32Tests {
    @Test(
        "An ESP32 that is up: ok, named by its echo reply and MAC; exit 0; nothing reached its UDP port",
        .enabled(skipReason) { namespacesAvailable() }
    )
    func present() throws {
        let network = try DoctorNetwork(pingSocketsOpen: true)
        defer { network.tearDown() }
        let (run, _) = try network.doctor(host: "10.231.7.2")
        #expect(run.status == 0, "\(run.summary)")
        let (line, _) = try lines(of: "esp32", in: run)
        let expected =
            lead("ok", "esp32")
            + "10.231.7.2 (\(network.espMAC)) answered an ICMP echo in <ms> on dg0; nothing was sent to its UDP port"
        #expect(matches(line, expected), "\(line)\nexpected: \(expected)")
        let json = try DoctorOutcome(try network.doctor(host: "10.231.7.2", json: true).0)
        #expect(json["esp32"].status == "ok" && json["esp32"].fix == nil, "\(json.run.summary)")
        #expect(network.simulator.activations().isEmpty, "the doctor triggered the relay")
    }

    @Test(
        "An on-link address nobody holds: FAIL with the questions for a person, exit 69",
        .enabled(skipReason) { namespacesAvailable() }
    )
    func absent() throws {
        let network = try DoctorNetwork(pingSocketsOpen: true)
        defer { network.tearDown() }
        let (run, config) = try network.doctor(host: "10.231.7.9")
        #expect(run.status == 69, "\(run.summary)")
        let (line, fix) = try lines(of: "esp32", in: run)
        let expected =
            lead("FAIL", "esp32")
            + "no answer from 10.231.7.9 on dg0: no reply to ICMP echo requests within 1.0 s; "
            + "nobody answered ARP for it (neighbour table: <state>)"
        #expect(matches(line, expected), "\(line)\nexpected: \(expected)")
        #expect(
            fix == indent + "fix: is the ESP32 powered and on the network? is udp.host right? (it is 10.231.7.9 in "
                + "\(config.path); `ip neigh show dev dg0` lists who answered on that network recently)",
            "\(fix)"
        )
        #expect(run.stdout.hasSuffix("1 of 13 checks failed (5 ok, 7 skipped)\n"), "\(run.stdout)")
        let json = try DoctorOutcome(try network.doctor(host: "10.231.7.9", json: true).0)
        #expect(json.run.status == 69 && json["esp32"].status == "fail", "\(json.run.summary)")
        #expect(json["esp32"].fix?.hasPrefix("is the ESP32 powered and on the network? is udp.host right?") == true)
    }

    @Test(
        "Ping sockets closed (net.ipv4.ping_group_range \"1 0\"): says it could not ask and how to allow it; the neighbour table alone",
        .enabled(skipReason) { namespacesAvailable() }
    )
    func pingSocketsClosed() throws {
        let network = try DoctorNetwork(pingSocketsOpen: false)
        defer { network.tearDown() }
        let closed =
            "gate doctor could not ask it with an ICMP echo: ping sockets are closed to group 0 "
            + "(net.ipv4.ping_group_range is \"1 0\"); to let it ask: "
            + "`sudo sysctl -w net.ipv4.ping_group_range=\"0 2147483647\"` (to keep it, a file in /etc/sysctl.d/)"

        // Nothing here talked to it yet: no entry, so nothing can be told (a skip, not a pass).
        let (unknown, _) = try network.doctor(host: "10.231.7.2")
        #expect(unknown.status == 0, "\(unknown.summary)")
        let (line, _) = try lines(of: "esp32", in: unknown)
        #expect(
            line == lead("skip", "esp32") + "cannot tell whether 10.231.7.2 is there: \(closed); "
                + "the neighbour table has no entry for it (nothing here talked to it recently)",
            "\(line)"
        )

        // An entry that answered ARP earlier (STALE, with its MAC), as traffic of other programs leaves it.
        try NetNS.ip([
            "-n", network.gate, "neigh", "replace", "10.231.7.2", "lladdr", network.espMAC, "dev", "dg0", "nud",
            "stale",
        ])
        let (seen, _) = try network.doctor(host: "10.231.7.2")
        #expect(seen.status == 0, "\(seen.summary)")
        let (seenLine, _) = try lines(of: "esp32", in: seen)
        #expect(
            seenLine == lead("ok", "esp32") + "10.231.7.2 answered ARP recently: the neighbour table of dg0 holds it "
                + "(STALE, \(network.espMAC)); \(closed); nothing was sent to its UDP port",
            "\(seenLine)"
        )
        #expect(network.simulator.activations().isEmpty, "the doctor triggered the relay")
    }

    @Test("An IPv6 ESP32: ICMPv6 echo through a ping socket, ok", .enabled(skipReason) { namespacesAvailable() })
    func presentIPv6() throws {
        let network = try DoctorNetwork(pingSocketsOpen: true, ipv6: true)
        defer { network.tearDown() }
        let (run, _) = try network.doctor(host: "fd00:231::2")
        #expect(run.status == 0, "\(run.summary)")
        let (line, _) = try lines(of: "esp32", in: run)
        let expected =
            lead("ok", "esp32")
            + "fd00:231::2 (\(network.espMAC)) answered an ICMP echo in <ms> on dg0; nothing was sent to its UDP port"
        #expect(matches(line, expected), "\(line)\nexpected: \(expected)")
    }

    @Test(
        "A name service that does not answer: udp FAIL after udp.timeout, not after the resolver's seconds; esp32 skipped"
    )
    func slowResolver() throws {
        let shim = try SlowResolverShim(host: "esp32.slow.test", delayMs: 60_000, answer: "127.0.0.1")
        let config = try TestConfig.udp(host: "esp32.slow.test", port: 8080, extra: "timeout = 0.5")
        let run = try GateRunner.run(
            ["doctor", "--config", config.path],
            environment: GateRunner.isolatedEnvironment(["LD_PRELOAD": shim.library]),
            timeout: .seconds(30)
        )
        #expect(shim.delayedLookups >= 1, "the slow resolver was not asked")
        #expect(run.status == 69, "\(run.summary)")
        let (udp, _) = try lines(of: "udp", in: run)
        #expect(
            udp == lead("FAIL", "udp") + "no answer from the name service for esp32.slow.test within 500 ms "
                + "(udp.timeout): openings wait that long, then fail",
            "\(udp)"
        )
        let (esp32, _) = try lines(of: "esp32", in: run)
        #expect(
            esp32 == lead("skip", "esp32")
                + "not checked: udp.host is not an address on a directly connected network",
            "\(esp32)"
        )
    }
}
