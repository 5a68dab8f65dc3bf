import ArgumentParser
import GateCore
import GateSystem

#if canImport(Glibc)
import Glibc
import Plumbing
#endif

struct SecretSetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set",
        abstract: "Store the MQTT password in the Secret Service.",
        discussion: """
            On a terminal the password is asked for twice, without echo. Otherwise it is \
            read from standard input, up to its end, one trailing newline removed: \
            `printf '%s' \"$PW\" | gate secret set mqtt-password`, or \
            `gate secret set mqtt-password < file`. It is never taken as an argument, \
            where any user could read it in the process list. An empty password, one of \
            several lines, or one that is not UTF-8 text is refused (exit 64). A stored \
            password is replaced.

            Exit 78 when the Secret Service cannot be reached (no session bus: on a headless \
            machine use the systemd credential instead) or its collection is locked.
            """
    )

    @OptionGroup var globals: GlobalOptions

    @Argument(help: ArgumentHelp("Which secret: mqtt-password or esp32-key.", valueName: "name"))
    var account: SecretAccount

    func run() throws {
        let logger = globals.makeLogger()
        if account == .esp32Key {
            throw SecretReport.fail(
                "set",
                "the ESP32 key is drawn, stored and printed by `gate key new` (a typed key is too easily a weak one)",
                status: ExitStatus.usage
            )
        }
        // Reach the Secret Service first: nobody should type a password that cannot be stored.
        let store = try SecretReport.openStore("set")
        let secret: Secret
        switch PasswordInput.read(fromTerminal: Terminal.isTerminal(STDIN_FILENO), prompt: account.prompt) {
        case .success(let read):
            secret = read
        case .failure(let problem):
            throw SecretReport.fail("set", problem.message, status: ExitStatus.usage)
        }
        do {
            try store.store(secret, account: account.rawValue, label: account.label)
        } catch {
            throw SecretReport.fail(
                "set",
                "\(account.title) was not stored: \(error)",
                status: ExitStatus.configuration
            )
        }
        logger.info(
            "secret stored",
            metadata: ["account": "\(account.rawValue)", "schema": "\(SecretServiceStore.schemaName)"]
        )
        Terminal.printLine(
            "Stored \(account.title) in the Secret Service (schema \(SecretServiceStore.schemaName), "
                + "service=\(SecretServiceStore.service), account=\(account.rawValue))."
        )
    }
}

/// Reads a password from the terminal without echo, or from standard input, into
/// memory that is wiped before it is freed. The only copy that leaves is the `Secret`.
enum PasswordInput {
    /// An MQTT password field holds at most 65535 bytes.
    static let maximumLength = 65_535

    struct Problem: Error {
        let message: String
    }

    static func read(fromTerminal: Bool, prompt: String) -> Result<Secret, Problem> {
        // Room for the longest password, a CR LF after it, and one byte to notice more.
        let first = WipedBuffer(capacity: maximumLength + 3)
        if fromTerminal {
            let prompts = PromptOutput()
            if let problem = TerminalLine.read(into: first, prompt: prompt, output: prompts) {
                return .failure(problem)
            }
            let second = WipedBuffer(capacity: maximumLength + 3)
            if let problem = TerminalLine.read(into: second, prompt: "Again, to confirm: ", output: prompts) {
                return .failure(problem)
            }
            guard first.contents.elementsEqual(second.contents) else {
                return .failure(Problem(message: "the two entries differ; nothing was stored"))
            }
        } else if let problem = readToEnd(STDIN_FILENO, into: first) {
            return .failure(problem)
        }
        return validated(first, fromTerminal: fromTerminal)
    }

    /// One trailing newline (LF or CR LF) removed; empty, multi-line, NUL-holding and
    /// non-UTF-8 input refused. Messages never quote the input.
    private static func validated(_ buffer: WipedBuffer, fromTerminal: Bool) -> Result<Secret, Problem> {
        if buffer.count > 0, buffer.contents[buffer.count - 1] == 0x0a { buffer.count -= 1 }
        if buffer.count > 0, buffer.contents[buffer.count - 1] == 0x0d { buffer.count -= 1 }
        let bytes = buffer.contents
        let origin = fromTerminal ? "the entry" : "standard input"
        guard !bytes.isEmpty else {
            return .failure(Problem(message: "refusing an empty password (\(origin) was empty); nothing was stored"))
        }
        guard bytes.count <= maximumLength else {
            return .failure(
                Problem(message: "\(origin) is longer than \(maximumLength) bytes, the most an MQTT password can hold")
            )
        }
        guard !bytes.contains(0x0a), !bytes.contains(0x0d) else {
            return .failure(
                Problem(message: "\(origin) holds more than one line; give the password alone, on one line")
            )
        }
        guard !bytes.contains(0) else {
            return .failure(Problem(message: "\(origin) holds a NUL byte, which a Secret Service password cannot"))
        }
        var iterator = bytes.makeIterator()
        var decoder = Unicode.UTF8()
        decoding: while true {
            switch decoder.decode(&iterator) {
            case .scalarValue: continue
            case .emptyInput: break decoding
            case .error:
                return .failure(Problem(message: "\(origin) is not UTF-8 text, which the Secret Service stores"))
            }
        }
        return .success(Secret(bytes: Array(bytes)))
    }

    /// Everything up to end of file, or a problem when there is more than fits.
    private static func readToEnd(_ fd: Int32, into buffer: WipedBuffer) -> Problem? {
        while true {
            guard buffer.count < buffer.capacity else {
                return Problem(
                    message: "standard input is longer than \(maximumLength) bytes, the most an MQTT password can hold"
                )
            }
            let got = retryingOnInterrupt { Glibc.read(fd, buffer.base + buffer.count, buffer.capacity - buffer.count) }
            if got < 0 {
                return Problem(message: "cannot read standard input: \(SystemError.text(for: errno))")
            }
            if got == 0 { return nil }
            buffer.count += got
        }
    }
}

/// A fixed-size byte buffer, wiped with explicit_bzero before it is freed.
final class WipedBuffer {
    let base: UnsafeMutablePointer<UInt8>
    let capacity: Int
    var count = 0

    init(capacity: Int) {
        self.capacity = capacity
        base = .allocate(capacity: capacity)
        base.initialize(repeating: 0, count: capacity)
    }

    var contents: UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(start: base, count: count) }

    deinit {
        explicit_bzero(base, capacity)
        base.deallocate()
    }
}

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
