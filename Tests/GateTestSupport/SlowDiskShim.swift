import Foundation

/// An `LD_PRELOAD` library that makes every `fsync` and every `rename` take the given time
/// first: a slow SD card. While one runs, the file `in-fsync` or `in-rename` exists in the
/// library's folder, so a test can act exactly while the process is in it.
public final class SlowDiskShim {
    let library: PreloadLibrary
    public var path: String { library.path }

    public init(fsyncMilliseconds: Int, renameMilliseconds: Int = 0) throws {
        func delay(_ call: String, _ milliseconds: Int, folder: String) -> String {
            """
                int marker = open("\(folder)/in-\(call)", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
                if (marker >= 0) close(marker);
                struct timespec left = { \(milliseconds / 1000), \(milliseconds % 1000) * 1000000L };
                while (nanosleep(&left, &left) != 0 && errno == EINTR) {}
                unlink("\(folder)/in-\(call)");
            """
        }
        library = try PreloadLibrary(named: "slow-disk") { folder in
            """
            #define _GNU_SOURCE
            #include <dlfcn.h>
            #include <errno.h>
            #include <fcntl.h>
            #include <stdio.h>
            #include <time.h>
            #include <unistd.h>

            typedef int (*fsync_fn)(int);
            typedef int (*rename_fn)(const char *, const char *);

            int fsync(int fd) {
                fsync_fn real = (fsync_fn)dlsym(RTLD_NEXT, "fsync");
                if (real == NULL) { errno = ENOSYS; return -1; }
                int saved = errno;
            \(delay("fsync", fsyncMilliseconds, folder: folder))
                errno = saved;
                return real(fd);
            }

            int rename(const char *from, const char *to) {
                rename_fn real = (rename_fn)dlsym(RTLD_NEXT, "rename");
                if (real == NULL) { errno = ENOSYS; return -1; }
                int saved = errno;
            \(delay("rename", renameMilliseconds, folder: folder))
                errno = saved;
                return real(from, to);
            }

            """
        }
    }

    /// Whether the process is in an `fsync` now.
    public var inFsync: Bool { FileManager.default.fileExists(atPath: library.file("in-fsync")) }
    /// Whether the process is in a `rename` now.
    public var inRename: Bool { FileManager.default.fileExists(atPath: library.file("in-rename")) }
}
