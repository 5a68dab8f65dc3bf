#if canImport(Glibc)
import Glibc
import Plumbing
#endif

/// One line from the terminal on standard input, echo off, and the terminal restored
/// on every way out: return, error, and the signals that end a process from the
/// keyboard or from outside (SIGINT, SIGQUIT, SIGTERM, SIGHUP). SIGTSTP is ignored
/// while the prompt runs, so that the shell never takes over a terminal without echo.
enum TerminalLine {
    private static let endingSignals: [Int32] = [SIGINT, SIGQUIT, SIGTERM, SIGHUP]

    static func read(into buffer: WipedBuffer, prompt: String, output: PromptOutput) -> PasswordInput.Problem? {
        var original = termios()
        guard tcgetattr(STDIN_FILENO, &original) == 0 else {
            return PasswordInput.Problem(
                message: "cannot read the terminal's settings: \(SystemError.text(for: errno))"
            )
        }
        savedTerminal.pointee = original

        var previous: [sigaction] = []
        for signal in endingSignals {
            var action = sigaction()
            action.__sigaction_handler.sa_handler = restoreTerminalAndReraise
            sigemptyset(&action.sa_mask)
            var old = sigaction()
            sigaction(signal, &action, &old)
            previous.append(old)
        }
        var ignore = sigaction()
        ignore.__sigaction_handler.sa_handler = SIG_IGN
        sigemptyset(&ignore.sa_mask)
        var oldStop = sigaction()
        sigaction(SIGTSTP, &ignore, &oldStop)

        defer {
            _ = tcsetattr(STDIN_FILENO, TCSANOW, &original)
            for (signal, old) in zip(endingSignals, previous) {
                var old = old
                sigaction(signal, &old, nil)
            }
            sigaction(SIGTSTP, &oldStop, nil)
            // The Enter that ended the line was not echoed.
            output.write("\n")
        }

        var quiet = original
        // No echo, but line editing (backspace, ^U) still works.
        quiet.c_lflag &= ~tcflag_t(ECHO | ECHOE | ECHOK | ECHONL)
        guard tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet) == 0 else {
            return PasswordInput.Problem(
                message: "cannot turn the terminal's echo off: \(SystemError.text(for: errno))"
            )
        }
        output.write(prompt)

        while true {
            if buffer.count > 0, buffer.base[buffer.count - 1] == 0x0a { return nil }
            guard buffer.count < buffer.capacity else {
                return PasswordInput.Problem(
                    message:
                        "the entry is longer than \(PasswordInput.maximumLength) bytes, the most an MQTT password can hold"
                )
            }
            let got = retryingOnInterrupt {
                Glibc.read(STDIN_FILENO, buffer.base + buffer.count, buffer.capacity - buffer.count)
            }
            if got < 0 {
                return PasswordInput.Problem(message: "cannot read the terminal: \(SystemError.text(for: errno))")
            }
            if got == 0 { return nil }  // ^D: the line ends here
            buffer.count += got
        }
    }
}

/// The terminal settings to put back from a signal handler; only touched while a
/// prompt runs (set before the handlers are installed, read by them).
///
/// Heap memory of `MemoryLayout<termios>.size`, not a global `termios`: Swift 6.3
/// emits a global of this imported type with 57 bytes (no padding before
/// `c_ispeed`) while every copy into it writes 60, so the last 3 bytes landed on
/// whatever follows it in .bss (AddressSanitizer: global-buffer-overflow).
private nonisolated(unsafe) let savedTerminal: UnsafeMutablePointer<termios> = {
    let pointer = UnsafeMutablePointer<termios>.allocate(capacity: 1)
    pointer.initialize(to: termios())
    return pointer
}()

/// Puts the terminal's echo back, then lets the signal do what it would have done.
/// Only async-signal-safe calls.
private func restoreTerminalAndReraise(_ signal: Int32) {
    _ = tcsetattr(STDIN_FILENO, TCSANOW, savedTerminal)
    var newline: UInt8 = 0x0a
    _ = Glibc.write(STDERR_FILENO, &newline, 1)
    _ = Glibc.signal(signal, SIG_DFL)
    _ = raise(signal)
}
