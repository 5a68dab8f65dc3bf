import GateCore
import GateSystem
import Logging

#if canImport(Glibc)
import Glibc
#endif

extension ControlClient {
    /// Follows an opening handed to the daemon, on the client's thread: the states it
    /// reports, its result, or its loss.
    ///
    /// Never twice: once the request has left, only the daemon's explicit `declined`
    /// (or a reset that says the request was never read) lets the client open by
    /// itself; a daemon that goes away or silent ends the opening with
    /// `operationTimeout`, naming the adapter the daemon last reported.
    struct Follower {
        let peer: PeerCredentials
        /// When the request was sent.
        let start: MonotonicInstant
        let limit: Duration
        /// The adapter the opening's plan tries first, for a daemon lost before it
        /// reported one.
        let planned: () -> AdapterKind?
        let logger: Logger
        var accepted = false
        /// The last state that came with an adapter.
        var reported: (state: GateState, adapter: AdapterKind)?

        init(
            peer: PeerCredentials,
            start: MonotonicInstant,
            limit: Duration,
            planned: @escaping () -> AdapterKind?,
            logger: Logger
        ) {
            self.peer = peer
            self.start = start
            self.limit = limit
            self.planned = planned
            self.logger = logger
        }

        mutating func follow(
            _ reader: inout LineReader,
            path: String,
            onStateChange: (GateState, AdapterKind?) -> Void
        ) -> Handover {
            let deadline = start + limit
            while true {
                switch reader.next(until: deadline) {
                case .line(let line):
                    if let done = handle(line, onStateChange: onStateChange) { return done }
                case .ended:
                    return lost("closed the connection before the result")
                case .tooLong:
                    return lost("sent a line longer than the protocol allows")
                case .timedOut:
                    return lost("gave no result within \(limit.humanReadable)")
                case .failed(let error) where error.code == ECONNRESET && !accepted:
                    // A Unix stream socket is reset only when its peer closes it with data
                    // it never read: our request, the only thing we send, was not read, so
                    // nothing was started for it, now or later.
                    logger.info(
                        "the daemon (pid \(peer.pid)) stopped before reading the request; opening directly",
                        metadata: ["socket": "\(path)"]
                    )
                    return .openDirectly("the daemon on \(path) stopped before reading the request (\(error))")
                case .failed(let error):
                    return lost("could not be read from (\(error))")
                }
            }
        }

        /// One line from the daemon: the end of the exchange, or nil to read on.
        private mutating func handle(_ line: [UInt8], onStateChange: (GateState, AdapterKind?) -> Void) -> Handover? {
            switch ControlReply.parse(line) {
            case .declined(let reason)? where !accepted:
                // Expired, another configuration, a reserved source…: nothing was started,
                // and nothing will be for this request.
                logger.info("the daemon declined the opening; opening directly", metadata: ["reason": "\(reason)"])
                return .openDirectly("the daemon declined: \(reason)")
            case .accepted?:
                accepted = true
                return nil
            case .state(let state, let adapter)?:
                if let adapter { reported = (state, adapter) }
                onStateChange(state, adapter)
                return nil
            case .result(let result)?:
                return .finished(result)
            case .error(let message)? where !accepted:
                // The daemon read no opening in the request: it started nothing.
                return .finished(
                    OpeningResult(
                        error: .allAdaptersFailed,
                        adapter: nil,
                        duration: MonotonicClock.now().duration(since: start),
                        attempts: [],
                        explanation: "the daemon (pid \(peer.pid)) refused the request: \(message); nothing was sent"
                    )
                )
            case .declined?, .error?, .who?, .hello?, nil:
                return lost("answered outside the protocol")
            }
        }

        /// A state the daemon reported, in words for the message (its name is for the logs).
        static func reportWords(_ state: GateState) -> String {
            switch state {
            case .triggering: return "a trigger sent"
            case .waitingForRelayClose: return "the relay activated"
            case .ready: return "ready"
            case .timeout: return "a timeout"
            case .error: return "an error"
            }
        }

        /// The daemon that may have started the opening is gone or silent: 124, naming
        /// the adapter it last reported (or, before any, the one its plan tries first).
        func lost(_ why: String) -> Handover {
            let adapter = reported?.adapter ?? planned()
            let last: String
            if let reported {
                last = "after reporting \(Self.reportWords(reported.state)) via \(reported.adapter.rawValue)"
            } else if let adapter {
                last = "before reporting an adapter (its plan tries \(adapter.rawValue) first)"
            } else {
                last = "before reporting an adapter"
            }
            logger.error(
                "the daemon (pid \(peer.pid)) that took this opening \(why) \(last); not triggering again: the relay may have cycled"
            )
            return .finished(
                OpeningResult(
                    error: .operationTimeout,
                    adapter: adapter,
                    duration: MonotonicClock.now().duration(since: start),
                    attempts: [],
                    explanation:
                        "the opening was handed to the daemon (pid \(peer.pid)), which \(why) \(last); the relay may have cycled"
                )
            )
        }
    }
}
