"""The schedule: one dataclass per step kind, and the generator that draws a run from a seed.

A step's fields are all drawn from the seed, so that a seed (and a prefix of its steps)
replays the same actions; what a step finds when it runs (no daemon to press the button
of, a broker that is down) decides only whether it is skipped, and the log says so.
"""

import dataclasses
import random
import signal
import time

from .world import HA_COMMAND_TOPIC, STATUS_TOPIC, Config, Opening

FAULTS = ["none", "udp:silent", "silent", "udp-off", "udp:no-release", "no-release", "slow-release",
          "udp:garbage", "duplicate", "mqtt:silent", "mqtt-off"]
FAULT_WEIGHTS = [24, 25, 8, 21, 5, 4, 4, 3, 3, 3, 2]
UDP_TIMEOUTS = [0.8, 1.0, 1.5]
MQTT_TIMEOUTS = [1.5, 2.0, 3.0]
RESET_DELAYS = [0.3, 0.5, 1.0]
COOLDOWNS = [0, 0, 0, 0, 0.3, 1.0]
DELAYS = [0.0, 0.15, 0.3, 0.5]


@dataclasses.dataclass(frozen=True)
class Setup:
    config: Config
    fault: str
    delay: float

    def __str__(self):
        c = self.config
        return (f"setup: udp.timeout={c.udp_timeout} mqtt.timeout={c.mqtt_timeout} reset_delay={c.reset_delay} "
                f"cooldown={c.cooldown}, sim fault {self.fault}, MQTT delay {self.delay} s")


@dataclasses.dataclass(frozen=True)
class OpenCLI:
    """`gate open --json` (to the daemon if one answers, else by itself), or with --direct."""
    direct: bool
    gap: float

    def run(self, world, index):
        world.open_cli(index, self.direct)
        return "started"

    def __str__(self):
        return "gate open --direct" if self.direct else "gate open"


@dataclasses.dataclass(frozen=True)
class PressButton:
    gap: float

    def run(self, world, index):
        if world.daemon is None or world.button_broken:
            return "skipped: no daemon reads the button" if world.daemon is None else "skipped: stream broken"
        # A finger's press: at least 200 ms after the last edge (past the debounce lockout).
        world.wait(max(0.0, world.last_edge + 0.2 - time.monotonic()))
        asked = time.time()
        if not world.write_fifo(world.edge(2)):
            return "skipped: the FIFO has no reader"
        world.last_edge = time.monotonic() + 0.12
        world.openings.append(Opening(index, "button", "button", asked, daemon_up=True))
        world.later(0.12, lambda: world.write_fifo(world.edge(1)), "button release")
        return "pressed"

    def __str__(self):
        return "button press (FIFO)"


@dataclasses.dataclass(frozen=True)
class PressHA:
    gap: float

    def run(self, world, index):
        if world.broker is None:
            return "skipped: the broker is down"
        opening = Opening(index, "ha", "homeassistant", time.time(), daemon_up=world.daemon is not None)
        world.openings.append(opening)
        if not world.publish(HA_COMMAND_TOPIC, "PRESS"):
            return "published (mosquitto_pub did not finish: the broker is stopped)"
        return "published"

    def __str__(self):
        return "Home Assistant press (PRESS on its command topic)"


@dataclasses.dataclass(frozen=True)
class Reload:
    changes: tuple  # ((key, value), ...)

    gap: float

    def run(self, world, index):
        world.write_config(dataclasses.replace(world.config, **dict(self.changes)))
        world.timeline.add("reload", str(self))
        daemon = world.daemon
        if daemon is not None:
            daemon.signal(signal.SIGHUP, by_schedule=False)
        return "file rewritten" + (", SIGHUP" if daemon else " (no daemon)")

    def __str__(self):
        return "reload " + ", ".join(f"{_key(k)}={v}" for k, v in self.changes)


@dataclasses.dataclass(frozen=True)
class Pause:
    """SIGSTOP, then SIGCONT after `seconds` (for the daemon maybe past a client's limit)."""
    target: str  # daemon, broker, sim, cli
    seconds: float
    past_limit: bool
    gap: float

    def run(self, world, index):
        child = _target(world, self.target)
        if child is None or child.paused:
            return f"skipped: no running {self.target}" if child is None else "skipped: already stopped"
        seconds = self.seconds + (world.config.opening_limit if self.past_limit else 0)
        child.signal(signal.SIGSTOP)
        child.paused = True
        world.timeline.add(f"{self.target}-stop", f"{child.pid}")

        def resume():
            if child.alive and child.paused:
                child.signal(signal.SIGCONT)
                world.timeline.add(f"{self.target}-cont", f"{child.pid}")
            child.paused = False

        world.later(seconds, resume, f"SIGCONT {self.target}")
        return f"{child.name} (pid {child.pid}) stopped for {seconds:.1f} s"

    def __str__(self):
        limit = "the client's limit + " if self.past_limit else ""
        return f"SIGSTOP {self.target}, SIGCONT after {limit}{self.seconds:.1f} s"


@dataclasses.dataclass(frozen=True)
class Kill:
    """SIGTERM or SIGKILL; daemon, broker and simulator may come back after `restart_after`."""
    target: str  # daemon, broker, sim, cli
    signal: str  # TERM, KILL
    restart_after: float  # None: stays down
    gap: float

    def run(self, world, index):
        number = signal.SIGTERM if self.signal == "TERM" else signal.SIGKILL
        if self.target == "cli":
            return _kill_cli(world, number)
        if self.target == "daemon":
            daemon = world.signal_daemon(number)
            if daemon is None:
                return "skipped: no daemon"
            world.timeline.add(f"daemon-{self.signal.lower()}", f"{daemon.pid}")
            if self.restart_after is not None:
                world.later(self.restart_after, lambda pid=daemon.pid: world.restart_daemon(pid), "daemon restart")
            return f"daemon pid {daemon.pid} signalled"
        if self.target == "broker":
            if world.broker is None:
                return "skipped: the broker is down"
            world.stop_broker(number)
            world.later(self.restart_after, lambda: world.broker is None and world.start_broker(),
                        "broker start")
            return "broker down"
        if world.sim is None:
            return "skipped: the simulator is down"
        fault = world.fault
        world.stop_sim(number)
        world.later(self.restart_after, lambda: _restart_sim(world, fault), "simulator start")
        return "simulator down"

    def __str__(self):
        back = "" if self.target == "cli" else (
            ", stays down" if self.restart_after is None else f", back after {self.restart_after:.1f} s")
        return f"SIG{self.signal} {self.target}{back}"


@dataclasses.dataclass(frozen=True)
class SimFault:
    """The simulator restarted on the same ports with another --fault."""
    fault: str
    gap: float

    def run(self, world, index):
        if not world.broker_healthy():
            return "skipped: the broker is not running (the simulator needs it to start)"
        world.stop_sim()
        return "restarted" if world.start_sim(self.fault) else "did not start"

    def __str__(self):
        return f"simulator fault {self.fault}"


@dataclasses.dataclass(frozen=True)
class Delay:
    """The delay proxy between the simulator and the broker."""
    seconds: float
    gap: float

    def run(self, world, index):
        world.set_delay(self.seconds)
        return "set"

    def __str__(self):
        return f"MQTT delay {self.seconds} s (simulator <-> broker)"


@dataclasses.dataclass(frozen=True)
class Forge:
    """Someone else publishes on the ESP32's status topic: no relay moves."""
    payloads: tuple
    gap: float

    def run(self, world, index):
        for payload in self.payloads:
            world.timeline.add("forge", payload)
            world.publish(STATUS_TOPIC, payload)
            world.wait(0.1)
        return "published"

    def __str__(self):
        return "forged status " + " ".join(self.payloads)


@dataclasses.dataclass(frozen=True)
class BreakButton:
    """5 bytes, not a whole 16-byte gpioevent_data record, into the button FIFO."""
    gap: float

    def run(self, world, index):
        if world.daemon is None:
            return "skipped: no daemon"
        world.button_broken = True
        world.timeline.add("button-error")
        return "written" if world.write_fifo(b"\0" * 5) else "skipped: the FIFO has no reader"

    def __str__(self):
        return "button stream error (5 bytes into the FIFO)"


def _key(field):
    return {"udp_timeout": "udp.timeout", "mqtt_timeout": "mqtt.timeout", "reset_delay": "runtime.reset_delay",
            "cooldown": "runtime.cooldown"}[field]


def _target(world, name):
    if name == "daemon":
        return world.daemon
    if name == "broker":
        return world.broker
    if name == "sim":
        return world.sim
    running = world.running_clis()
    return running[-1].child if running else None


def _kill_cli(world, number):
    running = world.running_clis()
    if not running:
        return "skipped: no gate open running"
    opening = running[-1]
    opening.killed = True
    opening.child.signal(number)
    world.timeline.add("cli-signal", opening.label)
    world.resume(opening.child, "cli")
    return f"{opening.label} signalled"


def _restart_sim(world, fault):
    if world.sim is not None:
        return
    if not world.broker_healthy():
        world.later(0.5, lambda: _restart_sim(world, fault), "simulator start")
        return
    world.start_sim(fault)


# ---- the generator

STEP_WEIGHTS = {
    "open_plain": 18, "open_direct": 8, "button": 7, "ha": 7, "reload": 20, "pause": 9, "kill": 7,
    "sim_fault": 8, "delay": 4, "forge": 4, "break_button": 2,
}


def gap(rng):
    """Mostly short gaps, so that steps land inside openings; sometimes a pause."""
    r = rng.random()
    if r < 0.5:
        return round(rng.uniform(0.02, 0.25), 2)
    if r < 0.85:
        return round(rng.uniform(0.3, 1.2), 2)
    return round(rng.uniform(1.2, 3.0), 2)


def draw_reload(rng):
    choices = {
        "udp_timeout": lambda: rng.choice(UDP_TIMEOUTS + [2.5, 8.0]),
        "mqtt_timeout": lambda: rng.choice(MQTT_TIMEOUTS + [1.0]),
        "reset_delay": lambda: rng.choice(RESET_DELAYS),
        "cooldown": lambda: rng.choice(COOLDOWNS),
    }
    keys = rng.sample(sorted(choices), rng.choice([1, 1, 2]))
    if "mqtt_timeout" not in keys and rng.random() < 0.6:
        keys.append("mqtt_timeout")
    return tuple((k, choices[k]()) for k in sorted(keys))


def draw_step(rng):
    kind = rng.choices(list(STEP_WEIGHTS), weights=list(STEP_WEIGHTS.values()))[0]
    g = gap(rng)
    if kind in ("open_plain", "open_direct"):
        return OpenCLI(kind == "open_direct", g)
    if kind == "button":
        return PressButton(g)
    if kind == "ha":
        return PressHA(g)
    if kind == "reload":
        return Reload(draw_reload(rng), g)
    if kind == "pause":
        target = rng.choices(["daemon", "broker", "sim", "cli"], weights=[45, 20, 20, 15])[0]
        if target == "daemon" and rng.random() < 0.5:
            return Pause(target, round(rng.uniform(1.5, 3.5), 1), True, g)
        return Pause(target, round(rng.uniform(0.2, 2.0), 1), False, g)
    if kind == "kill":
        target = rng.choices(["daemon", "cli", "broker", "sim"], weights=[40, 30, 15, 15])[0]
        sig = rng.choice(["TERM", "TERM", "KILL"])
        # The broker and the simulator always come back; a daemon sometimes stays down.
        restart = None if target == "cli" or (target == "daemon" and rng.random() < 0.25) else round(
            rng.uniform(0.3, 3.0), 1)
        return Kill(target, sig, restart, g)
    if kind == "sim_fault":
        return SimFault(rng.choices(FAULTS, weights=FAULT_WEIGHTS)[0], g)
    if kind == "delay":
        return Delay(rng.choice(DELAYS), g)
    if kind == "forge":
        return Forge(tuple(rng.choice([["1"], ["1", "0"], ["0"]])), g)
    return BreakButton(g)


def schedule(seed):
    """(setup, steps) for a seed: the same seed always gives the same schedule."""
    rng = random.Random(seed)
    config = Config(rng.choice(UDP_TIMEOUTS), rng.choice(MQTT_TIMEOUTS), rng.choice(RESET_DELAYS),
                    rng.choice(COOLDOWNS))
    setup = Setup(config, rng.choices(FAULTS, weights=FAULT_WEIGHTS)[0], rng.choice(DELAYS))
    steps = [draw_step(rng) for _ in range(rng.randint(4, 10))]
    return setup, steps
