import GateCore
import GateV2
import Logging
import Plumbing

/// One opening under `[esp32] protocol = 2` (docs/CONTRACT.md#protocol-v2-openings): the
/// same lock, cooldown, plan, permit, status file and history as v1; `V2OpeningMachine`
/// decides, this does what it says: learn the epoch, draw the counter under the lock,
/// build the frame, send its copies through the adapters, feed back the signed replies.
extension OpeningPipeline {
    func openV2(
        config: GateConfig,
        request: OpeningRequest,
        logger: Logger,
        onStateChange: @escaping (GateState, AdapterKind?) -> Void,
        onAttempt: @escaping (AdapterKind) -> Void
    ) async -> OpeningResult {
        let key: V2Key
        switch adapters.credentials.esp32Key(keyID: config.esp32.keyID) {
        case .success(let found): key = found
        case .failure(let failure):
            logger.error("opening refused: no usable ESP32 key", metadata: ["reason": "\(failure.message)"])
            return OpeningResult(
                error: .configurationMissing,
                adapter: nil,
                duration: .zero,
                attempts: [],
                explanation: "\(failure.message); nothing was sent"
            )
        }
        let udpLink = udpLink(config: config, selection: request.selection, logger: logger)
        let plan = AdapterPlan.make(config: config, selection: request.selection, udpLink: udpLink)
        // The opening's own link when the daemon's is not there: epoch, replies, MQTT copy.
        let watch = statusFeed == nil ? adapters.watch(config: config, plan: plan, logger: logger) : nil
        defer { watch?.stop() }
        let recorder: OpeningRecorder
        switch begin(config: config, request: request, logger: logger) {
        case .success(let taken): recorder = taken
        case .failure(let refused): return refused.result
        }
        if let watch {
            let first = plan.adapters.first
            let wait = first?.kind == .mqtt ? first?.budget ?? Self.watchWait : Self.watchWait
            await Self.waitUntilLive(watch, for: wait)
        }
        let link = adapters.v2Link(config: config, watch: watch)
        let epoch = link?.epochAnnouncement.flatMap { key.epoch(fromAnnouncement: $0) }
        logger.debug(
            "protocol v2",
            metadata: ["key_id": "\(key.id)", "epoch": "\(epoch.map { String($0, radix: 16) } ?? "unknown")"]
        )
        let run = V2OpeningRun(
            pipeline: self,
            config: config,
            request: request,
            plan: plan,
            exchange: V2Exchange(key: key),
            link: link,
            recorder: recorder,
            logger: logger
        )
        let result = await run.run(epoch: epoch, onStateChange: onStateChange, onAttempt: onAttempt)
        recorder.finished(result.result, resetAfter: result.resetAfter)
        return result.result
    }
}
