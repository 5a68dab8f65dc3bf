import GateCore
import GateSystem

#if canImport(Glibc)
import Glibc
import Plumbing
#endif

/// Where prompts go: the terminal the password is read from (standard input's), so
/// that they show even when stderr is redirected; stderr if it cannot be opened.
final class PromptOutput {
    let fd: Int32
    private let owned: Bool

    init() {
        var tty: Int32 = -1
        if let name = ttyname(STDIN_FILENO) {
            tty = open(name, O_WRONLY | O_CLOEXEC | O_NOCTTY)
        }
        fd = tty >= 0 ? tty : STDERR_FILENO
        owned = tty >= 0
    }

    func write(_ text: String) {
        Terminal.write(text, to: fd)
    }

    deinit {
        if owned { close(fd) }
    }
}
