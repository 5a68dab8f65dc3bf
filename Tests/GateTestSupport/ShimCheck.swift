import Foundation

/// A C module's hand-written declarations (`Sources/C*/shim.h`) compiled after the
/// library's real header with the shim's check macro defined, so that its
/// `_Static_assert`s compare every prototype with the real one.
public enum ShimCheck {
    /// `cflags` is shell text (`$(pkg-config --cflags libsecret-1)`).
    public static func run(shim: String, after header: String, define: String, cflags: String = "") throws -> GateRun {
        let source = "#include <\(header)>\n#define \(define)\n#include \"\(shim)\"\n"
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin"
        let compiler = ["clang", "cc"].first { name in
            path.split(separator: ":").contains { FileManager.default.isExecutableFile(atPath: "\($0)/\(name)") }
        }
        guard let compiler else { throw SecretSession.Failure("no C compiler on PATH") }
        return try SessionCommand.run(
            "/bin/sh",
            ["-c", "\(compiler) -fsyntax-only -Werror \(cflags) -x c -"],
            stdin: source,
            environment: ProcessInfo.processInfo.environment
        )
    }
}
