#!/usr/bin/env bash
# Benchmark (not a test): `analyzer check` against DuckDB on one large valid trace.
#
# Builds the release binaries, writes a synthetic valid trace of ROWS events (10 million by default)
# with the `synth_trace` example unless the file already exists, then times, RUNS times each:
#   - `target/release/analyzer check FILE` (loads the trace and decides all nine invariants);
#   - DuckDB (Python package, default settings: one thread per core) running SQL equivalent to
#     `single-effect`, to `ack-after-commit`, and both in one process.
# Every command is a fresh process; wall time and peak resident memory come from the operating
# system (wait4); CPU time (user + system) is shown too, as it varies less than wall time on a
# shared machine. The table shows the median of the runs. Nothing here asserts a time.
#
# Usage: scripts/bench-check.sh            (env: ROWS, RUNS, BENCH_DIR)
set -euo pipefail

cd "$(dirname "$0")/.."
ROWS="${ROWS:-10000000}"
RUNS="${RUNS:-3}"
BENCH_DIR="${BENCH_DIR:-${TMPDIR:-/tmp}/outbox-trace-bench}"
TRACE="$BENCH_DIR/synth-$ROWS.parquet"

python3 -c 'import duckdb' 2>/dev/null || {
    echo "bench-check: the duckdb Python package is needed (pip install duckdb)" >&2
    exit 1
}
cargo build --release --quiet -p outbox-analyzer --bin analyzer --example synth_trace
mkdir -p "$BENCH_DIR"
if [[ ! -s "$TRACE" ]]; then
    echo "writing $TRACE ..."
    target/release/examples/synth_trace "$TRACE.tmp" "$ROWS"
    mv "$TRACE.tmp" "$TRACE"
fi

exec python3 - "$TRACE" "$RUNS" <<'PY'
"""Runs each command RUNS times as a child process and prints the medians."""
import os
import statistics
import subprocess
import sys
import time

import duckdb

trace, runs = sys.argv[1], int(sys.argv[2])
scan = "read_parquet('{}')".format(trace.replace("'", "''"))

# single-effect: no event_id (and no task_id) has more than one effect_committed, per scenario.
SINGLE_EFFECT = f"""
SELECT
  (SELECT count(*) FROM (
     SELECT 1 FROM {scan} WHERE event_id IS NOT NULL
     GROUP BY run_id, scenario, event_id
     HAVING count(*) FILTER (kind = 'effect_committed') > 1)) AS events_twice,
  (SELECT count(*) FROM (
     SELECT 1 FROM {scan} WHERE task_id IS NOT NULL
     GROUP BY run_id, scenario, task_id
     HAVING count(*) FILTER (kind = 'effect_committed') > 1)) AS tasks_twice
"""

# ack-after-commit: per actor incarnation and event, in seq order, an `acked` whose latest earlier
# delivery has no effect_committed / duplicate_suppressed after it (or that has none at all).
ACK_AFTER_COMMIT = f"""
WITH w AS (
  SELECT kind,
    max(CASE WHEN kind IN ('delivered', 'redelivered') THEN seq END) OVER before AS delivery,
    max(CASE WHEN kind IN ('effect_committed', 'duplicate_suppressed') THEN seq END)
      OVER before AS settle
  FROM {scan}
  WHERE event_id IS NOT NULL
    AND kind IN ('delivered', 'redelivered', 'effect_committed', 'duplicate_suppressed', 'acked')
  WINDOW before AS (
    PARTITION BY run_id, scenario, actor, incarnation, event_id ORDER BY seq
    ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING))
SELECT count(*) AS early_acks FROM w
WHERE kind = 'acked' AND (settle IS NULL OR (delivery IS NOT NULL AND settle < delivery))
"""

DUCKDB = """
import sys, duckdb
con = duckdb.connect()
con.execute("SET enable_progress_bar = false")
for sql in sys.argv[1:]:
    print(con.execute(sql).fetchall())
"""


def run(argv):
    """Wall seconds, CPU seconds (user + system), peak RSS in MiB and stdout of one child."""
    start = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    out = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"bench-check: {argv[0]} failed:\n{out}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, out


commands = [
    ("analyzer check (all 9 invariants)", ["target/release/analyzer", "check", trace]),
    ("duckdb single-effect", [sys.executable, "-c", DUCKDB, SINGLE_EFFECT]),
    ("duckdb ack-after-commit", [sys.executable, "-c", DUCKDB, ACK_AFTER_COMMIT]),
    ("duckdb both queries", [sys.executable, "-c", DUCKDB, SINGLE_EFFECT, ACK_AFTER_COMMIT]),
]

threads = duckdb.connect().execute("SELECT current_setting('threads')").fetchone()[0]
size = os.path.getsize(trace)
print(f"trace: {trace} ({size / 2**20:.1f} MiB)")
print(f"cores: {os.cpu_count()}; duckdb {duckdb.__version__}, threads = {threads} (default)")
print(f"median of {runs} runs; every run is a fresh process\n")
print(f"{'command':<36}{'wall s':>8}{'cpu s':>8}{'peak MiB':>10}   result")
for name, argv in commands:
    samples = [run(argv) for _ in range(runs)]
    wall, cpu, rss = (statistics.median(s[i] for s in samples) for i in range(3))
    out = samples[-1][3].strip().splitlines()
    result = out[-1] if out else ""
    print(f"{name:<36}{wall:>8.2f}{cpu:>8.2f}{rss:>10.0f}   {result}", flush=True)
PY
