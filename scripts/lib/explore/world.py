"""One run's world: mosquitto, the delay proxy, esp32-sim, `gate daemon` and the openers.

Every process is in a process group of its own and is killed in `close()`; every
address is on loopback. The world writes what it does into a Timeline, which the
checks read afterwards.
"""

import dataclasses
import heapq
import itertools
import os
import signal
import struct
import time

from .processes import Child, Timeline, free_port, read_text, wait_until
from .proxy import DelayProxy

HOLD_MS = 150
STATUS_TOPIC = "iot/house/gate/esp32/status"
HA_COMMAND_TOPIC = "gate/garden_gate/open"
SLOW_RELEASE_HOLD = 3.0


@dataclasses.dataclass(frozen=True)
class Config:
    udp_timeout: float
    mqtt_timeout: float
    reset_delay: float
    cooldown: float

    @property
    def opening_limit(self):
        """The client's wait for a daemon that took its opening (OpeningLimit.swift)."""
        return self.udp_timeout + self.mqtt_timeout + 5

    def text(self, sim_port, broker_port, protocol=1):
        return (
            f'[udp]\nhost = "127.0.0.1"\nport = {sim_port}\ntimeout = {self.udp_timeout}\n'
            f'[mqtt]\nhost = "127.0.0.1"\nport = {broker_port}\ntimeout = {self.mqtt_timeout}\n'
            f"[runtime]\nreset_delay = {self.reset_delay}\ncooldown = {self.cooldown}\n"
            "[homeassistant]\n"
            + ("[esp32]\nprotocol = 2\nkey_id = 1\n" if protocol == 2 else "")
        )


def fault_modes(fault):
    """(udp mode, mqtt mode) of an esp32-sim --fault value ("none" for no fault)."""
    if fault == "none":
        return "none", "none"
    if fault == "udp-off":
        return "off", "none"
    if fault == "mqtt-off":
        return "none", "off"
    if fault.startswith("udp:"):
        return fault[4:], "none"
    if fault.startswith("mqtt:"):
        return "none", fault[5:]
    return fault, fault


@dataclasses.dataclass
class Opening:
    """One opening the schedule asked for, from any source."""

    index: int  # the step that asked
    kind: str  # direct, plain, button, ha
    label: str  # the --source of a CLI opening; "button" / "homeassistant"
    asked: float
    daemon_up: bool = False  # a daemon was running (maybe stopped) when asked
    child: Child = None
    gone: float = None  # when the opener ended (CLI exit), or the daemon's opening did
    exit_code: int = None
    json: dict = None
    stdout: str = ""
    stderr: str = ""
    killed: bool = False  # the schedule signalled the CLI (TERM/KILL): its exit says nothing
    history: list = dataclasses.field(default_factory=list)

    def describe(self):
        return f"opening #{self.index} ({self.kind}, source {self.label})"


class World:
    def __init__(self, work, bin_dir, setup, timeline=None, protocol=1):
        self.work = work
        self.bin_dir = bin_dir
        self.protocol = protocol
        self.timeline = timeline or Timeline()
        self.config = setup.config
        self.configs = [setup.config]
        self.openings = []
        self.daemons = []  # every daemon Child, in start order
        self.baselines = {}  # pid -> (fds, threads) once ready
        self.extra_children = []  # mosquitto_pub
        self.daemon_killed = set()  # pids the schedule SIGTERMed or SIGKILLed
        self.button_broken = False
        self.last_edge = 0.0
        self._timers = []
        self._seq = itertools.count()
        self.env = self._environment()
        if protocol == 2:
            self._provision_key()
        self.broker_port = free_port()
        self.sim_port = free_port("udp")
        self.broker = self.proxy = self.sim = None
        self.fault = setup.fault
        self.delay = setup.delay
        self.config_path = f"{work}/gate.toml"
        self.fifo = f"{work}/button.fifo"

    def _provision_key(self):
        """Protocol v2: one key, as the credential esp32-key of every gate process (systemd's
        credentials folder) and as the simulator's key 1."""
        key = os.urandom(32).hex()
        folder = f"{self.work}/credentials"
        os.makedirs(folder, mode=0o700)
        self.key_file = f"{folder}/esp32-key"
        with open(os.open(self.key_file, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write(key)
        self.env["CREDENTIALS_DIRECTORY"] = folder

    def start(self):
        """Broker, proxy, simulator, configuration, daemon; RuntimeError if one cannot start."""
        self.start_broker()
        self.proxy = DelayProxy(self.broker_port)
        self.set_delay(self.delay)
        if not self.start_sim(self.fault):
            raise RuntimeError("esp32-sim did not start:\n" + read_text(f"{self.work}/sim.err")[-2000:])
        self.write_config(self.config)
        os.mkfifo(self.fifo)
        if not self.start_daemon(wait_link=True):
            raise RuntimeError("gate daemon did not start:\n" + read_text(f"{self.work}/daemon.log")[-3000:])

    def _environment(self):
        env = dict(os.environ)
        for key in ("GATE_CONFIG", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR", "JOURNAL_STREAM",
                    "CREDENTIALS_DIRECTORY", "DBUS_SESSION_BUS_ADDRESS", "NOTIFY_SOCKET", "WATCHDOG_USEC",
                    "WATCHDOG_PID", "LISTEN_FDS", "LISTEN_PID"):
            env.pop(key, None)
        env["HOME"] = f"{self.work}/home"
        env["GATE_RUNTIME_DIR"] = f"{self.work}/run"
        env["GATE_STATE_DIR"] = f"{self.work}/state"
        os.makedirs(env["HOME"], exist_ok=True)
        return env

    # ---- timers: everything the schedule does later (SIGCONT, restarts, button releases)

    def later(self, delay, action, what):
        heapq.heappush(self._timers, (time.monotonic() + delay, next(self._seq), action, what))

    def wait(self, seconds):
        """Sleeps `seconds`, running the timers that fall due meanwhile."""
        end = time.monotonic() + seconds
        while True:
            self.run_due_timers()
            now = time.monotonic()
            if now >= end:
                return
            next_due = self._timers[0][0] if self._timers else end
            time.sleep(max(0.0, min(end, next_due, now + 0.05) - now))

    def run_due_timers(self):
        while self._timers and self._timers[0][0] <= time.monotonic():
            _, _, action, _ = heapq.heappop(self._timers)
            action()

    @property
    def timers_pending(self):
        return bool(self._timers)

    # ---- the broker

    def start_broker(self):
        conf = f"{self.work}/mosquitto.conf"
        with open(conf, "w") as f:
            f.write(f"listener {self.broker_port} 127.0.0.1\nallow_anonymous true\npersistence false\nuser root\n")
        for _ in range(50):  # the port may linger a moment after a stop
            broker = Child("mosquitto", ["mosquitto", "-c", conf], self.env, f"{self.work}/mosquitto.out",
                           f"{self.work}/mosquitto.log")
            if wait_until(lambda: not broker.alive or _port_open(self.broker_port), 5) and broker.alive:
                self.broker = broker
                self.timeline.add("broker-up")
                return True
            broker.kill()
            time.sleep(0.1)
        raise RuntimeError("mosquitto did not start:\n" + read_text(f"{self.work}/mosquitto.log")[-2000:])

    def broker_healthy(self):
        return self.broker is not None and self.broker.alive and not self.broker.paused

    def stop_broker(self, number):
        """SIGTERM or SIGKILL; the broker is down until start_broker."""
        if self.broker is None:
            return
        self.timeline.add("broker-down", signal.Signals(number).name)
        self.broker.signal(number)
        self.resume(self.broker, "broker")
        if not self.broker.wait(5):
            self.broker.kill()
        self.broker = None

    def publish(self, topic, payload):
        """mosquitto_pub, bounded: a stopped broker keeps it waiting."""
        pub = Child("mosquitto_pub", ["mosquitto_pub", "-h", "127.0.0.1", "-p", str(self.broker_port), "-q", "0",
                                      "-t", topic, "-m", payload], self.env, "/dev/null", f"{self.work}/pub.err")
        self.extra_children.append(pub)
        if not pub.wait(3):
            pub.kill()
            return False
        return pub.returncode == 0

    # ---- the delay proxy between the simulator and the broker

    def set_delay(self, seconds):
        self.proxy.delay = seconds
        self.timeline.add("proxy-delay", f"{seconds}")

    # ---- the simulator

    def start_sim(self, fault):
        """Starts esp32-sim with `fault` on the run's UDP port."""
        argv = [f"{self.bin_dir}/esp32-sim", "--udp", f"127.0.0.1:{self.sim_port}", "--hold-ms", str(HOLD_MS),
                "--mqtt-host", "127.0.0.1", "--mqtt-port", str(self.proxy.port),
                "--trigger-log", f"{self.work}/triggers.jsonl"]
        if fault != "none":
            argv += ["--fault", fault]
        if self.protocol == 2:
            argv += ["--protocol", "2", "--key-file", f"1={self.key_file}"]
        out = f"{self.work}/sim.out"
        before = read_text(out).count("ready")
        sim = Child("esp32-sim", argv, self.env, out, f"{self.work}/sim.err")
        if not wait_until(lambda: not sim.alive or read_text(out).count("ready") > before, 15) or not sim.alive:
            sim.kill()
            self.sim = None
            self.timeline.add("sim-failed", fault)
            return False
        self.sim = sim
        self.fault = fault
        self.timeline.add("sim-up", fault)
        return True

    def stop_sim(self, number=signal.SIGTERM):
        if self.sim is None:
            return
        self.timeline.add("sim-down", signal.Signals(number).name)
        self.sim.signal(number)
        self.resume(self.sim, "sim")
        if not self.sim.wait(5):
            self.sim.kill()
        self.sim = None

    # ---- the configuration

    def write_config(self, config):
        """Replaced by rename, as an editor does: a reader never sees half a file."""
        with open(self.config_path + ".new", "w") as f:
            f.write(config.text(self.sim_port, self.broker_port, self.protocol))
        os.rename(self.config_path + ".new", self.config_path)
        self.config = config
        self.configs.append(config)
        self.timeline.add("config", config)

    # ---- the daemon

    @property
    def daemon(self):
        return self.daemons[-1] if self.daemons and self.daemons[-1].alive else None

    def start_daemon(self, wait_link=False, why="start"):
        log = f"{self.work}/daemon.log"
        before = read_text(log).count("daemon ready")
        daemon = Child("gate daemon", [f"{self.bin_dir}/gate", "daemon", "--config", self.config_path,
                                       "--button-events", self.fifo], self.env, f"{self.work}/daemon.out", log)
        self.daemons.append(daemon)
        ready = wait_until(lambda: not daemon.alive or read_text(log).count("daemon ready") > before, 20)
        if not ready or not daemon.alive:
            self.timeline.add("daemon-failed")
            return False
        self.timeline.add("daemon-up", why)
        try:
            self.baselines[daemon.pid] = (len(os.listdir(f"/proc/{daemon.pid}/fd")),
                                          len(os.listdir(f"/proc/{daemon.pid}/task")))
        except FileNotFoundError:
            pass
        self.button_broken = False
        if wait_link:
            wait_until(lambda: read_text(log).count("MQTT link up") > 0, 10)
        # Edges in the first 500 ms after start only settle the line.
        self.last_edge = max(self.last_edge, time.monotonic() + 0.6)
        return True

    def signal_daemon(self, number):
        daemon = self.daemon
        if daemon is None:
            return None
        if number in (signal.SIGTERM, signal.SIGKILL):
            self.daemon_killed.add(daemon.pid)
        daemon.signal(number)
        self.resume(daemon, "daemon")  # a stopped daemon would not see SIGTERM
        return daemon

    def resume(self, child, name):
        """SIGCONT after a stop or kill, so that a SIGTERM is seen; the timeline notes
        the end of a pause the schedule began."""
        child.signal(signal.SIGCONT, by_schedule=False)
        if child.paused:
            child.paused = False
            self.timeline.add(f"{name}-cont", f"{child.pid}")

    def restart_daemon(self, signalled=None):
        """Starts a daemon again, once the one the schedule stopped (`signalled`, a pid)
        has exited; nothing when another restart already brought a newer one (two kills
        in a row, each with its restart)."""
        old = self.daemons[-1] if self.daemons else None
        if signalled is not None and old is not None and old.pid != signalled:
            return
        if old is not None and old.alive:
            if not old.wait(self.config.opening_limit + 3):
                old.kill()
        self.start_daemon(why="restart")

    # ---- the button FIFO (16-byte struct gpioevent_data records)

    def write_fifo(self, data):
        try:
            fd = os.open(self.fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:
            return False  # nobody reads it: no daemon
        try:
            return os.write(fd, data) == len(data)
        except OSError:
            return False
        finally:
            os.close(fd)

    @staticmethod
    def edge(kind):
        """falling (2, pressed: active low) or rising (1), stamped now on CLOCK_MONOTONIC."""
        return struct.pack("<QI4x", time.clock_gettime_ns(time.CLOCK_MONOTONIC), kind)

    # ---- openers

    def open_cli(self, index, direct):
        label = f"s{index}-{'direct' if direct else 'plain'}"
        argv = [f"{self.bin_dir}/gate", "open", "--config", self.config_path, "--json", "--source", label]
        if direct:
            argv.append("--direct")
        opening = Opening(index, "direct" if direct else "plain", label, time.time(),
                          daemon_up=self.daemon is not None)
        opening.child = Child(label, argv, self.env, f"{self.work}/{label}.out", f"{self.work}/{label}.err")
        self.openings.append(opening)
        return opening

    def running_clis(self):
        return [o for o in self.openings if o.child is not None and o.child.alive]

    # ---- the end

    def close(self):
        for child in self.children():
            if child.alive:
                child.kill()
        if self.proxy is not None:
            self.proxy.close()

    def children(self):
        found = [o.child for o in self.openings if o.child is not None] + self.daemons
        return found + [c for c in (self.sim, self.broker) if c is not None] + self.extra_children


def _port_open(port):
    import socket

    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0
