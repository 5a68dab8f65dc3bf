/// A plain TCP connection to the broker, with nothing sent.
public enum TCPFacts: Sendable, Hashable {
    case connected(Duration)
    case failed(String)
    case noAnswer
}
