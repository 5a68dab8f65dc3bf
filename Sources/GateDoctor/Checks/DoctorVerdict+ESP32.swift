import GateCore

/// The verdict on the ESP32 itself: is something at `udp.host` on its network?
extension DoctorVerdict {
    public static func esp32(_ facts: ESP32Facts, host: String, file: String) -> DoctorFinding {
        let who = shown(host, facts.address)
        let entry = try? facts.neighbour.get()
        let quiet = "nothing was sent to its UDP port"
        if case .replied(let took) = facts.echo {
            // The link address too, when the table has it: `192.168.1.50 (24:0a:c4:01:02:03)`.
            let mac = entry.flatMap { $0.answered ? $0.linkAddressText : nil }
            let named = host == "\(facts.address)" ? [] : ["\(facts.address)"]
            let parts = named + (mac.map { [$0] } ?? [])
            let identity = parts.isEmpty ? host : "\(host) (\(parts.joined(separator: ", ")))"
            return .ok(
                .esp32,
                "\(identity) answered an ICMP echo in \(took.humanReadable) on \(facts.interface); \(quiet)"
            )
        }
        let asked = facts.address.family == .v4 ? "ARP" : "neighbour discovery"
        if let entry, entry.answered, entry.state.contains(.reachable) || !echoWasSent(facts.echo) {
            return .ok(
                .esp32,
                "\(who) answered \(asked) recently: the neighbour table of \(facts.interface) holds it "
                    + "(\(entry.stateName), \(entry.linkAddressText ?? "")); \(echoNote(facts.echo)); \(quiet)"
            )
        }
        if echoWasSent(facts.echo) || entry?.unanswered == true {
            return .unavailable(
                .esp32,
                "no answer from \(who) on \(facts.interface): \(absence(facts, asked: asked))",
                fix: "is the ESP32 powered and on the network? is udp.host right? (it is \(host) in \(file); "
                    + "`ip neigh show dev \(facts.interface)` lists who answered on that network recently)"
            )
        }
        return .skip(
            .esp32,
            "cannot tell whether \(who) is there: \(echoNote(facts.echo)); \(neighbourNote(facts, asked: asked))"
        )
    }

    /// Whether echo requests left (a reply could have come).
    private static func echoWasSent(_ echo: ESP32Facts.Echo) -> Bool {
        switch echo {
        case .replied, .noReply, .unreachable: true
        case .notPermitted, .failed: false
        }
    }

    /// Why nothing is there, from the echo and the neighbour table together.
    private static func absence(_ facts: ESP32Facts, asked: String) -> String {
        let echo =
            switch facts.echo {
            case .noReply(let waited): "no reply to ICMP echo requests within \(waited.humanReadable)"
            case .unreachable(let words): "the kernel reports it unreachable (\(words))"
            case .replied, .notPermitted, .failed: echoNote(facts.echo)
            }
        return "\(echo); \(neighbourNote(facts, asked: asked))"
    }

    private static func neighbourNote(_ facts: ESP32Facts, asked: String) -> String {
        switch facts.neighbour {
        case .success(let entry?) where entry.unanswered:
            return "nobody answered \(asked) for it (neighbour table: \(entry.stateName))"
        case .success(let entry?) where entry.answered:
            return "the neighbour table still holds the link address of an earlier answer "
                + "(\(entry.stateName), \(entry.linkAddressText ?? "")), not confirmed now"
        case .success:
            return "the neighbour table has no entry for it (nothing here talked to it recently)"
        case .failure(let error):
            return "the neighbour table could not be read (\(error))"
        }
    }

    /// What became of the echo, when it did not answer the question.
    private static func echoNote(_ echo: ESP32Facts.Echo) -> String {
        switch echo {
        case .replied(let took):
            return "it answered an ICMP echo in \(took.humanReadable)"
        case .noReply(let waited):
            return "it did not answer ICMP echo requests within \(waited.humanReadable)"
        case .unreachable(let words):
            return "the ICMP echo failed (\(words))"
        case .notPermitted(let range, let gid):
            let setting =
                range.map { "net.ipv4.ping_group_range is \"\($0)\"" } ?? "net.ipv4.ping_group_range is unreadable"
            // The sysctl opens ping sockets to every group, as systemd does.
            return "gate doctor could not ask it with an ICMP echo: ping sockets are closed to group \(gid) "
                + "(\(setting)); to let it ask: `sudo sysctl -w net.ipv4.ping_group_range=\"0 2147483647\"` "
                + "(to keep it, a file in /etc/sysctl.d/)"
        case .failed(let words):
            return "gate doctor could not send an ICMP echo (\(words))"
        }
    }
}
