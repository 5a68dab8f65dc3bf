"""The first promise, checked on what a run left behind.

Attribution: an activation in the simulator's trigger log belongs to an opening whose
window holds it. A window runs from the moment the opening was asked for to the
moment its opener ended (a CLI's exit, the daemon's history entry for a button or
Home Assistant press), plus the time a trigger already sent can take to arrive:
0.3 s, the proxy's delay, and while the simulator or the broker was stopped, until
shortly after it resumed. Each opening may own at most one activation (two only when
the status topic was blind during its UDP attempt, which the contract allows to fall
back), none when it ended 69 or was refused; an exit 0 must own one. The checks look
for one attribution that satisfies all of this; only when none exists is there a
violation, named by the first rule no attribution can keep.
"""

import dataclasses

from .world import HOLD_MS, SLOW_RELEASE_HOLD, fault_modes

SLACK = 0.3  # a trigger sent before its opener ended reaches the simulator within this
ERROR_CODES = {"allAdaptersFailed": 69, "udpConnectionFailed": 69, "mqttConnectionFailed": 69,
               "invalidResponse": 76, "operationInProgress": 75, "configurationMissing": 78,
               "operationTimeout": 124}
OUTCOME_OF_CODE = {0: "success", 124: "timeout", 69: "error", 76: "error", 75: "error", 78: "error"}


@dataclasses.dataclass
class Violation:
    rule: str
    text: str

    def __str__(self):
        return f"{self.rule}: {self.text}"


@dataclasses.dataclass
class Claim:
    """An opening as the checks see it."""
    opening: object
    code: int  # exit code, or the daemon's outcome as one; None when unknown
    began: bool
    start: float
    end: float  # when its opener ended (without the slack)
    capacity: int
    required: bool  # it claims a complete cycle
    notes: list
    adapter: object = None  # with `required`: the adapter it names (--json, history)


def check(outcome):
    facts = Facts(outcome)
    claims = [facts.claim(o) for o in outcome.openings]
    # The first promise first: the summary line names the first violation.
    violations = attribute(facts, claims)
    violations += facts.orphan_entries
    violations += check_history(facts, claims)
    violations += check_json(claims)
    violations += check_end(outcome)
    return violations, claims


class Facts:
    """The run's timeline, asked the questions the rules need."""

    def __init__(self, outcome):
        self.outcome = outcome
        self.timeline = outcome.timeline
        self.until = max([e.at for e in self.timeline.events] + [a for a, _ in outcome.activations] + [0]) + 60
        self.orphan_entries = self._match_history()

    def spans(self, name):
        """When `name` (sim, broker, daemon) was stopped or down."""
        down = {"sim": (["sim-down", "sim-failed"], ["sim-up"]), "broker": (["broker-down"], ["broker-up"])}
        spans = self.timeline.intervals([f"{name}-stop"], [f"{name}-cont"], self.until)
        if name in down:
            spans += self.timeline.intervals(down[name][0], down[name][1], self.until)
        return spans

    def overlaps(self, name, start, end):
        return any(b <= end and e >= start for b, e in self.spans(name))

    def events_in(self, kinds, start, end):
        return [e for e in self.timeline.of(*kinds) if start <= e.at <= end]

    def fault_at(self, at):
        event = self.timeline.last_before("sim-up", at)
        return event.detail if event else "none"

    def faults_during(self, start, end):
        faults = {self.fault_at(start)}
        faults.update(e.detail for e in self.events_in(["sim-up"], start, end))
        return faults

    def delay_during(self, start, end):
        first = self.timeline.last_before("proxy-delay", start)
        values = [float(first.detail) if first else 0.0]
        values += [float(e.detail) for e in self.events_in(["proxy-delay"], start, end)]
        return max(values)

    # A reload takes effect when the daemon has read the file after its SIGHUP: an opening
    # asked for this soon after it may still run with the configuration before.
    RELOAD_LATENCY = 1.0

    def configs_during(self, start, end):
        """The configurations in force at some moment of [start, end]."""
        first = self.timeline.last_before("config", start - self.RELOAD_LATENCY)
        found = [first.detail] if first else []
        return found + [e.detail for e in self.events_in(["config"], start - self.RELOAD_LATENCY, end)]

    def hold(self, at, via):
        udp, mqtt = fault_modes(self.fault_at(at))
        return SLOW_RELEASE_HOLD if (udp if via == "udp" else mqtt) == "slow-release" else HOLD_MS / 1000

    def _match_history(self):
        """Gives each opening its history entries: a CLI's by its unique --source, a press's
        by order (the latest press asked for before the entry's opening began)."""
        violations = []
        by_label = {o.label: o for o in self.outcome.openings if o.child is not None}
        for entry in self.outcome.history:
            source = entry["source"]
            if source in by_label:
                by_label[source].history.append(entry)
            elif source in ("button", "homeassistant"):
                kind = "button" if source == "button" else "ha"
                free = [o for o in self.outcome.openings
                        if o.kind == kind and not o.history and o.asked <= entry["begin"] + 0.02]
                if free:
                    free[-1].history.append(entry)
                else:
                    violations.append(Violation("history", f"an entry for a {source} opening that nobody asked "
                                                           f"for: {_entry(entry)}"))
            elif source != "elsewhere":
                violations.append(Violation("history", f"an entry of no opening: {_entry(entry)}"))
        return violations

    def daemon_death(self, after):
        """When the daemon that ran at `after` exited during the run, if it did (the
        harness's own kill at the end does not count)."""
        for end in self.outcome.daemons:
            daemon = end.child
            if not end.alive and daemon.started_at <= after <= (daemon.exited_at or 0):
                return daemon.exited_at
        return None

    def claim(self, opening):
        entry = opening.history[-1] if opening.history else None
        notes = []
        if opening.child is not None:
            code = None if opening.killed else opening.exit_code
            end = opening.gone or opening.asked
            # A gate open the schedule killed may have sent its trigger: undecided, so allowed.
            began = entry is not None or code in (0, 124, 76) or opening.killed
            if opening.killed and entry is not None:
                end = max(end, entry["end"])  # the daemon finishes what a killed client handed over
            if opening.killed:
                notes.append("the schedule signalled this gate open: its exit says nothing")
        elif entry is not None:
            code = 0 if entry["outcome"] == "success" else ERROR_CODES.get(entry["error"], 124)
            began, end = True, entry["end"]
        else:
            death = self.daemon_death(opening.asked)
            code, began, end = None, death is not None, death or opening.asked
            if death is not None:
                notes.append("the daemon exited before any record of this press")
        capacity = 0 if code in (69, 75, 78, 64) or not began else 1
        # Protocol v2: the fallback carries the same frame, which the relay fires once.
        if capacity and self.outcome.protocol == 1 and self.blind(opening.asked, end):
            capacity = 2
            notes.append("the status topic was blind during it: a fallback after a UDP trigger is allowed")
        # Under v1 a forged `1`-`0` on the status topic can pass for a cycle, and so can the
        # late status of an earlier cycle (status messages carry no identity): reaching the
        # broker after that cycle's opener ended, it can arrive after this trigger. Under v2
        # only signed replies count, so every success owns a cycle.
        forged = self.outcome.protocol == 1 and (self.events_in(["forge"], opening.asked - 2, end)
                                                 or self.late_status_during(opening.asked))
        if forged and not self.events_in(["forge"], opening.asked - 2, end):
            notes.append("an earlier cycle's status could still arrive in it: v1 cannot tell it from its own")
        required = code == 0 and not forged
        named = None
        if required:
            source = opening.json if isinstance(opening.json, dict) else entry
            named = (source or {}).get("adapter")
            # When two triggers left (a fallback after a blind UDP attempt), a cycle seen
            # after both is either's: v1 cannot tell which one the relay took.
            sent = [a for a in (source or {}).get("attempts") or [] if a.get("trigger_sent")]
            # Under v2 the fallback carries the same frame: the relay fires on the first
            # copy and the adapter that confirmed the cycle is named (a history entry
            # does not say whether a second copy left).
            unlisted = "attempts" not in (source or {})
            if len(sent) > 1 or (unlisted and (capacity == 2 or self.outcome.protocol == 2)):
                named = None
        return Claim(opening, code, began, opening.asked, end, capacity, required, notes, named)

    def late_status_during(self, start):
        """An activation before `start` whose `1`/`0` may still reach an opener after it:
        published after the hold, delayed by the proxy (and held while the broker or the
        simulator was stopped), with the daemon's 1.5 s echo window as slack."""
        for at, via in self.outcome.activations:
            if at >= start:
                continue
            delay = self.delay_during(at, start)
            if at + self.hold(at, via) + delay + 0.5 >= start or \
                    self.overlaps("broker", at, start) or self.overlaps("sim", at, start):
                return True
        return False

    def blind(self, start, end):
        """No status message could reach an opener: the contract then allows a fallback."""
        if any(fault_modes(f)[1] in ("silent", "off") for f in self.faults_during(start, end)):
            return True
        return self.overlaps("broker", start, end) or self.overlaps("sim", start, end)

    def clean(self, claim):
        """Nothing but the daemon's own doing can have hidden the cycle from its warm link."""
        start, end = claim.start, claim.end
        if any(fault_modes(f)[1] != "none" or fault_modes(f)[0] in ("garbage", "duplicate", "slow-release")
               for f in self.faults_during(start, end)):
            return False
        # The setup's own starts are not disturbances: the run began with every link up.
        since = max(start - 5, self.outcome.began)
        if self.events_in(["forge"], start - 2, end) or self.events_in(["broker-down", "broker-up"], since, end):
            return False
        if [e for e in self.events_in(["daemon-up"], start - 2, end) if e.detail == "restart"]:
            return False  # its warm link may not be up yet
        stops = ("daemon-stop", "daemon-term", "daemon-kill", "cli-signal", "cli-stop", "button-error")
        if self.events_in(stops, start - 0.5, end):
            return False
        return not any(self.overlaps(n, start - 0.5, end) for n in ("sim", "broker", "daemon"))

    def window_end(self, claim, via):
        """The last moment an activation of `via` can still come from this opening."""
        end = claim.end + SLACK + self.delay_during(claim.start, claim.end)
        names = ["sim"] + (["broker"] if via == "mqtt" else [])
        for name in names:
            for b, e in self.spans(name):
                if b <= claim.end and e >= claim.start:
                    end = max(end, e + 0.5 + self.delay_during(claim.start, e))
        return end


def _entry(entry):
    return (f"{entry['source']} {entry['outcome']} error={entry['error']} adapter={entry['adapter']} "
            f"ended {entry['at']}")


def check_history(facts, claims):
    """One entry per opening that began, with the outcome its opener reported."""
    violations = []
    for claim in claims:
        o = claim.opening
        if o.child is None:
            continue
        entries = o.history
        if len(entries) > 1:
            violations.append(Violation("history", f"{o.describe()} has {len(entries)} entries: "
                                                   + "; ".join(_entry(e) for e in entries)))
            continue
        if claim.code is None:
            continue
        # A client that lost its daemon (stopped, killed) says 124; the daemon may still
        # finish the opening and record what it saw: both are true.
        lost = claim.code == 124 and ("handed to the daemon" in (o.json or {}).get("message", "")
                                      or any(e["end"] > claim.end + 0.2 for e in entries))
        # A 75 after the opening began (its --json lists attempts: the ESP32's signed busy
        # under v2, or a relay seen active after the lock) is an opening with its entry;
        # refused before it began (lock, cooldown), it has none.
        began = bool((o.json or {}).get("attempts"))
        expected = {0: 1, 124: 1, 76: 1}.get(claim.code, 0) or int(claim.code == 75 and began)
        if not entries and expected and not lost:
            violations.append(Violation("history", f"{o.describe()} exited {claim.code} but left no history entry"))
        if entries and claim.code in (75, 78) and not began:
            violations.append(Violation("history", f"{o.describe()} was refused ({claim.code}) but has an entry: "
                                                   f"{_entry(entries[0])}"))
        if entries and not lost and claim.code in OUTCOME_OF_CODE and \
                entries[0]["outcome"] != OUTCOME_OF_CODE[claim.code]:
            violations.append(Violation("history", f"{o.describe()} exited {claim.code} but its history says "
                                                   f"{_entry(entries[0])}"))
        if entries and o.kind == "plain" and entries[0]["begin"] > claim.end + 1.0:
            violations.append(Violation(
                "began after its opener gave up",
                f"{o.describe()} ended (exit {claim.code}) at {_t(claim.end)}; the daemon began its opening "
                f"{entries[0]['begin'] - claim.end:.1f} s later ({_entry(entries[0])})"))
    return violations


def check_json(claims):
    violations = []
    for claim in claims:
        o = claim.opening
        if o.child is None or claim.code is None or claim.code == 64:
            continue
        if not isinstance(o.json, dict) or "outcome" not in o.json:
            violations.append(Violation("json", f"{o.describe()} exited {claim.code} without one JSON object: "
                                                f"{o.stdout[:300]!r}"))
            continue
        outcome, adapter = o.json.get("outcome"), o.json.get("adapter")
        if OUTCOME_OF_CODE.get(claim.code, "error") != outcome:
            violations.append(Violation("json", f"{o.describe()} exited {claim.code} with outcome {outcome}"))
        if claim.code == 0 and adapter not in ("udp", "mqtt"):
            violations.append(Violation("json", f"{o.describe()} exited 0 naming adapter {adapter!r}"))
        if claim.code == 69 and adapter is not None:
            violations.append(Violation("json", f"{o.describe()} exited 69 naming adapter {adapter!r}"))
    return violations


def attribute(facts, claims):
    """Finds an attribution of every activation, or says which rule none can keep."""
    activations = facts.outcome.activations
    candidates = [[c for c in claims if c.start - 0.05 <= at <= facts.window_end(c, via)] for at, via in activations]
    owner = _solve(claims, activations, candidates)
    if owner is None:
        return [_diagnose(facts, claims, activations, candidates)]
    return unconfirmed(facts, claims, activations, candidates)


def _solve(claims, activations, candidates):
    """Backtracking: each activation to one candidate within its capacity (a second one
    only as the MQTT fallback after a UDP trigger); every claim of a complete cycle owns
    one. None when impossible."""
    owned = {id(c): [] for c in claims}
    owner = [None] * len(activations)

    def fits(claim, via):
        mine = owned[id(claim)]
        if len(mine) >= claim.capacity:
            return False
        return not mine or (activations[mine[0]][1] == "udp" and via == "mqtt")

    def place(i):
        if i == len(activations):
            # A success owns a cycle, and names the adapter whose trigger cycled the relay
            # (the last it owns: the fallback's, when a blind UDP attempt also cycled it).
            return all(owned[id(c)] and (c.adapter is None or activations[owned[id(c)][-1]][1] == c.adapter)
                       for c in claims if c.required)
        for c in candidates[i]:
            if fits(c, activations[i][1]):
                owned[id(c)].append(i)
                owner[i] = c
                if place(i + 1):
                    return True
                owned[id(c)].pop()
        return False

    return list(owner) if place(0) else None


def _diagnose(facts, claims, activations, candidates):
    for (at, via), found in zip(activations, candidates):
        if not found:
            return Violation("activation nobody asked for", _orphan(facts, claims, at, via))
        if all(c.capacity == 0 for c in found):
            c = next((c for c in found if c.code == 69), found[-1])  # 69 promised the most
            return Violation(f"activation in an opening that ended {c.code}" if c.code else
                             "activation in an opening that never began",
                             f"relay activated at {_t(at)} via {via}, within only {_claims(found)}")
    crowded = _crowded(claims, activations, candidates)
    if crowded:
        group, mine = crowded
        allowed = sum(c.capacity for c in group)
        group = [c for c in group if c.capacity] or group  # refused ones are named elsewhere
        return Violation("more than one activation for one opening" if len(group) == 1 else
                         "more activations than openings",
                         f"{len(mine)} activations (" + ", ".join(f"{_t(at)} via {via}" for at, via in mine)
                         + f") that only {_claims(group)} can have caused, which allow at most {allowed}"
                         + _context(facts, group[0]))
    for claim in claims:
        mine = [a for a, found in zip(activations, candidates) if found == [claim]]
        if len(mine) == 2 and [via for _, via in mine] != ["udp", "mqtt"]:
            return Violation("more than one activation for one opening",
                             f"{_claim(claim)}: " + ", ".join(f"{_t(at)} via {via}" for at, via in mine)
                             + " (two, and not the MQTT fallback after a UDP trigger)" + _context(facts, claim))
    for claim in claims:
        if claim.required and not any(claim in found for found in candidates):
            return Violation("exit 0 without a relay activation", f"{_claim(claim)}: no activation in its window")
    for claim in claims:
        if claim.required and claim.adapter and \
                not any(claim in found and via == claim.adapter for (_, via), found in zip(activations, candidates)):
            vias = [f"{_t(at)} via {via}" for (at, via), found in zip(activations, candidates) if claim in found]
            return Violation("success naming an adapter that did not cycle the relay",
                             f"{_claim(claim)} names {claim.adapter}; the relay cycled in its window only "
                             + ", ".join(vias))
    listing = "; ".join(f"{_t(at)} via {via} -> {_claims(found)}" for (at, via), found in zip(activations, candidates))
    return Violation("no consistent attribution", listing)


def _crowded(claims, activations, candidates):
    """The smallest group of openings that more activations can only belong to than the
    group may own (Hall's condition), with those activations; None if there is none."""
    import itertools

    involved = [c for c in claims if any(c in found for found in candidates)]
    for size in range(1, min(len(involved), 8) + 1):
        for group in itertools.combinations(involved, size):
            mine = [a for a, found in zip(activations, candidates) if found and all(c in group for c in found)]
            if len(mine) > sum(c.capacity for c in group):
                return list(group), mine
    return None


def unconfirmed(facts, claims, activations, candidates):
    """124 from the daemon although the cycle completed, on a path nothing disturbed, well
    inside the budget: the daemon's warm link watched the status topic all along. The
    budget is the smallest the trigger's adapter had (`udp.timeout` or `mqtt.timeout`).
    Protocol v1 only: under v2 the plain status topic confirms nothing, and a cycle whose
    signed `0x91` was lost is confirmed by the next copy's answer, within that budget."""
    violations = []
    if facts.outcome.protocol == 2:
        return violations
    for claim in claims:
        o = claim.opening
        if claim.code != 124 or o.kind == "direct" or (o.kind == "plain" and not o.history):
            continue
        mine = [(at, via) for (at, via), found in zip(activations, candidates) if found == [claim]]
        if len(mine) != 1 or not facts.clean(claim):
            continue
        at, via = mine[0]
        budget = min(getattr(c, f"{via}_timeout") for c in facts.configs_during(claim.start, claim.end))
        horizon = max(claim.end, claim.start + budget)
        if len([a for a, _ in activations if claim.start <= a <= horizon]) != 1:
            continue
        seen_by = at + facts.hold(at, via) + facts.delay_during(claim.start, claim.end)
        if seen_by <= horizon - 0.2:
            violations.append(Violation(
                "completed cycle reported 124",
                f"{_claim(claim)}: the relay activated at {_t(at)} via {via} and released by {_t(seen_by)} "
                f"(published on an undisturbed status topic), {horizon - seen_by:.1f} s before the end of its "
                f"{via} budget or of the opening" + _context(facts, claim)))
    return violations


def check_end(outcome):
    """The status is ready after the reset delay; each daemon the schedule did not stop is
    alive, with fds and threads bounded; every gate open ended by itself."""
    violations = []
    if outcome.status is None or outcome.status.get("state") != "ready":
        violations.append(Violation("status not ready after the reset delay", f"gate status says {outcome.status}"))
    for end in outcome.daemons:
        if end.killed:
            continue
        if not end.alive:
            violations.append(Violation("daemon exited by itself", f"pid {end.child.pid} exited {end.returncode} "
                                                                   f"at {_t(end.child.exited_at)}"))
            continue
        base_fds, base_threads = end.baseline or (None, None)
        if end.fds is not None and base_fds is not None and (end.fds > base_fds + 16 or
                                                              end.threads > base_threads + 12):
            violations.append(Violation("daemon resources", f"pid {end.child.pid}: {end.fds} fds (at start "
                                                            f"{base_fds}), {end.threads} threads (at start "
                                                            f"{base_threads})"))
    for label in outcome.unfinished:
        violations.append(Violation("gate open never ended", f"{label} was still running long past its limit"))
    return violations


def _orphan(facts, claims, at, via):
    before = [c for c in claims if c.end <= at]
    text = f"relay activated at {_t(at)} via {via}, outside every opening's window"
    if before:
        last = max(before, key=lambda c: c.end)
        text += f"; the last opening to end before it was {_claim(last)}, {at - last.end:.1f} s earlier"
    resumed = facts.events_in(["daemon-cont", "daemon-up"], at - 3, at)
    if resumed:
        text += f"; the daemon resumed/started {at - resumed[-1].at:.2f} s before it ({resumed[-1].kind})"
    return text


def _context(facts, claim):
    events = facts.events_in(["reload", "daemon-stop", "daemon-cont", "daemon-term", "daemon-kill", "sim-up",
                              "broker-down", "broker-up", "proxy-delay", "forge", "button-error"],
                             claim.start - 0.5, claim.end)
    faults = ", ".join(sorted(facts.faults_during(claim.start, claim.end)))
    text = f"; simulator fault {faults}"
    if events:
        text += "; during it: " + ", ".join(f"{e.kind} {e.detail} at +{e.at - claim.start:.2f} s" for e in events)
    return text


def _claim(claim):
    o = claim.opening
    code = "killed" if o.killed else ("exit " + str(claim.code) if o.child is not None else
                                     f"history {o.history[-1]['outcome']}/{o.history[-1]['error']}"
                                     if o.history else "no history entry")
    daemon = " with a daemon" if o.kind == "plain" and o.daemon_up else " without a daemon" if o.kind == "plain" else ""
    return f"{o.describe()}{daemon}, {code}, asked {_t(claim.start)}, ended {_t(claim.end)}"


def _claims(found):
    return " or ".join(_claim(c) for c in found)


def _t(at):
    import time

    return time.strftime("%H:%M:%S", time.localtime(at)) + f".{int(at * 1000) % 1000:03d}"
