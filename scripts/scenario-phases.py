#!/usr/bin/env python3
"""Benchmark (not a test): the recorder's own time per scenario of a `recorder run --system`.

Runs `recorder run --system FILE --scenario all` RUNS times (3 by default) with
`RUST_LOG=outbox_recorder::timing=debug`, reads the phase marks each scenario prints on stderr
(milliseconds from the scenario's start, see `Timeline` in recorder/src/system/scenario/shared.rs)
and prints, per phase, the median, the smallest and the largest over every scenario of every run:
from the scenario's start to its first task (services ready, setup, the roles started), and from
its last span to its end (quiet, observe, the processes and the services stopped, the sweep).
Which phases are the recorder's own waits and which are the team's commands and processes is in
the second column. Nothing here asserts a time.

With --bare the system is one that takes no time of its own (a Redis, `true` for setup, tasks and
quiet, `sleep` for its one role, `echo {}` for observe): what is left is the recorder's own time.

Usage: scripts/scenario-phases.py [--recorder PATH] [--runs N] [--system FILE | --bare] [-- ARGS]
       (default: target/debug/recorder, examples/otel-python/outbox-system.toml)
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# (phase, whose time it is, from mark (None: the scenario's start), to mark)
PHASES = [
    ("services ready", "service start + recorder's ready polling", None, "services ready"),
    ("setup", "the setup command", "services ready", "setup done"),
    ("roles started", "recorder", "setup done", "roles started, first task sent"),
    ("start to first task sent", "", None, "roles started, first task sent"),
    ("first task sent to first span", "the roles' start-up", "roles started, first task sent",
     "first span"),
    ("last span to quiet", "the quiet command, and the recorder's wait", "last span", "quiet"),
    ("last span to last quiet asked", "recorder (waits for the probe before)", "last span",
     "last quiet asked"),
    ("last quiet asked to quiet", "the quiet command", "last quiet asked", "quiet"),
    ("observe", "the observe command", "quiet", "observed"),
    ("processes stopped", "the roles' exit on SIGTERM", "observed", "processes stopped"),
    ("services stopped", "the services' exit on SIGTERM", "processes stopped",
     "services stopped"),
    ("sweep", "recorder", "services stopped", "swept"),
    ("last span to end", "", "last span", "swept"),
    ("first task sent to quiet", "", "roles started, first task sent", "quiet"),
    ("quiet to end", "", "quiet", "swept"),
]

BARE = """name = "bare"
[services.redis]
command = ["redis-server", "--port", "${port}", "--bind", "127.0.0.1", "--dir", "${dir}",
           "--save", ""]
[setup]
command = ["true"]
[roles.idle]
command = ["sleep", "600"]
[tasks]
count = 4
command = ["true"]
[quiet]
command = ["true"]
[observe]
command = ["echo", "{}"]
[[scenarios]]
name = "one"
[[scenarios]]
name = "two"
[[scenarios]]
name = "three"
"""

MARK = re.compile(r'timing: (.+?) scenario="([^"]+)" ms=(\d+)')


def marks(stderr):
    """{(scenario): {mark: ms}} from one run's stderr."""
    found = defaultdict(dict)
    for line in stderr.splitlines():
        m = MARK.search(line)
        if m:
            found[m.group(2)][m.group(1)] = int(m.group(3))
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recorder", default=str(ROOT / "target/debug/recorder"))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--system", default=str(ROOT / "examples/otel-python/outbox-system.toml"))
    parser.add_argument("--bare", action="store_true", help="a system that takes no time")
    parser.add_argument("extra", nargs="*", help="more arguments for recorder run")
    args = parser.parse_args()
    env = dict(os.environ, RUST_LOG="outbox_recorder::timing=debug", NO_COLOR="1")
    times = defaultdict(list)
    scenarios = 0
    with tempfile.TemporaryDirectory() as tmp:
        if args.bare:
            args.system = str(Path(tmp) / "bare.toml")
            Path(args.system).write_text(BARE)
        for run in range(args.runs):
            out = Path(tmp) / f"run-{run}.parquet"
            done = subprocess.run(
                [args.recorder, "run", "--system", args.system, "--scenario", "all",
                 "--out", str(out), *args.extra],
                env=env, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                sys.exit(f"recorder exited {done.returncode}: {done.stderr[-2000:]}")
            for t in marks(done.stderr).values():
                if "swept" not in t:
                    continue
                scenarios += 1
                for name, _, a, b in PHASES:
                    if b in t and (a is None or a in t):
                        times[name].append(t[b] - (t[a] if a else 0))
    print(f"{scenarios} scenarios, {args.runs} runs of {args.system}")
    print(f"{'phase':32} {'whose':42} {'median':>7} {'min':>6} {'max':>6}  (ms)")
    for name, whose, _, _ in PHASES:
        v = times[name]
        if v:
            print(f"{name:32} {whose:42} {statistics.median(v):7.0f} {min(v):6d} {max(v):6d}")


if __name__ == "__main__":
    main()
