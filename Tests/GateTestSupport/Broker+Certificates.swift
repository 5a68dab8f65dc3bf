import Foundation

// Test-time certificates for `MosquittoBroker`, made with the `openssl` command line.
// EC prime256v1 keys: the whole set (CA + server) takes well under 0.1 s, where rsa:2048
// takes about 0.3 s per key; mosquitto 2.0.11 and its clients accept them.

extension MosquittoBroker {
    /// PEM paths of a CA and a server certificate it signed (SAN IP:127.0.0.1, DNS:localhost).
    public struct TLSFiles: Sendable {
        var caCertificate: String
        var caKey: String
        var serverCertificate: String
        var serverKey: String
    }

    static let openssl = "/usr/bin/openssl"

    /// A self-signed CA in `directory`; returns (certificate, key) paths. `name` prefixes the
    /// file names so that several CAs can share a folder.
    static func makeCA(in directory: URL, name: String, commonName: String) throws -> (certificate: String, key: String)
    {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let certificate = directory.appendingPathComponent("\(name).pem").path
        let key = directory.appendingPathComponent("\(name).key").path
        try openSSL([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
            "-subj", "/CN=\(commonName)",
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign",
            "-keyout", key, "-out", certificate,
        ])
        return (certificate, key)
    }

    /// A CA and a server certificate for 127.0.0.1/localhost signed by it, in `directory`.
    static func makeTLSFiles(in directory: URL) throws -> TLSFiles {
        let ca = try makeCA(in: directory, name: "ca", commonName: "gate-test-ca")
        let serverKey = directory.appendingPathComponent("server.key").path
        let request = directory.appendingPathComponent("server.csr").path
        let serverCertificate = directory.appendingPathComponent("server.pem").path
        let extensions = directory.appendingPathComponent("server.ext")
        try """
        subjectAltName = IP:127.0.0.1,DNS:localhost
        basicConstraints = CA:FALSE
        keyUsage = critical,digitalSignature
        extendedKeyUsage = serverAuth

        """.write(to: extensions, atomically: true, encoding: .utf8)
        try openSSL([
            "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-subj", "/CN=localhost", "-keyout", serverKey, "-out", request,
        ])
        try openSSL([
            "x509", "-req", "-in", request, "-CA", ca.certificate, "-CAkey", ca.key,
            "-CAcreateserial", "-CAserial", directory.appendingPathComponent("ca.srl").path,
            "-days", "2", "-extfile", extensions.path, "-out", serverCertificate,
        ])
        return TLSFiles(
            caCertificate: ca.certificate,
            caKey: ca.key,
            serverCertificate: serverCertificate,
            serverKey: serverKey
        )
    }

    /// Another CA, unrelated to any broker's: for "wrong CA" tests. Returns its certificate's path.
    public static func makeUnrelatedCA(in directory: URL) throws -> String {
        try makeCA(in: directory, name: "unrelated-ca-\(UUID().uuidString)", commonName: "gate-test-unrelated-ca")
            .certificate
    }

    private static func openSSL(_ arguments: [String]) throws {
        let run = try runTool(openssl, arguments, timeout: .seconds(30))
        guard run.status == 0 else { throw Failure("openssl failed: \(run.summary)") }
    }
}
