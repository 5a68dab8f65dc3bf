import ArgumentParser
import GateCore
import GateSystem
import Logging

enum GateVersion {
    static let current = GateRelease.version
}
