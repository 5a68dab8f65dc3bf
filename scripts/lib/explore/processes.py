"""Child processes, each in a process group of its own, and the timeline they leave."""

import dataclasses
import os
import signal
import subprocess
import threading
import time


@dataclasses.dataclass
class Event:
    at: float  # time.time()
    kind: str  # e.g. "daemon-stop", "sim-up", "reload"
    detail: str = ""


class Timeline:
    """Everything the harness did or saw, with wall-clock times (the trigger log's clock)."""

    def __init__(self):
        self.events = []
        self._lock = threading.Lock()

    def add(self, kind, detail=""):
        with self._lock:
            self.events.append(Event(time.time(), kind, detail))

    def of(self, *kinds):
        with self._lock:
            return [e for e in self.events if e.kind in kinds]

    def intervals(self, starts, ends, until):
        """[(begin, end)] from each event of `starts` to the next of `ends` (or `until`)."""
        spans, begin = [], None
        for event in self.of(*(starts + ends)):
            if event.kind in starts and begin is None:
                begin = event.at
            elif event.kind in ends and begin is not None:
                spans.append((begin, event.at))
                begin = None
        if begin is not None:
            spans.append((begin, until))
        return spans

    def last_before(self, kind, at):
        found = None
        for event in self.of(kind):
            if event.at <= at:
                found = event
        return found


class Child:
    """A process started in a session of its own, so that a signal or a kill reaches it
    and anything it started; a thread notes the moment it exits."""

    def __init__(self, name, argv, env, stdout, stderr):
        self.name = name
        self.argv = argv
        self.started_at = time.time()
        self.exited_at = None
        self.returncode = None
        self.signalled = []  # (time, signal name) sent by the schedule
        self.paused = False  # SIGSTOPped by the schedule, not yet continued
        with open(stdout, "ab") as out, open(stderr, "ab") as err:
            self.popen = subprocess.Popen(
                argv, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True
            )
        self.pid = self.popen.pid
        self._done = threading.Event()
        threading.Thread(target=self._wait, daemon=True).start()

    def _wait(self):
        code = self.popen.wait()
        self.exited_at = time.time()
        self.returncode = code
        self._done.set()

    @property
    def alive(self):
        return not self._done.is_set()

    def wait(self, timeout):
        return self._done.wait(timeout)

    def signal(self, number, by_schedule=True):
        if not self.alive:
            return False
        try:
            os.killpg(self.pid, number)
        except ProcessLookupError:
            return False
        if by_schedule:
            self.signalled.append((time.time(), signal.Signals(number).name))
        return True

    def kill(self):
        """SIGKILL to the whole group, then reap (bounded)."""
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self._done.wait(5)


def free_port(kind="tcp"):
    """A port the kernel just gave out on loopback (tcp or udp)."""
    import socket

    with socket.socket(type=socket.SOCK_DGRAM if kind == "udp" else socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def read_text(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return ""


def wait_until(condition, timeout, step=0.02):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(step)
    return condition()
