import Foundation
import GateTestSupport
import Testing

/// The helpers that start child processes must not keep this test process's descriptors
/// open on the children's files once the children are done: Foundation's `Process` keeps
/// them otherwise, a full run then held 1,781 at once, and past about 1,350 `Process.run()`
/// crashes (see `closeFileStreams(of:)`). Each test names the folder only its helper uses,
/// so tests running alongside do not disturb the count.
@Suite("Test helpers close the files of their children")
struct HelperDescriptorTests {
    @Test("A finished gate run holds nothing open on its output files")
    func gateRun() throws {
        let gate = try GateRunner.start(["--version"])
        let directory = gate.directory
        #expect(openDescriptors(under: directory).isEmpty, "open while gate runs")
        let run = try gate.finish(timeout: .seconds(30))
        #expect(run.status == 0, "\(run.summary)")
        #expect(openDescriptors(under: directory).isEmpty)
    }

    @Test("A simulator holds nothing open on its files, running or gone")
    func simulator() throws {
        var directory: URL?
        var pipe: String?
        do {
            let sim = try Simulator()
            directory = sim.directory
            pipe = sim.stdoutPipeName
            #expect(openDescriptors(under: sim.directory).isEmpty, "open while esp32-sim runs")
            #expect(try sim.stop() == .exited(0))
        }
        let folder = try #require(directory)
        #expect(openDescriptors(under: folder).isEmpty)
        let pipeName = try #require(pipe)
        #expect(pipeName.hasPrefix("pipe:["), "\(pipeName)")
        #expect(openDescriptors(named: pipeName).isEmpty, "our end of the simulator's stdout pipe is still open")
    }

    @Test("A broker holds nothing open on its log")
    func broker() throws {
        var directory: URL?
        do {
            let broker = try MosquittoBroker(.plain)
            directory = broker.directory
            #expect(openDescriptors(under: broker.directory).isEmpty, "open while mosquitto runs")
        }
        let folder = try #require(directory)
        #expect(openDescriptors(under: folder).isEmpty)
    }

    @Test("A daemon holds nothing open on its output files, running or stopped")
    func daemon() throws {
        let sim = try Simulator()
        let config = try TestConfig.udp(host: "127.0.0.1", port: sim.udpPort)
        let daemon = try DaemonProcess(
            config: config.path,
            environment: GateRunner.isolatedEnvironment(),
            buttonFIFO: false
        )
        try daemon.waitForReady()
        #expect(openDescriptors(under: daemon.directory).isEmpty, "open while the daemon runs")
        #expect(daemon.stop() != nil)
        #expect(openDescriptors(under: daemon.directory).isEmpty)
    }
}
