import GateCore
import GateSystem
import Logging

extension Doctor {
    /// Under `[esp32] protocol = 2`: one signed status query over UDP (never an open), to say
    /// which protocol the ESP32 answers, bounded by `udp.timeout`.
    static func v2(_ config: GateConfig, file: String, environment: [String: String], logger: Logger) -> DoctorFinding {
        guard config.esp32.protocolVersion == .v2 else {
            return .skip(.v2, "[esp32] protocol = 1: the plain trigger, with nothing signed to ask the ESP32 about")
        }
        guard let udp = config.udp else {
            return .skip(.v2, "not checked: the status query goes over UDP, and there is no [udp] table")
        }
        let keyID = config.esp32.keyID
        let facts: V2ProbeFacts
        switch AdapterFactory.credentials(environment: environment).esp32Key(keyID: keyID) {
        case .failure(let failure):
            facts = .noKey(failure.message)
        case .success(let key):
            switch HostResolver.resolve(host: udp.host, port: udp.port) {
            case .failure(let failure):
                facts = .unreachable(failure.message)
            case .success(let target):
                let query = V2StatusQuery(target: target, key: key, logger: logger)
                switch query.run(budget: .seconds(fromConfig: udp.timeout)) {
                case .success(let answer):
                    facts = .answered(answer.status, target: "\(target)")
                case .failure(.silent(let ignored, let budget)):
                    facts = .silent(ignored: ignored, budget: budget, target: "\(target)")
                case .failure(.unreachable(let why)):
                    facts = .unreachable(why)
                }
            }
        }
        logger.debug("doctor: v2", metadata: ["facts": "\(facts)"])
        return DoctorVerdict.v2(facts, keyID: keyID, file: file)
    }
}
