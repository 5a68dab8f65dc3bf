import Foundation

/// A C source built at test time into a shared library for `LD_PRELOAD`, in a folder
/// of its own that goes with it: how tests put bad luck (a slow resolver, a reader
/// paused at the worst moment) inside a real `gate` process.
public final class PreloadLibrary {
    public let directory: URL
    /// The `.so`, for `LD_PRELOAD`.
    public let path: String

    /// `source(folder)` is the C text; `folder` is where the library may keep its own files.
    public init(named name: String, source: (String) -> String) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("gate-\(name)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        path = directory.appendingPathComponent("\(name).so").path
        let sourcePath = directory.appendingPathComponent("\(name).c").path
        do {
            try source(directory.path).write(toFile: sourcePath, atomically: true, encoding: .utf8)
            let compiled = try MosquittoBroker.runTool(
                "/usr/bin/cc",
                ["-shared", "-fPIC", "-o", path, sourcePath, "-ldl"],
                timeout: .seconds(60)
            )
            guard compiled.status == 0 else { throw GateRunner.Failure("cannot build \(name).so: \(compiled.summary)") }
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
    }

    deinit {
        try? FileManager.default.removeItem(at: directory)
    }

    /// A file of the library's folder.
    public func file(_ name: String) -> String {
        directory.appendingPathComponent(name).path
    }
}

/// An `LD_PRELOAD` library that holds the first `openat` of a file called `name` (in
/// any folder) until the
/// test lets it go: the process has decided everything it decides before opening the
/// file, and the test changes the file in between.
///
/// On that call it creates `held` (the test waits for it), then waits up to 10 s for
/// `release` to exist before it opens the file, whatever it then is.
public final class PausedOpenShim {
    let library: PreloadLibrary
    public var path: String { library.path }

    public init(name: String) throws {
        library = try PreloadLibrary(named: "paused-open") { folder in
            """
            #define _GNU_SOURCE
            #include <dlfcn.h>
            #include <errno.h>
            #include <fcntl.h>
            #include <stdarg.h>
            #include <string.h>
            #include <sys/stat.h>
            #include <time.h>
            #include <unistd.h>

            typedef int (*openat_fn)(int, const char *, int, ...);
            static int paused;

            int openat(int directory, const char *pathname, int flags, ...) {
                mode_t mode = 0;
                if (flags & (O_CREAT | O_TMPFILE)) {
                    va_list arguments;
                    va_start(arguments, flags);
                    mode = (mode_t)va_arg(arguments, int);
                    va_end(arguments);
                }
                openat_fn real = (openat_fn)dlsym(RTLD_NEXT, "openat");
                if (real == NULL) { errno = ENOSYS; return -1; }
                const char *base = strrchr(pathname, '/');
                base = base == NULL ? pathname : base + 1;
                if (!paused && strcmp(base, "\(name)") == 0) {
                    paused = 1;
                    int saved = errno;
                    int held = real(AT_FDCWD, "\(folder)/held", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
                    if (held >= 0) close(held);
                    struct stat info;
                    for (int waited = 0; waited < 10000 && stat("\(folder)/release", &info) != 0; waited++) {
                        struct timespec millisecond = { 0, 1000000 };
                        nanosleep(&millisecond, NULL);
                    }
                    errno = saved;
                }
                return real(directory, pathname, flags, mode);
            }

            """
        }
    }

    /// Whether the process is held in its `openat`.
    public var isHeld: Bool { FileManager.default.fileExists(atPath: library.file("held")) }

    /// Lets the held `openat` go on.
    public func release() {
        _ = FileManager.default.createFile(atPath: library.file("release"), contents: nil)
    }
}
