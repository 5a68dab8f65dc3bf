import GateSystem
import Plumbing

#if canImport(Glibc)
import Glibc
#endif

/// Opens the test and demo source of button events.
enum EventFIFO {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Read-write, so that the FIFO always has a writer (this process) and never
    /// reports end of input between two writers: a harness may open and close it
    /// for every press.
    static func open(_ path: String) throws(Failure) -> Int32 {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw Failure(description: "cannot read button events from \(path): \(SystemError("stat", code: errno))")
        }
        guard info.st_mode & S_IFMT == S_IFIFO else {
            throw Failure(description: "cannot read button events from \(path): not a FIFO (make one with mkfifo)")
        }
        let fd = Glibc.open(path, O_RDWR | O_CLOEXEC)
        guard fd >= 0 else {
            throw Failure(description: "cannot read button events from \(path): \(SystemError("open", code: errno))")
        }
        return fd
    }
}
