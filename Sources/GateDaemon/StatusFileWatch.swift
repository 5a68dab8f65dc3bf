import GateSystem
import Plumbing

/// A service's watch on `status.json` (inotify on the runtime folder): each change
/// becomes `input` in the service's own stream. Stop it when the service ends.
struct StatusFileWatch {
    private let watch: FileChangeWatch
    private let forward: Task<Void, Never>

    init<Input: Sendable>(
        paths: RuntimePaths,
        into continuation: AsyncStream<Input>.Continuation,
        as input: Input
    ) throws(SystemError) {
        let watch = try FileChangeWatch(directory: paths.runtimeDirectory, names: ["status.json"])
        self.watch = watch
        forward = Task {
            for await _ in watch.changes { continuation.yield(input) }
        }
    }

    func stop() {
        forward.cancel()
        watch.stop()
    }
}
