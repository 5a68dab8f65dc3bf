import GateCore
import Testing

@testable import GateSystem

@Suite("gate config init: which place of the search it writes")
struct StarterFileTests {
    private let user = "/home/alice/.config/gate/gate.toml"
    private let system = "/etc/gate/gate.toml"

    private func target(
        _ explicit: String? = nil,
        environment: [String: String] = ["HOME": "/home/alice"],
        root: Bool = false,
        writable: Set<String>
    ) -> Result<String, StarterFile.Failure> {
        StarterFile.target(
            ConfigLocator(explicitPath: explicit, environment: environment),
            isRoot: root,
            writable: { writable.contains($0) }
        ).map(\.path)
    }

    @Test("--config, then $GATE_CONFIG, are used as given")
    func explicit() {
        #expect(
            target("/tmp/x.toml", environment: ["GATE_CONFIG": "/tmp/y.toml"], writable: []) == .success("/tmp/x.toml")
        )
        #expect(
            target(environment: ["GATE_CONFIG": "/tmp/y.toml", "HOME": "/home/alice"], writable: [user])
                == .success("/tmp/y.toml")
        )
    }

    @Test("An account: its own file ($XDG_CONFIG_HOME first), else the system file when it may write there")
    func account() {
        #expect(target(writable: [user, system]) == .success(user))
        #expect(
            target(environment: ["XDG_CONFIG_HOME": "/x", "HOME": "/home/alice"], writable: ["/x/gate/gate.toml"])
                == .success("/x/gate/gate.toml")
        )
        #expect(target(writable: [system]) == .success(system))
        #expect(target(writable: []) == .failure(.nowhere(searched: [user, system])))
    }

    @Test("root: the system file, which the service reads, even with a writable home")
    func root() {
        #expect(target(root: true, writable: [user, system]) == .success(system))
        #expect(target(root: true, writable: []) == .failure(.nowhere(searched: [system])))
    }
}
