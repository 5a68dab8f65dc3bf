"""One run: set the world up, play the steps, let everything end, collect what it left."""

import dataclasses
import datetime
import json
import os
import shutil
import subprocess
import tempfile
import time

from .processes import read_text
from .world import World


@dataclasses.dataclass
class DaemonEnd:
    """One daemon process as the run left it, before the harness killed anything."""
    child: object
    killed: bool  # the schedule sent it SIGTERM or SIGKILL
    alive: bool
    returncode: int
    fds: int
    threads: int
    baseline: tuple  # (fds, threads) once it was ready


@dataclasses.dataclass
class Outcome:
    """What a run left behind, for the checks."""
    openings: list
    activations: list  # [(time, via)]
    history: list  # [dict] with "begin" and "end" times added
    timeline: object
    configs: list
    daemons: list  # [DaemonEnd]
    status: dict  # `gate status --format json` at the end, or None
    log: list  # [(step index, step, what happened)]
    unfinished: list  # labels of CLIs that did not exit by themselves
    work: str
    began: float  # when the first step ran
    protocol: int  # 1, or 2 (signed frames: the relay itself fires once per frame)


def play(setup, steps, bin_dir, keep=False, verbose=False, protocol=1):
    """Runs `steps` in a fresh folder; returns an Outcome. The folder goes unless `keep`."""
    work = tempfile.mkdtemp(prefix="gate-explore-")
    world = None
    try:
        world = World(work, bin_dir, setup, protocol=protocol)
        world.start()
        log = []
        world.began = time.time()
        for index, step in enumerate(steps, 1):
            what = step.run(world, index)
            log.append((index, step, what))
            if verbose:
                print(f"    {index}. {step}: {what}", flush=True)
            world.wait(step.gap)
        unfinished = _let_openers_end(world)
        _settle(world)
        return _collect(world, log, unfinished)
    finally:
        if world is not None:
            world.close()
        if keep:
            print(f"    (run folder kept: {work})")
        else:
            shutil.rmtree(work, ignore_errors=True)


def _let_openers_end(world):
    """Runs the pending timers (every SIGCONT, every restart) and waits for every CLI."""
    limit = max(c.opening_limit for c in world.configs) + 15
    deadline = time.monotonic() + limit + 20
    while (world.timers_pending or world.running_clis()) and time.monotonic() < deadline:
        world.wait(0.05)
    unfinished = [o.label for o in world.running_clis()]
    for opening in world.running_clis():
        opening.child.kill()
    return unfinished


def _settle(world):
    """Waits until no opening is in flight and the trigger log has been quiet a while,
    then for the reset delay, so that the status can be judged."""
    triggers = f"{world.work}/triggers.jsonl"
    longest = max(c.opening_limit for c in world.configs)
    deadline = time.monotonic() + longest + 5
    quiet_since, seen = time.monotonic(), read_text(triggers)
    while time.monotonic() < deadline:
        time.sleep(0.1)
        now_text = read_text(triggers)
        if now_text != seen:
            seen, quiet_since = now_text, time.monotonic()
        status = gate_status(world) or {}
        if status.get("state") not in ("triggering", "waiting_for_relay_close") and \
                time.monotonic() - quiet_since > 1.0:
            break
    # Ready again within the longest reset delay of the run, with room for a loaded machine.
    end = time.monotonic() + max(c.reset_delay for c in world.configs) + 3
    while time.monotonic() < end and (gate_status(world) or {}).get("state") != "ready":
        time.sleep(0.1)


def gate_status(world):
    try:
        run = subprocess.run([f"{world.bin_dir}/gate", "status", "--format", "json", "--config", world.config_path],
                             env=world.env, capture_output=True, text=True, timeout=10)
        return json.loads(run.stdout)
    except (subprocess.TimeoutExpired, ValueError):
        return None


def _collect(world, log, unfinished):
    for opening in world.openings:
        child = opening.child
        if child is not None:
            opening.exit_code = child.returncode
            opening.gone = child.exited_at
            opening.stdout = read_text(f"{world.work}/{opening.label}.out")
            opening.stderr = read_text(f"{world.work}/{opening.label}.err")
            try:
                opening.json = json.loads(opening.stdout)
            except ValueError:
                opening.json = None
    daemons = []
    for daemon in world.daemons:
        alive = daemon.alive
        fds, threads = _proc_counts(daemon.pid) if alive else (None, None)
        daemons.append(DaemonEnd(daemon, daemon.pid in world.daemon_killed, alive, daemon.returncode, fds, threads,
                                 world.baselines.get(daemon.pid)))
    return Outcome(world.openings, _activations(world.work), _history(world.work), world.timeline, world.configs,
                   daemons, gate_status(world), log, unfinished, world.work, world.began, world.protocol)


def _proc_counts(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/fd")), len(os.listdir(f"/proc/{pid}/task"))
    except FileNotFoundError:
        return None, None


def wall(text):
    """`2026-11-21T10:00:00.123Z` -> seconds since the epoch."""
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()


def _activations(work):
    found = []
    for line in read_text(f"{work}/triggers.jsonl").splitlines():
        record = json.loads(line)
        found.append((wall(record["at"]), record["via"]))
    return found


def _history(work):
    entries = []
    for line in read_text(f"{work}/state/history.jsonl").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        entry["end"] = wall(entry["at"])
        entry["begin"] = entry["end"] - entry["duration_ms"] / 1000
        entries.append(entry)
    return entries
