import AsyncAlgorithms
import GateCore
import GateHomeAssistant
import GateSystem
import Logging
import ServiceLifecycle

/// The gate as one Home Assistant device (docs/CONTRACT.md#home-assistant), over the daemon's warm link:
/// retained discovery configs, availability (the link's last will says `offline`),
/// the "Last opening" sensor for every opening whoever made it (from the status
/// file), and HA's button: one opening with source `homeassistant` per press.
///
/// A command that comes retained, or while an opening of this service runs, or that
/// the pipeline refuses (lock, cooldown, busy relay), never triggers and is never
/// queued: it is logged and the sensor shows `refused`.
///
/// Everything is published through the link made for the running configuration
/// only (`DaemonContext.linkExtras`), never through one about to be replaced: a
/// device whose table was removed or renamed is deleted through the new link.
struct HomeAssistantService: Service, CustomStringConvertible {
    var description: String { "homeassistant" }
    let context: DaemonContext

    static let source = "homeassistant"

    enum Input: Sendable {
        case config
        case link(MQTTLink, LinkEvent)
        case statusChanged
        case openingFinished(OpeningResult)
    }

    func run() async {
        let logger = context.logger
        // Subscribed before the configuration and the link are looked at: nothing falls in between.
        let configs = context.configUpdates().map { _ in Input.config }
        let events = context.linkEvents().map(Input.link)
        var watch: FileChangeWatch?
        do {
            watch = try FileChangeWatch(directory: context.paths.runtimeDirectory, names: ["status.json"])
        } catch {
            logger.warning(
                "Home Assistant: the status file is not watched; the Last opening sensor shows this daemon's openings only",
                metadata: ["error": "\(error)"]
            )
        }
        defer { watch?.stop() }
        let changes = (watch?.changes ?? AsyncStream { $0.finish() }).map { Input.statusChanged }
        // The openings' results and the looks again at a link.
        let (own, continuation) = AsyncStream.makeStream(of: Input.self, bufferingPolicy: .unbounded)

        var state = State(
            fileLast: StatusFile.read(context.paths.statusFile)?.effective(now: WallClock.iso8601(), lockHeld: true)
                .last
        )
        state.sensor = state.fileLast.map(LastOpeningState.init)
        // A link that connected before this run began (a restart of this service).
        announce(&state, because: "started")
        // The openings of presses: waited for, never cancelled, when the loop ends.
        await withDiscardingTaskGroup { openings in
            // The looks again at a link: ended with the loop.
            await withDiscardingTaskGroup { children in
                for await input in merge(configs, events, merge(changes, own)).cancelOnGracefulShutdown() {
                    handle(input, state: &state, children: &children, openings: &openings, continuation)
                }
                children.cancelAll()
            }
            if state.busy { logger.info("stopping: letting the Home Assistant opening in flight finish") }
        }
    }

    private func handle(
        _ input: Input,
        state: inout State,
        children: inout DiscardingTaskGroup,
        openings: inout DiscardingTaskGroup,
        _ continuation: AsyncStream<Input>.Continuation
    ) {
        let logger = context.logger
        switch input {
        case .config:
            announce(&state, because: "configuration")
        case .link(let link, .connected):
            if link === context.link {
                announce(&state, because: "connected")
            } else if link.isConnected {
                // LinkService installs a link just after starting it: a fast CONNACK can
                // come first. Looked at again shortly; a replaced link is no longer connected.
                children.addTimer(after: .milliseconds(50), .link(link, .connected), into: continuation)
            }
        case .link(_, .subscribed(let topic, let refused)):
            if refused {
                logger.error("Home Assistant: the broker refused the subscription to \(topic); check its ACL")
            }
        case .link(let link, .message(let topic, let payload, let retained)):
            // The running configuration's link (perhaps not installed yet), never a replaced one.
            guard link.isConnected, link.extras == DaemonContext.linkExtras(for: context.config),
                let ha = context.config.homeAssistant
            else { return }
            let topics = HomeAssistantTopics(ha)
            if topic == topics.homeAssistantStatus {
                let text = String(decoding: payload, as: UTF8.self).trimmingWhitespace
                if text == HomeAssistantDiscovery.online {
                    logger.info("Home Assistant is online; announcing the device again")
                    announce(&state, because: "homeassistant online")
                }
            } else if topic == topics.command {
                command(payload: payload, retained: retained, state: &state, openings: &openings, continuation)
            }
        case .statusChanged:
            readStatus(&state)
        case .openingFinished(let result):
            state.busy = false
            let metadata: Logger.Metadata = [
                "source": "\(Self.source)", "outcome": "\(result.outcome.rawValue)",
                "adapter": "\(result.adapter?.rawValue ?? "none")",
                "duration_ms": "\(result.duration.milliseconds)",
            ]
            if result.error == .operationInProgress {
                refuse(&state, why: result.message)
            } else if result.error == nil {
                logger.info("\(result.message)", metadata: metadata)
            } else {
                logger.error("\(result.message)", metadata: metadata)
            }
            readStatus(&state)
        }
    }

    struct State {
        /// The last opening in the status file, as last read.
        var fileLast: StatusRecord.Last?
        /// What the sensor shows (the file's last opening, or a refusal since).
        var sensor: LastOpeningState?
        /// The device as last announced: deleted first when the configuration moves it.
        var announced: HomeAssistantTopics?
        var busy = false
    }

    /// The link for the running configuration, when it is connected.
    private var currentLink: MQTTLink? {
        guard let link = context.link, link.isConnected, link.extras == DaemonContext.linkExtras(for: context.config)
        else { return nil }
        return link
    }

    private func discovery() -> HomeAssistantDiscovery? {
        let config = context.config
        guard let ha = config.homeAssistant, let mqtt = config.mqtt else { return nil }
        return HomeAssistantDiscovery(config: ha, mqtt: mqtt, version: GateRelease.version)
    }

    /// Deletes a device that moved or went away, then announces the configured one:
    /// configs, online, the sensor's state.
    private func announce(_ state: inout State, because why: String) {
        guard let link = currentLink else { return }
        let logger = context.logger
        let wanted = discovery()
        if let old = state.announced, old != wanted?.topics {
            let sent = HomeAssistantDiscovery.removal(old).allSatisfy { link.publish($0) }
            guard sent else { return }
            logger.notice(
                "Home Assistant device removed (empty retained configs)",
                metadata: ["node_id": "\(old.config.nodeID)"]
            )
            state.announced = nil
        }
        guard let wanted else { return }
        var messages = wanted.configMessages + [wanted.birth]
        if let sensor = state.sensor { messages += wanted.lastOpeningMessages(sensor) }
        guard messages.allSatisfy({ link.publish($0) }) else { return }
        state.announced = wanted.topics
        logger.info(
            "Home Assistant device announced",
            metadata: [
                "node_id": "\(wanted.config.nodeID)", "prefix": "\(wanted.config.discoveryPrefix)", "why": "\(why)",
            ]
        )
    }

    private func publishSensor(_ state: State) {
        guard let sensor = state.sensor, let discovery = discovery(), let link = currentLink else { return }
        for message in discovery.lastOpeningMessages(sensor) { link.publish(message) }
    }

    private func readStatus(_ state: inout State) {
        guard case .success(let record) = StatusFile.effective(paths: context.paths), let last = record.last else {
            return
        }
        guard last != state.fileLast else { return }
        state.fileLast = last
        state.sensor = LastOpeningState(last)
        publishSensor(state)
    }

    /// `error` is the sensor's `error` attribute: why, in one word.
    private func refuse(_ state: inout State, why: String, error: String = GateKeeperError.operationInProgress.rawValue)
    {
        context.logger.notice("Home Assistant command refused: \(why)", metadata: ["source": "\(Self.source)"])
        state.sensor = .refused(source: Self.source, at: WallClock.iso8601(), error: error)
        publishSensor(state)
    }

    private func command(
        payload: [UInt8],
        retained: Bool,
        state: inout State,
        openings: inout DiscardingTaskGroup,
        _ continuation: AsyncStream<Input>.Continuation
    ) {
        let text = String(decoding: payload, as: UTF8.self).trimmingWhitespace
        if payload.isEmpty {
            // Someone clearing a retained message: not a press.
            context.logger.notice("Home Assistant command topic: empty message ignored")
            return
        }
        if retained {
            refuse(
                &state,
                why:
                    "the command was retained on the broker (stale by definition; clear it with an empty retained message)",
                error: "retainedCommand"
            )
            return
        }
        guard text == HomeAssistantDiscovery.press else {
            refuse(
                &state,
                why:
                    "unknown payload \(SafeText.escaped(String(text.prefix(40)))); a press is \(HomeAssistantDiscovery.press)",
                error: "invalidCommand"
            )
            return
        }
        guard !state.busy else {
            refuse(&state, why: "an opening from Home Assistant is in progress")
            return
        }
        state.busy = true
        let context = self.context
        context.logger.info("Home Assistant button pressed; opening", metadata: ["source": "\(Self.source)"])
        openings.addTask {
            let result = await context.open(OpeningRequest(source: Self.source))
            continuation.yield(.openingFinished(result))
        }
    }
}

extension String {
    var trimmingWhitespace: String {
        var text = Substring(self)
        while let first = text.first, first.isWhitespace { text.removeFirst() }
        while let last = text.last, last.isWhitespace { text.removeLast() }
        return String(text)
    }
}
