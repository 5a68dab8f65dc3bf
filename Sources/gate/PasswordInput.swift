import GateSystem

#if canImport(Glibc)
import Glibc
import Plumbing
#endif

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
        // Decoded in place: a String made to check it would be a copy nobody wipes.
        let notUTF8 = transcode(bytes.makeIterator(), from: UTF8.self, to: UTF32.self, stoppingOnError: true) { _ in }
        guard !notUTF8 else {
            return .failure(Problem(message: "\(origin) is not UTF-8 text, which the Secret Service stores"))
        }
        return .success(Secret(bytes: bytes))
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
