import Glibc

/// Turns SIGINT/SIGTERM into an ordinary return from `wait()` on the main thread, with no
/// signal handler and no global state: the signals are blocked and collected by sigwait(2).
///
/// It must be created before any other thread exists, because threads inherit the signal
/// mask from their creator; a thread created earlier would take the signal with its default
/// action and kill the process without the clean "stopping" exit.
struct SignalWaiter {
    private var set = sigset_t()

    init(_ signals: [Int32]) {
        sigemptyset(&set)
        for number in signals {
            // A signal ignored by whoever started us (`esp32-sim &` in a script ignores SIGINT)
            // would be discarded before sigwait could see it.
            signal(number, SIG_DFL)
            sigaddset(&set, number)
        }
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }

    /// Blocks until one of the signals arrives and returns its number.
    func wait() -> Int32 {
        var set = self.set
        var number: Int32 = 0
        while sigwait(&set, &number) != 0 {}
        return number
    }

    /// Like `wait()`, but gives up after `timeout` and returns nil; for waiting on something
    /// else in slices without losing a signal meanwhile.
    func wait(timeout: Duration) -> Int32? {
        var set = self.set
        let (seconds, attoseconds) = timeout.components
        var limit = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
        while true {
            let number = sigtimedwait(&set, nil, &limit)
            if number > 0 { return number }
            // EINTR restarts with the full slice, which only lengthens one slice a little.
            if errno != EINTR { return nil }
        }
    }
}

func signalName(_ number: Int32) -> String {
    switch number {
    case SIGINT: "SIGINT"
    case SIGTERM: "SIGTERM"
    case SIGUSR1: "SIGUSR1"
    default: "signal \(number)"
    }
}
