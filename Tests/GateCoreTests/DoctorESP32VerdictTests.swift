import GateCore
import GateDoctor
import Testing

private let file = "/home/alice/.config/gate/gate.toml"
private let esp = IPAddress(literal: "192.168.1.50")!
private let mac: [UInt8] = [0x24, 0x0a, 0xc4, 0x01, 0x02, 0x03]

private func facts(_ echo: ESP32Facts.Echo, _ state: NeighbourEntry.State?, mac: [UInt8]? = mac) -> ESP32Facts {
    let entry = state.map { NeighbourEntry(address: esp, interfaceIndex: 2, state: $0, linkAddress: mac) }
    return ESP32Facts(address: esp, interface: "wlan0", echo: echo, neighbour: .success(entry))
}

private func verdict(_ facts: ESP32Facts, host: String = "192.168.1.50") -> DoctorFinding {
    DoctorVerdict.esp32(facts, host: host, file: file)
}

@Suite("gate doctor: the esp32 check's verdicts, and the neighbour table's netlink reading")
struct DoctorESP32VerdictTests {
    @Test("An echo reply passes, whatever the neighbour table says; a name is shown with its address")
    func replied() {
        let finding = verdict(facts(.replied(.milliseconds(12)), .reachable), host: "esp32.lan")
        #expect(finding.status == .ok)
        #expect(
            finding.detail
                == "esp32.lan (192.168.1.50, 24:0a:c4:01:02:03) answered an ICMP echo in 12 ms on wlan0; nothing was sent to its UDP port"
        )
    }

    @Test("No echo reply and nobody answered ARP: FAIL, unavailable, with the questions for a person")
    func absent() {
        for state in [NeighbourEntry.State.incomplete, .failed] {
            let finding = verdict(facts(.noReply(waited: .seconds(2)), state, mac: nil))
            #expect(finding.status != .ok && finding.failed)
            #expect(
                finding.detail
                    == "no answer from 192.168.1.50 on wlan0: no reply to ICMP echo requests within 2.0 s; "
                    + "nobody answered ARP for it (neighbour table: \(state == .failed ? "FAILED" : "INCOMPLETE"))"
            )
            #expect(
                finding.fix
                    == "is the ESP32 powered and on the network? is udp.host right? (it is 192.168.1.50 in \(file); "
                    + "`ip neigh show dev wlan0` lists who answered on that network recently)"
            )
            #expect(DoctorReport(findings: [finding]).exitStatus == 69)
        }
        // No entry at all after the echo, or the kernel's unreachable: absent as well.
        #expect(verdict(facts(.noReply(waited: .seconds(2)), nil)).failed)
        #expect(verdict(facts(.unreachable("send: No route to host"), nil)).failed)
    }

    @Test("No echo reply: REACHABLE (answered ARP just now) passes, STALE (an earlier answer) does not")
    func noReplyButNeighbour() {
        let reachable = verdict(facts(.noReply(waited: .seconds(2)), .reachable))
        #expect(reachable.status == .ok)
        #expect(
            reachable.detail.hasPrefix(
                "192.168.1.50 answered ARP recently: the neighbour table of wlan0 holds it (REACHABLE, 24:0a:c4:01:02:03); it did not answer ICMP echo requests within 2.0 s"
            )
        )
        let stale = verdict(facts(.noReply(waited: .seconds(2)), .stale))
        #expect(stale.failed)
        #expect(
            stale.detail.contains(
                "the neighbour table still holds the link address of an earlier answer (STALE, 24:0a:c4:01:02:03), not confirmed now"
            )
        )
    }

    @Test("Ping sockets closed: the neighbour table alone; no entry is a skip that says how to allow the echo")
    func notPermitted() {
        let closed = ESP32Facts.Echo.notPermitted(range: "1 0", gid: 1000)
        let words =
            "gate doctor could not ask it with an ICMP echo: ping sockets are closed to group 1000 "
            + "(net.ipv4.ping_group_range is \"1 0\"); to let it ask: "
            + "`sudo sysctl -w net.ipv4.ping_group_range=\"0 2147483647\"` (to keep it, a file in /etc/sysctl.d/)"
        let unknown = verdict(facts(closed, nil))
        #expect(unknown.status == .skip)
        #expect(
            unknown.detail
                == "cannot tell whether 192.168.1.50 is there: \(words); the neighbour table has no entry for it (nothing here talked to it recently)"
        )
        #expect(verdict(facts(closed, .stale)).status == .ok, "an entry with a MAC answered ARP")
        #expect(verdict(facts(closed, .failed, mac: nil)).failed, "nobody answered ARP")
        let unreadable = ESP32Facts(
            address: esp,
            interface: "wlan0",
            echo: closed,
            neighbour: .failure(NeighbourTableError("recv: EPERM"))
        )
        #expect(verdict(unreadable).status == .skip)
        #expect(verdict(unreadable).detail.hasSuffix("the neighbour table could not be read (recv: EPERM)"))
    }

    @Test("Neighbour states: a MAC with REACHABLE, STALE, DELAY or PROBE answered; INCOMPLETE and FAILED did not")
    func neighbourStates() {
        for state in [NeighbourEntry.State.reachable, .stale, .delay, .probe] {
            let entry = NeighbourEntry(address: esp, interfaceIndex: 2, state: state, linkAddress: mac)
            #expect(entry.answered && !entry.unanswered, "\(entry.stateName)")
            let noMAC = NeighbourEntry(address: esp, interfaceIndex: 2, state: state, linkAddress: nil)
            #expect(!noMAC.answered)
        }
        for state in [NeighbourEntry.State.incomplete, .failed] {
            let entry = NeighbourEntry(address: esp, interfaceIndex: 2, state: state, linkAddress: nil)
            #expect(!entry.answered && entry.unanswered, "\(entry.stateName)")
        }
    }

    @Test("Netlink: the dump request's bytes, and RTM_NEWNEIGH messages read back with state, MAC and DONE")
    func netlink() {
        let request = NeighbourDump.request(family: 2, sequence: 7)
        #expect(request.count == 28)
        #expect(request[4] == 30 && request[6] == 0x01 && request[7] == 0x03, "RTM_GETNEIGH, NLM_F_REQUEST|NLM_F_DUMP")
        #expect(request[16] == 2)

        // One RTM_NEWNEIGH for 192.168.1.50 (REACHABLE, with its MAC), then NLMSG_DONE.
        var message: [UInt8] = []
        let attributes: [UInt8] = [8, 0, 1, 0] + esp.bytes + [10, 0, 2, 0] + mac + [0, 0]
        message += host32(UInt32(16 + 12 + attributes.count)) + host16(28) + host16(2) + host32(7) + host32(0)
        message += [2, 0, 0, 0] + host32(3) + host16(0x02) + [0, 1]
        message += attributes
        message += host32(20) + host16(3) + host16(2) + host32(7) + host32(0) + host32(0)
        let batch = NeighbourDump.read(message)
        #expect(batch.done && batch.error == nil)
        #expect(batch.entries == [NeighbourEntry(address: esp, interfaceIndex: 3, state: .reachable, linkAddress: mac)])
        #expect(batch.entries.first?.linkAddressText == "24:0a:c4:01:02:03")

        // NLMSG_ERROR with -EPERM (-1), and a truncated message that is left alone.
        let error = host32(20) + host16(2) + host16(0) + host32(7) + host32(0) + host32(UInt32(bitPattern: -1))
        #expect(NeighbourDump.read(error).error == 1)
        #expect(NeighbourDump.read(Array(message.prefix(30))).entries.isEmpty)
    }

    // Netlink is in the host's byte order.
    private func host16(_ value: UInt16) -> [UInt8] { withUnsafeBytes(of: value) { Array($0) } }
    private func host32(_ value: UInt32) -> [UInt8] { withUnsafeBytes(of: value) { Array($0) } }
}
