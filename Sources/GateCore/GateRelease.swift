/// gate's version, for `--version`, the device Home Assistant shows, and the
/// package (scripts/package-deb reads it from this file).
public enum GateRelease {
    public static let version = "0.1.0"
}
