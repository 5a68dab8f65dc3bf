import ArgumentParser
import GateCore
import GateDaemon
import GateDoctor
import GateSystem

struct DoctorCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doctor",
        abstract: "Check everything an opening needs, and say how to fix what is missing.",
        discussion: """
            Checks, in this order, as the account that runs it:
              config         the configuration is found and valid
              runtime        the runtime folder is writable, its lock readable and writable
              state          the state folder (history) is writable or can be made
              daemon         which daemon, if any, serves the runtime folder's control socket
              udp            the ESP32's address resolves and is on-link or loopback
              esp32          the ESP32 is there: it answers an ICMP echo, or the neighbour
                             table says it answered ARP (on-link addresses only)
              v2             under [esp32] protocol = 2: the ESP32 answers a signed
                             status query (which moves nothing); WARN if it still takes v1
              mqtt-password  the MQTT password is found (never shown)
              mqtt-tcp       the broker accepts a TCP connection
              mqtt-connect   TLS handshake (if configured) and login, up to the CONNACK
              gpio           the button's GPIO line can be requested (with [button])
              homeassistant  the broker accepts the subscription to HA's command topic
                             (with [homeassistant])
              notify         a notification server answers on the session bus (with
                             [notify]; asked its name, shown nothing)

            The GPIO line is released at once; a line held by a running `gate daemon` \
            counts as working. A /run/gate that exists but that this account cannot write \
            fails the runtime check: its openings would not share the service's lock.

            No trigger is ever sent to the ESP32's UDP port (the v2 check's status query \
            moves nothing) and nothing is published on the broker: the doctor cannot \
            trigger the relay. The esp32 check sends ICMP echo \
            requests (ping) for at most udp.timeout through an unprivileged ping socket, \
            then reads the kernel's neighbour table for the address: no reply and nobody \
            answering ARP fails the check (is the ESP32 powered and on the network? is \
            udp.host right?). Ping sockets are open only to the groups in \
            net.ipv4.ping_group_range (systemd opens them to all; a kernel default of \
            "1 0" closes them): where they are closed the check says so and how to open \
            them, and goes by the neighbour table alone, skipping when it has no entry. \
            The only subscription is the homeassistant check's, to the command topic, for \
            the broker's answer (SUBACK) only. The broker's checks are bounded by \
            mqtt.timeout, the udp and esp32 checks by udp.timeout. A check that does not \
            apply, or that needs one that failed, is \
            skipped with the reason. It sees what the account and environment that run it \
            see: to check the service's view (user gate, its systemd credential), run it \
            in that context: `sudo systemd-run --pipe --wait --quiet --uid=gate \
            --property=LoadCredentialEncrypted=mqtt-password /usr/bin/gate doctor`.

            Each line is ok, WARN, FAIL or skip, the finding, and under a failure `fix:` with the \
            command to run or the key to edit. With --json: one JSON array of \
            {"check","status":"ok"|"warn"|"fail"|"skip","detail","fix"} in the order above.

            Exit codes: 0 nothing failed (skips and warnings are fine); 78 the only failures \
            are configuration problems (the file missing or invalid, the MQTT password \
            missing or refused by the broker, no v2 key or no signed answer to it); 69 anything else failed (a folder, the ESP32 off-link \
            or not answering, the broker, the GPIO line); 64 bad command line.
            """
    )

    @OptionGroup var globals: GlobalOptions

    @Flag(help: "Print one JSON array of {check, status, detail, fix}.")
    var json = false

    func run() throws {
        let logger = globals.makeLogger()
        let report = Doctor.examine(configPath: globals.config, logger: logger, button: DoctorButton.probe)
        Terminal.printLine(json ? report.json.serialized() : report.text)
        if report.exitStatus != ExitStatus.success {
            throw ExitCode(report.exitStatus)
        }
    }
}
