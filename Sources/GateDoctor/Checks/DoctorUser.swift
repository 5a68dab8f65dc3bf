/// The account the checks ran as: fix hints name it (`sudo usermod -aG gate alice`).
public struct DoctorUser: Sendable, Hashable {
    public var name: String
    public var uid: UInt32

    public init(name: String, uid: UInt32) {
        self.name = name
        self.uid = uid
    }

    var described: String { "\(name) (uid \(uid))" }
}
