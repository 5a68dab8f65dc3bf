import GateTestSupport
import Testing

@testable import gate

/// The fast reading of `gate open` (OpenRequest+FastPath) must mean exactly what
/// ArgumentParser's reading means, for every form it accepts, and must leave
/// everything else to ArgumentParser.
@Suite struct FastPathTests {
    static let accepted: [[String]] = [
        ["open"],
        ["open", "--json"],
        ["open", "--via", "mqtt"],
        ["open", "--via=udp"],
        ["open", "--via", "auto", "--json", "--force"],
        ["open", "--source", "widget"],
        ["open", "--source=button_2"],
        ["open", "--config", "/etc/gate/gate.toml"],
        ["open", "--config=/tmp/x.toml", "--json"],
        ["--config", "/tmp/a.toml", "open"],
        ["--config", "/tmp/a.toml", "open", "--via", "udp"],
        ["open", "-v"],
        ["open", "-vv"],
        ["open", "-vvv", "--json"],
        ["open", "--verbose"],
        ["open", "-v", "-v"],
        ["open", "--log-level", "debug"],
        ["open", "--log-level=TRACE"],
        ["--log-level", "info", "open"],
        ["-v", "open"],
        ["-v", "open", "-v"],
        ["open", "--force", "--source", "cli", "--via", "mqtt", "--json", "--config", "g.toml", "-v"],
        ["open", "--direct"],
        ["open", "--direct", "--via", "mqtt", "--json"],
    ]

    static let leftToArgumentParser: [[String]] = [
        [],
        ["status"],
        ["open", "--help"],
        ["open", "-h"],
        ["--help"],
        ["--version"],
        ["open", "--via", "carrier-pigeon"],
        ["open", "--via"],
        ["open", "--via="],
        ["open", "--via", "udp", "--via", "mqtt"],
        ["open", "--json", "--json"],
        ["open", "--json=yes"],
        ["open", "--source", "bad name"],
        ["open", "--source", ""],
        ["open", "--source", String(repeating: "a", count: 33)],
        ["open", "--bogus"],
        ["open", "-x"],
        ["open", "-vx"],
        ["open", "extra"],
        ["open", "open"],
        ["--json", "open"],
        ["--force", "open"],
        ["open", "--direct", "--direct"],
        ["open", "--direct=yes"],
        ["--direct", "open"],
        ["open", "--config"],
        ["open", "--config", "--json"],
        ["--config", "a.toml", "open", "--config", "b.toml"],
        ["open", "--log-level", "loud"],
        ["open", "--", "--json"],
        ["open", "--generate-completion-script", "bash"],
    ]

    @Test(arguments: accepted)
    func bothReadersAgree(_ arguments: [String]) throws {
        let fast = try #require(OpenRequest(fastArguments: arguments), "the fast path should accept \(arguments)")
        let parsed = try GateCommand.parseAsRoot(arguments)
        let command = try #require(parsed as? OpenCommand, "ArgumentParser read \(arguments) as \(type(of: parsed))")
        #expect(fast == command.request)
    }

    @Test(arguments: leftToArgumentParser)
    func everythingElseGoesToArgumentParser(_ arguments: [String]) {
        #expect(OpenRequest(fastArguments: arguments) == nil)
    }
}
