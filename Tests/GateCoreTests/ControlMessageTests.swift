import GateControl
import GateCore
import Testing

private func line(_ value: JSONValue) -> [UInt8] { Array(value.serialized().utf8) }

@Suite("The control socket's messages (docs/CONTRACT.md#the-control-socket)")
struct ControlMessageTests {
    @Test("An open request reads back as written, its send time included; who too")
    func requestRoundTrip() {
        let opening = ControlOpening(
            source: "widget",
            selection: .mqtt,
            force: true,
            configPath: "/etc/gate/gate.toml",
            sent: MonotonicInstant(nanoseconds: 123_456_789_012)
        )
        #expect(ControlRequest.parse(line(ControlRequest.open(opening).json)) == .success(.open(opening)))
        #expect(ControlRequest.parse(line(ControlRequest.who.json)) == .success(.who))
        #expect(
            ControlRequest.parse(Array(#"{"request":"open","source":"cli","via":"auto","config":"/g.toml"}"#.utf8))
                == .failure(.field("sent_monotonic_ns")),
            "a request without its send time is not read"
        )
    }

    @Test("A request may begin up to 2 s after it was sent, never later, and never with a time ahead of the clock")
    func requestsExpire() {
        let sent = MonotonicInstant(nanoseconds: 50_000_000_000)
        let opening = ControlOpening(source: "cli", selection: .auto, force: false, configPath: "/g", sent: sent)
        #expect(opening.expiry(at: sent) == nil)
        #expect(opening.expiry(at: sent + .seconds(2)) == nil)
        #expect(opening.expiry(at: sent + .milliseconds(2001))?.contains("expired") == true)
        #expect(opening.expiry(at: sent + .seconds(60))?.contains("nothing was started") == true)
        #expect(opening.expiry(at: sent + .nanoseconds(-1))?.contains("ahead") == true)
    }

    @Test("The daemon's own sources are reserved: button, homeassistant, elsewhere")
    func reservedSources() {
        #expect(OpeningSource.daemonOwn == ["button", "homeassistant", "elsewhere"])
        #expect(OpeningSource.daemonOwn.allSatisfy(OpeningSource.isValid))
    }

    @Test("Refused requests say why: not JSON, too long, a bad field, an unknown request")
    func refusedRequests() {
        #expect(ControlRequest.parse(Array("open the gate".utf8)) == .failure(.notJSON))
        #expect(ControlRequest.parse(Array("[1,2]".utf8)) == .failure(.notJSON))
        #expect(
            ControlRequest.parse(Array(repeating: 0x20, count: ControlRequest.maximumLength + 1))
                == .failure(.tooLong(limit: ControlRequest.maximumLength))
        )
        #expect(
            ControlRequest.parse(
                Array(
                    #"{"request":"open","source":"bad name","via":"auto","config":"/g.toml","sent_monotonic_ns":1}"#
                        .utf8
                )
            )
                == .failure(.field("source"))
        )
        #expect(
            ControlRequest.parse(
                Array(
                    #"{"request":"open","source":"cli","via":"pigeon","config":"/g.toml","sent_monotonic_ns":1}"#.utf8
                )
            )
                == .failure(.field("via"))
        )
        #expect(
            ControlRequest.parse(Array(#"{"request":"open","source":"cli","via":"udp"}"#.utf8))
                == .failure(.field("config"))
        )
        #expect(
            ControlRequest.parse(
                Array(
                    #"{"request":"open","source":"cli","via":"udp","config":"/g","force":"yes","sent_monotonic_ns":1}"#
                        .utf8
                )
            ) == .failure(.field("force"))
        )
        #expect(ControlRequest.parse(Array(#"{"request":"reboot"}"#.utf8)) == .failure(.unknownRequest("reboot")))
    }

    @Test("A result sent by the daemon renders on the client exactly as on the daemon: --json and the message")
    func resultRendersTheSame() throws {
        let results = [
            OpeningResult(
                error: nil,
                adapter: .udp,
                duration: .milliseconds(412),
                attempts: [
                    AttemptRecord(
                        adapter: .udp,
                        outcome: .success,
                        reason: nil,
                        duration: .milliseconds(412),
                        triggerSent: true
                    )
                ]
            ),
            OpeningResult(
                error: .operationTimeout,
                adapter: .mqtt,
                duration: .milliseconds(7000),
                attempts: [
                    AttemptRecord(adapter: .udp, outcome: .skipped, reason: .offLink(host: "10.0.0.9"), duration: nil),
                    AttemptRecord(
                        adapter: .mqtt,
                        outcome: .timeout,
                        reason: .noRelease(budget: .seconds(5)),
                        duration: .milliseconds(5000),
                        triggerSent: true
                    ),
                ]
            ),
            OpeningResult(
                error: .allAdaptersFailed,
                adapter: nil,
                duration: .milliseconds(3),
                attempts: [
                    AttemptRecord(adapter: .udp, outcome: .skipped, reason: .withheld(.relayActive), duration: nil)
                ]
            ),
            OpeningResult(
                error: .operationInProgress,
                adapter: nil,
                duration: .zero,
                attempts: [],
                explanation: "another opening is in progress: pid 12 (cli)"
            ),
        ]
        for result in results {
            let sent = ControlReply.result(result)
            guard case .result(let received)? = ControlReply.parse(line(sent.json)) else {
                Issue.record("the result did not read back: \(sent.json.serialized())")
                continue
            }
            #expect(received.json == result.json, "\(received.json.serialized())\n\(result.json.serialized())")
            #expect(received.message == result.message)
            #expect(received.exitCode == result.exitCode)
            #expect(received.attempts.map { $0.reason?.description } == result.attempts.map { $0.reason?.description })
        }
    }

    @Test("Hello, states, declined, accepted, who and error replies read back; anything else is nil")
    func replies() {
        let daemon = ControlDaemon(pid: 42, uid: 999, configPath: "/etc/gate/gate.toml", runtimeDirectory: "/run/gate")
        for reply in [
            ControlReply.state(.triggering, .udp), .state(.error, nil), .declined("another configuration"), .accepted,
            .who(daemon), .error("the request is not one JSON object on one line"), .hello(daemon),
            .who(
                ControlDaemon(
                    pid: 42,
                    uid: 999,
                    configPath: "/etc/gate/gate.toml",
                    runtimeDirectory: "/run/gate",
                    parts: [
                        PartReport(part: "button", failures: 2, lastFailure: "EIO", restartIn: .seconds(2)),
                        PartReport(part: "notify", failures: 1, lastFailure: "gone", restartIn: nil),
                    ]
                )
            ),
        ] {
            #expect(ControlReply.parse(line(reply.json)) == reply)
        }
        #expect(
            ControlReply.parse(
                Array(
                    #"{"reply":"hello","program":"journald","pid":1,"uid":0,"config":"/g","runtime":"/run/gate"}"#.utf8
                )
            ) == nil,
            "a hello from another program is not gate's"
        )
        #expect(ControlReply.parse(Array(#"{"reply":"state","state":"flying","adapter":null}"#.utf8)) == nil)
        #expect(
            ControlReply.parse(
                Array(#"{"reply":"result","result":{"outcome":"success","error":"operationTimeout"}}"#.utf8)
            ) == nil
        )
        #expect(ControlReply.parse(Array("garbage".utf8)) == nil)
    }
}
