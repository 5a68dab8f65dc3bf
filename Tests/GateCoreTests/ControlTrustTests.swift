import GateControl
import GateCore
import Testing

@Suite("Whom gate open hands its openings to on control.sock")
struct ControlTrustTests {
    // The deploy files' case: /run/gate is root's, the service runs as the system user gate.
    let trust = ControlTrust(ownUID: 1000, folderOwnerUID: 0, serviceUID: 998)

    @Test("Root, this account, the folder's owner and the service's user are trusted")
    func trusted() {
        #expect(trust.trusts(0))
        #expect(trust.trusts(1000))
        #expect(trust.trusts(998))
        #expect(ControlTrust(ownUID: 1000, folderOwnerUID: 4242, serviceUID: nil).trusts(4242))
    }

    @Test("Another member of group gate is not, nor anyone when the service's user does not exist")
    func untrusted() {
        #expect(!trust.trusts(1001))
        #expect(!trust.trusts(65534))
        #expect(!ControlTrust(ownUID: 1000, folderOwnerUID: nil, serviceUID: nil).trusts(998))
    }

    @Test("The service's user is looked up only for a peer that is none of the others, and then trusted")
    func serviceLookedUpOnlyWhenNeeded() {
        var lookups = 0
        let lookUp = { () -> UInt32? in
            lookups += 1
            return 998
        }
        for peer: UInt32 in [0, 1000, 4242] {
            #expect(ControlTrust.trusts(peer, ownUID: 1000, folderOwnerUID: 4242, service: lookUp))
        }
        #expect(lookups == 0)
        #expect(ControlTrust.trusts(998, ownUID: 1000, folderOwnerUID: 4242, service: lookUp))
        #expect(lookups == 1)
        #expect(!ControlTrust.trusts(1001, ownUID: 1000, folderOwnerUID: 4242, service: lookUp))
        #expect(!ControlTrust.trusts(998, ownUID: 1000, folderOwnerUID: 0) { nil })
    }
}
