import GateCore

/// The verdict on the push button's GPIO line, requested as the daemon requests it.
extension DoctorVerdict {
    public static func button(
        _ facts: ButtonFacts,
        button: ButtonConfig,
        file: String,
        user: DoctorUser
    ) -> DoctorFinding {
        let line = "line \(button.line) of GPIO chip \(button.chip)"
        switch facts {
        case .opened:
            return .ok(.gpio, "\(line) can be requested for edge events by \(user.name); released at once")
        case .busy(let daemonPID?, _):
            return .ok(.gpio, "\(line) is held by `gate daemon` (pid \(daemonPID)), which reads the button")
        case .busy(nil, let words):
            return .unavailable(
                .gpio,
                "\(line) is in use by another program: \(words)",
                fix: "`gpioinfo \(button.chip)` names the consumer of line \(button.line); stop it, "
                    + "or wire the button to a free line and set button.line in \(file)"
            )
        case .noChip(let words, let present):
            if present.isEmpty {
                return .unavailable(
                    .gpio,
                    "\(words) (this machine has no /dev/gpiochip* at all)",
                    fix: "run `gate doctor` on the host wired to the button: chip \(button.chip) must exist there "
                        + "(`gpiodetect`) and be readable by group gpio (\(installedGPIORule), from gate's package); "
                        + "remove [button] from \(file) if this host reads no push button"
                )
            }
            return .unavailable(
                .gpio,
                "\(words) (this machine has \(present.joined(separator: ", ")))",
                fix:
                    "set button.chip in \(file) to one of \(present.joined(separator: ", ")) (`gpiodetect` shows their labels)"
            )
        case .permissionDenied(let words):
            return .unavailable(
                .gpio,
                "\(words) (as \(user.described))",
                fix:
                    "sudo usermod -aG gpio \(user.name) and log in again; /dev/gpiochip* must belong to group gpio: gate's package "
                    + "installs the rule \(installedGPIORule); then "
                    + "`sudo udevadm control --reload && sudo udevadm trigger --subsystem-match=gpio`"
            )
        case .noLine(let words):
            return .unavailable(
                .gpio,
                words,
                fix: "`gpioinfo \(button.chip)` lists the chip's lines: set button.line in \(file) to the button's line"
            )
        case .libraryMissing(let words):
            return .unavailable(.gpio, words, fix: "sudo apt install libgpiod2")
        case .failed(let words):
            return .unavailable(
                .gpio,
                words,
                fix:
                    "`gpioinfo \(button.chip)` shows the chip's lines and who uses them; check button.chip and button.line in \(file)"
            )
        }
    }
}
