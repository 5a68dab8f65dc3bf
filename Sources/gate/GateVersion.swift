import GateCore

enum GateVersion {
    static let current = GateRelease.version
}
