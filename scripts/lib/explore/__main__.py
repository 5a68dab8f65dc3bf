"""scripts/explore: seeded, randomized runs of the real gate, esp32-sim and mosquitto that
check the first promise across fault schedules (docs/TESTING.md#the-fault-explorer)."""

import argparse
import contextlib
import io
import itertools
import os
import signal
import subprocess
import sys
import tempfile
import time

from .check import check
from .runner import play
from .steps import schedule

DESCRIPTION = """\
Seeded fault explorer. Each seed draws a schedule (random.Random(seed)) of 4-10 steps:
openings from every source (gate open --direct, gate open through the daemon or with
none running, button presses into the daemon's FIFO, Home Assistant presses), reloads
with random valid changes, SIGSTOP/SIGCONT, SIGTERM and SIGKILL of the daemon, of a
gate open, of the broker and of the simulator, simulator faults (restarted on the same
ports), MQTT delayed through a proxy, forged status messages and a broken button
stream. It plays them against the real binaries on loopback, then checks the
simulator's trigger log, every opener's exit code and --json, history.jsonl and the
status. A violation prints the seed, the rule with its evidence and the shortest
prefix of the schedule that still fails; exit 1 if any seed violated a rule."""


def main():
    args = parse()
    # Both unwind, so that every run kills what it started and removes its folder; SIGINT
    # too when started in the background, where the shell had it ignored.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    bin_dir = args.bin_dir
    for name in ("gate", "esp32-sim"):
        if not os.access(f"{bin_dir}/{name}", os.X_OK):
            sys.exit(f"explore: {bin_dir}/{name} is missing: build first (swift build), or give --bin-dir")
    if args.seed is not None:
        seeds = [args.seed]
    elif args.seeds is None:  # with a time budget alone, as many as fit
        seeds = itertools.count(args.start) if args.time_budget else range(args.start, args.start + 20)
    else:
        seeds = range(args.start, args.start + args.seeds)
    started, failed, ran = time.monotonic(), [], 0
    try:
        for seed, ok, text in _results(seeds, args, started):
            print(text, end="", flush=True)
            ran += 1
            if not ok:
                failed.append(seed)
    except KeyboardInterrupt:
        print("\nexplore: interrupted")
        return 130
    took = time.monotonic() - started
    if failed:
        print(f"explore: {len(failed)} of {ran} seeds violated a rule in {took:.0f} s: "
              + " ".join(map(str, failed)))
        return 1
    print(f"explore: {ran} seeds, no violation, in {took:.0f} s")
    return 0


def _results(seeds, args, started):
    """(seed, ok, printed text) in seed order. With --jobs N, N seeds run at once, each in a
    process of its own (every run has its own folder and ports); their text is printed in
    seed order as they finish."""
    said = []

    def over_budget():
        if args.time_budget and time.monotonic() - started > args.time_budget:
            if not said:
                said.append(True)
                print(f"explore: time budget of {args.time_budget:.0f} s spent")
            return True
        return False

    if args.jobs <= 1:
        for seed in seeds:
            if over_budget():
                return
            ok, text = _explore_captured(seed, args)
            yield seed, ok, text
        return
    yield from _in_parallel(iter(seeds), args, over_budget)


def _in_parallel(seeds, args, over_budget):
    """Each seed in a process of its own (`--seed S`), `--jobs` at once; results in seed
    order. Interrupted (SIGINT, SIGTERM), it starts nothing more and stops the running
    seeds with SIGTERM, on which each unwinds: it kills what it started, removes its folder."""
    passed = [flag for flag, on in (("--no-shrink", args.no_shrink), ("--keep", args.keep),
                                    ("--verbose", args.verbose)) if on]
    command = [sys.executable, "-B", "-m", __package__, "--bin-dir", args.bin_dir,
               "--protocol", str(args.protocol)] + passed
    running = []  # (seed, process, its output file), oldest first
    try:
        while True:
            while len(running) < args.jobs and not over_budget():
                seed = next(seeds, None)
                if seed is None:
                    break
                # A file, not a pipe: a seed that prints much never waits for its turn.
                out = tempfile.TemporaryFile("w+")
                process = subprocess.Popen(command + ["--seed", str(seed)], stdout=out, stderr=subprocess.STDOUT)
                running.append((seed, process, out))
            if not running:
                return
            seed, process, out = running.pop(0)
            process.wait()
            out.seek(0)
            text = out.read()
            out.close()
            # The seed's own summary line ("explore: 1 seeds, ...") is the parent's to say.
            text = "".join(line for line in text.splitlines(keepends=True) if not line.startswith("explore: "))
            yield seed, process.returncode == 0, text
    finally:
        for _, process, _ in running:
            process.terminate()
        for _, process, out in running:
            process.wait()
            out.close()


def _explore_captured(seed, args):
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        ok = explore(seed, args)
    return ok, text.getvalue()


def parse():
    parser = argparse.ArgumentParser(prog="scripts/explore", description=DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, help="replay exactly this seed")
    parser.add_argument("--steps", type=int, help="with --seed: play only the first N steps")
    parser.add_argument("--seeds", type=int, help="how many seeds (default 20; with --time-budget alone, "
                                                   "as many as the budget allows)")
    parser.add_argument("--start", type=int, default=1, help="the first seed (default 1)")
    parser.add_argument("--time-budget", type=float, help="start no new seed after this many seconds")
    parser.add_argument("--no-shrink", action="store_true", help="do not look for a shorter failing prefix")
    parser.add_argument("--keep", action="store_true", help="keep each run's folder (logs, trigger log, history)")
    parser.add_argument("--verbose", "-v", action="store_true", help="print each step as it runs")
    parser.add_argument("--protocol", type=int, choices=(1, 2), default=1,
                        help="the protocol gate and esp32-sim speak (2: signed frames, one key provisioned "
                             "for both; default 1)")
    parser.add_argument("--jobs", "-j", type=int, default=1,
                        help="run this many seeds at once, each in its own process (default 1)")
    parser.add_argument("--bin-dir", default=".build/debug", help="where gate and esp32-sim are (.build/debug)")
    return parser.parse_args()


def explore(seed, args):
    """Runs one seed; prints one line (ok / VIOLATION) and, for a violation, its evidence."""
    setup, steps = schedule(seed)
    if args.steps is not None:
        steps = steps[:args.steps]
    began = time.monotonic()
    violations, outcome = run(setup, steps, args, verbose=args.verbose)
    took = time.monotonic() - began
    if outcome is None:
        print(f"seed {seed}: HARNESS ERROR ({took:.1f} s): {violations}")
        return False
    summary = (f"{len(steps)} steps, {len(outcome.openings)} openings, {len(outcome.activations)} activations, "
               f"{took:.1f} s")
    if not violations:
        print(f"seed {seed}: ok ({summary})", flush=True)
        return True
    print(f"seed {seed}: VIOLATION {violations[0].rule} ({summary})")
    print(f"  {setup}")
    for index, step, what in outcome.log:
        print(f"  {index}. {step} [gap {step.gap} s]: {what}")
    for violation in violations:
        print(f"  - {violation}")
    if not args.no_shrink and len(steps) > 1:
        shrink(seed, setup, steps, violations[0].rule, args)
    print(f"  replay: scripts/explore --seed {seed}", flush=True)
    return False


def run(setup, steps, args, verbose=False):
    try:
        outcome = play(setup, steps, args.bin_dir, keep=args.keep, verbose=verbose, protocol=args.protocol)
    except RuntimeError as error:
        return str(error), None
    violations, claims = check(outcome)
    if verbose:
        for claim in claims:
            o = claim.opening
            print(f"    {o.describe()}: code {claim.code}, asked +{claim.start - outcome.began:.2f} s, "
                  f"ended +{claim.end - outcome.began:.2f} s, capacity {claim.capacity}"
                  + (f", json {o.json.get('message')!r}" if isinstance(o.json, dict) else "")
                  + "".join(f"; {n}" for n in claim.notes))
        for at, via in outcome.activations:
            print(f"    activation +{at - outcome.began:.2f} s via {via}")
    return violations, outcome


def shrink(seed, setup, steps, rule, args):
    """The shortest prefix of the same steps that breaks the same rule again."""
    for length in range(1, len(steps)):
        violations, outcome = run(setup, steps[:length], args)
        if outcome is not None and any(v.rule == rule for v in violations):
            print(f"  shortest failing prefix: the first {length} of {len(steps)} steps "
                  f"(scripts/explore --seed {seed} --steps {length})")
            return
    print(f"  shortest failing prefix: all {len(steps)} steps")


if __name__ == "__main__":
    sys.exit(main())
