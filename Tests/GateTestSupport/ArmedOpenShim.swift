import Foundation

/// An `LD_PRELOAD` library for a long-running process (the daemon): once the test arms
/// it, the next `openat` of a file called `name` (in any folder) for writing is held
/// until the test lets it go. Before `arm()`, every `openat` goes through untouched, so
/// the process starts and serves as usual; the test chooses the opening it stops in the
/// middle. Opens for reading only (the daemon's status keeper asking whether the lock
/// is held) are never held.
///
/// On the held call it creates `held` (the test waits for it), then waits up to 20 s for
/// `release` to exist before it opens the file.
public final class ArmedOpenShim {
    let library: PreloadLibrary
    public var path: String { library.path }

    public init(name: String) throws {
        library = try PreloadLibrary(named: "armed-open") { folder in
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
                struct stat info;
                if (!__atomic_load_n(&paused, __ATOMIC_SEQ_CST) && (flags & O_ACCMODE) != O_RDONLY
                    && strcmp(base, "\(name)") == 0
                    && stat("\(folder)/arm", &info) == 0 && !__atomic_exchange_n(&paused, 1, __ATOMIC_SEQ_CST)) {
                    int saved = errno;
                    int held = real(AT_FDCWD, "\(folder)/held", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
                    if (held >= 0) close(held);
                    for (int waited = 0; waited < 20000 && stat("\(folder)/release", &info) != 0; waited++) {
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

    /// From now on, the next `openat` of the file is held.
    public func arm() {
        _ = FileManager.default.createFile(atPath: library.file("arm"), contents: nil)
    }

    /// Whether the process is held in its `openat`.
    public var isHeld: Bool { FileManager.default.fileExists(atPath: library.file("held")) }

    /// Lets the held `openat` go on.
    public func release() {
        _ = FileManager.default.createFile(atPath: library.file("release"), contents: nil)
    }
}
