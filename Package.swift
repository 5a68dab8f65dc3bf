// swift-tools-version:6.2
import PackageDescription

let package = Package(
    name: "gate",
    products: [
        .executable(name: "gate", targets: ["gate"]),
        .executable(name: "esp32-sim", targets: ["esp32-sim"]),
    ],
    // Exact versions: the package that ships is built from what was tested
    // (docs/DEVELOPING.md#dependencies says why Package.resolved is not committed).
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", exact: "1.8.2"),
        .package(url: "https://github.com/apple/swift-async-algorithms", exact: "1.1.4"),
        .package(url: "https://github.com/apple/swift-log", exact: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", exact: "2.13.0"),
    ],
    targets: [
        // Pure logic: state machine, fallback policy, configuration, errors. No I/O.
        .target(name: "GateCore"),
        // Protocol v2's one C99 core: frames, HMAC-SHA256, the ESP32's rules as a state
        // machine. No I/O, no allocation; the firmware (firmware/) builds the same files.
        // vectors/ is its test vectors file, read by the C tests (firmware/test), the
        // Swift tests and the simulator: data, not sources.
        .target(name: "CGateProtocol", exclude: ["vectors"]),
        // gate's side of protocol v2 over the C core: keys, frames, the check of replies and
        // of the retained epoch announcement. The only target of gate that imports CGateProtocol.
        .target(name: "GateV2", dependencies: ["CGateProtocol", "GateCore"]),
        // libmosquitto's header (Debian: libmosquitto-dev). Not linked: loaded with
        // dlopen on first use (see shim.h), so no pkgConfig here, which would add -lmosquitto.
        .systemLibrary(
            name: "CMosquitto",
            providers: [.apt(["libmosquitto-dev"])]
        ),
        // libsecret's few types and prototypes, written out (checked against the real
        // headers by GateSecretTests) because pkgConfig would link GLib into gate.
        // Not linked either: loaded with dlopen on first use (see shim.h).
        .systemLibrary(name: "CLibSecret"),
        // sd-bus's few types and prototypes (libsystemd), written out (checked against the
        // real header by NotifyTests) so that building needs no libsystemd-dev. Linked:
        // every systemd install has libsystemd0.
        .systemLibrary(name: "CSDBus"),
        // libgpiod 1.6's header (Debian: libgpiod-dev), linked: the package depends on
        // libgpiod2, which every Raspberry Pi OS has.
        .systemLibrary(
            name: "CGPIOD",
            providers: [.apt(["libgpiod-dev"])]
        ),
        // The push button's line and the reader of its edge events (for `gate daemon`).
        .target(name: "GPIO", dependencies: ["CGPIOD", "Plumbing"]),
        // The one Swift owner of a `struct mosquitto *`, shared by gate and the simulator.
        .target(name: "Mosquitto", dependencies: ["CMosquitto", "Plumbing"]),
        // The POSIX layer gate and the simulator share: system-call errors, socket
        // addresses, the one poll loop and non-blocking connect, threads and wake-up
        // pipes for blocking loops, the stderr log handler.
        .target(name: "Plumbing", dependencies: [.product(name: "Logging", package: "swift-log")]),
        // Sockets, files, clocks, interfaces: everything that touches the system.
        .target(
            name: "GateSystem",
            dependencies: [
                "GateCore",
                "GateV2",
                "Mosquitto",
                "Plumbing",
                "CLibSecret",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The features around the opening, each in one place: its rules (pure) beside
        // its I/O. The daemon's services wire them to the daemon's context.
        // The control socket: its messages and rules of trust, the listener and the client.
        .target(
            name: "GateControl",
            dependencies: ["GateCore", "GateSystem", "Plumbing", .product(name: "Logging", package: "swift-log")]
        ),
        // Desktop notifications: which opening is shown and how often, and the sd-bus
        // client that shows them.
        .target(
            name: "GateNotifications",
            dependencies: [
                "GateCore", "GateSystem", "Plumbing", "CSDBus", .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Home Assistant: the discovery messages and the state it shows.
        .target(name: "GateHomeAssistant", dependencies: ["GateCore"]),
        // `gate doctor`: the facts each check gathers (Probes) and the verdicts on them (Checks).
        .target(
            name: "GateDoctor",
            dependencies: [
                "GateCore", "GateV2", "GateSystem", "GateControl", "GateNotifications", "GPIO", "Mosquitto",
                "Plumbing", .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // `gate daemon`: the button, the warm MQTT link, config reload, systemd
        // notification, each a service of one ServiceGroup.
        .target(
            name: "GateDaemon",
            dependencies: [
                "GateCore",
                "GateSystem",
                "GateControl",
                "GateNotifications",
                "GateHomeAssistant",
                "Plumbing",
                "GPIO",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "AsyncAlgorithms", package: "swift-async-algorithms"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "gate",
            dependencies: [
                "GateCore",
                "GateV2",
                "GateSystem",
                "GateControl",
                "GateDoctor",
                "Plumbing",
                "GateDaemon",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "esp32-sim",
            dependencies: [
                "CGateProtocol",
                "Mosquitto",
                "Plumbing",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "esp32-sim"
        ),
        // What the test targets share: the loopback socket, the broker and simulator
        // fixtures, protocol v2's frames and vectors file, the gate runner, and the middle tier's hand-moved clock, scripted
        // adapter, status feed and log capture.
        .target(
            name: "GateTestSupport",
            dependencies: [
                "CGateProtocol",
                "GateCore",
                "GateSystem",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/GateTestSupport"
        ),
        // A process that draws protocol v2's counters as an opening does, for CounterStoreTests'
        // restarts and crashes. Built for the tests only; not a product.
        .executableTarget(name: "gate-counter-probe", dependencies: ["GateSystem"], path: "Tests/CounterProbe"),
        .testTarget(
            name: "GateCoreTests",
            dependencies: ["GateCore", "GateControl", "GateDoctor", "GateHomeAssistant", "GateNotifications"]
        ),
        .testTarget(
            name: "GateSystemTests",
            dependencies: [
                "GateSystem", "GateCore", "GateV2", "Mosquitto", "Plumbing", "GateTestSupport", "gate-counter-probe",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(name: "GPIOTests", dependencies: ["GPIO", "GateCore"]),
        .testTarget(
            name: "GateIntegrationTests",
            dependencies: [
                "GateCore", "GateV2", "GateSystem", "GateControl", "GateDoctor", "GateNotifications", "gate",
                "esp32-sim", "GateTestSupport",
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)

// Warnings are errors where GATE_STRICT is set (CI's .ci/run sets it): a warning
// left today hides tomorrow's. Only gate's own targets: the dependencies' are theirs.
if Context.environment["GATE_STRICT"] != nil {
    for target in package.targets where target.type != .system {
        target.swiftSettings = (target.swiftSettings ?? []) + [.treatAllWarnings(as: .error)]
    }
}
