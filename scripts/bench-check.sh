#!/usr/bin/env bash
# Benchmark (not a test): the analyzer against DuckDB on synthetic valid traces.
#
# Builds the release binaries and writes (unless they exist) synthetic valid traces with the
# `synth_trace` example: CHECK_ROWS events (10 million by default) for `check`, and VIEW_ROWS
# events (180,000 and 1,000,000 by default) for the views. Then, in one run, best of RUNS
# (5), the commands interleaved round by round, each a fresh process:
#   - `analyzer check` on the large trace, and on the same trace as zstd JSON Lines (written
#     once from the Parquet file by DuckDB's COPY ... (FORMAT JSON, COMPRESSION ZSTD)), with the
#     ratio of their peak memory (goal: at most 2);
#   - `analyzer check` on the large trace, against DuckDB's `single-effect` query alone (the
#     yardstick: group effect_committed rows by event_id, keep those seen twice), and against
#     DuckDB merely reading every column `check` decodes (the floor of any checker);
#   - on each view trace: `chain` (no selector), `boundaries`, `timeline`, `report`,
#     `compare` of the file with itself and `diff` of the file with itself, against DuckDB's
#     `single-effect` plus `ack-after-commit` in one process;
#   - with LARGE_ROWS set (e.g. 100000000), `check` on that trace too, with its ratio to the
#     CHECK_ROWS time;
#   - then scripts/bench-html.sh: the HTML report of HTML_ROWS events (1,000,000 by default),
#     written, opened in headless Chromium and showing a chain (skip it with HTML_ROWS=0).
#   - on the large trace, every invariant as SQL (`analyzer sql`, the same verdicts as `check`)
#     on DuckDB, DataFusion and Spark in local mode (each a fresh process, Spark's JVM start
#     included); SQL_ENGINES picks them (default "duckdb datafusion spark"; the packages are
#     needed only for the engines named).
# Wall time, CPU time (user + system) and peak resident memory come from the operating system
# (wait4). Nothing here asserts a time.
#
# Usage: scripts/bench-check.sh   (env: CHECK_ROWS, VIEW_ROWS, LARGE_ROWS, HTML_ROWS, RUNS, BENCH_DIR)
set -euo pipefail

cd "$(dirname "$0")/.."
CHECK_ROWS="${CHECK_ROWS:-10000000}"
VIEW_ROWS="${VIEW_ROWS:-180000 1000000}"
LARGE_ROWS="${LARGE_ROWS:-}"
RUNS="${RUNS:-5}"
SQL_ENGINES="${SQL_ENGINES-duckdb datafusion spark}"
BENCH_DIR="${BENCH_DIR:-${TMPDIR:-/tmp}/outbox-trace-bench}"

python3 -c 'import duckdb' 2>/dev/null || {
    echo "bench-check: the duckdb Python package is needed (pip install duckdb)" >&2
    exit 1
}
cargo build --release --quiet -p outbox-analyzer --bin analyzer --example synth_trace
export TARGET="${CARGO_TARGET_DIR:-target}"
mkdir -p "$BENCH_DIR"
traces=()
for rows in "$CHECK_ROWS" $VIEW_ROWS $LARGE_ROWS; do
    trace="$BENCH_DIR/synth-$rows.parquet"
    if [[ ! -s "$trace" ]]; then
        echo "writing $trace ..."
        "$TARGET/release/examples/synth_trace" "$trace.tmp" "$rows"
        mv "$trace.tmp" "$trace"
    fi
    traces+=("$trace")
done

# The check trace as zstd JSON Lines, one event per line in the Parquet file's order.
jsonl="$BENCH_DIR/synth-$CHECK_ROWS.jsonl.zst"
if [[ ! -s "$jsonl" ]]; then
    echo "writing $jsonl ..."
    python3 - "$BENCH_DIR/synth-$CHECK_ROWS.parquet" "$jsonl.tmp" <<'PY'
import sys, duckdb
src, out = (p.replace("'", "''") for p in sys.argv[1:3])
con = duckdb.connect()
con.execute("SET preserve_insertion_order = true")
con.execute("SET enable_progress_bar = false")
con.execute(f"COPY (SELECT * FROM read_parquet('{src}')) TO '{out}' (FORMAT JSON, COMPRESSION ZSTD)")
PY
    mv "$jsonl.tmp" "$jsonl"
fi

export SQL_ENGINES
python3 - "$RUNS" "$BENCH_DIR" "$CHECK_ROWS" "$LARGE_ROWS" $VIEW_ROWS <<'PY'
"""Runs every command RUNS times, interleaved round by round, and prints the best of each."""
import atexit
import os
import shutil
import subprocess
import sys
import tempfile
import time

import duckdb

runs, bench_dir, check_rows, large_rows = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
view_rows = sys.argv[5:]
path = lambda rows: os.path.join(bench_dir, f"synth-{rows}.parquet")


def scan(trace):
    return "read_parquet('{}')".format(trace.replace("'", "''"))


# The yardstick: event_ids with more than one effect_committed.
def single_effect(trace):
    return f"""select count(*) from (select event_id from {scan(trace)}
  where kind = 'effect_committed' group by event_id having count(*) > 1)"""


# What reading the trace alone costs: every column `check` decodes (all but ts_ns), each value
# touched once. No invariant can be decided in less time than the columns it needs take to read.
CHECK_COLUMNS = ["run_id", "scenario", "backend", "actor", "kind", "task_id", "event_id",
                 "aggregate_id", "detail", "seq", "incarnation", "aggregate_seq", "attempt",
                 "broker_seq", "store_rev", "amount", "counter"]


def read_columns(trace):
    values = [f"max(length({c}))" if c in CHECK_COLUMNS[:9] else f"max({c})" for c in CHECK_COLUMNS]
    return f"select {', '.join(values)} from {scan(trace)}"


# ack-after-commit: per actor incarnation and event, in seq order, an `acked` whose latest earlier
# delivery has no effect_committed / duplicate_suppressed after it (or that has none at all).
def ack_after_commit(trace):
    scan_ = scan(trace)
    return f"""
WITH w AS (
  SELECT kind,
    max(CASE WHEN kind IN ('delivered', 'redelivered') THEN seq END) OVER before AS delivery,
    max(CASE WHEN kind IN ('effect_committed', 'duplicate_suppressed') THEN seq END)
      OVER before AS settle
  FROM {scan_}
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


# Every invariant as SQL on one engine: the statement `analyzer sql` prints, over the trace
# registered as the table `trace`; prints the verdict rows.
SQL_ENGINE = r"""
import subprocess, sys
engine, analyzer, trace = sys.argv[1:4]
sql = subprocess.run([analyzer, "sql", "--dialect", engine], check=True, capture_output=True,
                     text=True).stdout
if engine == "duckdb":
    import duckdb
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    con.execute(f"CREATE VIEW trace AS SELECT * FROM read_parquet('{trace}')")
    rows = con.execute(sql).fetchall()
elif engine == "datafusion":
    from datafusion import SessionContext
    ctx = SessionContext()
    ctx.register_parquet("trace", trace)
    rows = ctx.sql(sql).to_arrow_table().to_pylist()
else:
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master("local[*]").appName("bench")
             .config("spark.ui.enabled", "false").config("spark.driver.memory", "4g")
             .config("spark.sql.shuffle.partitions", "16").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    spark.read.parquet(trace).createOrReplaceTempView("trace")
    rows = spark.sql(sql).collect()
for r in rows:
    print(tuple(r.values()) if isinstance(r, dict) else tuple(r))
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


out_dir = tempfile.mkdtemp(prefix="bench-check-")
atexit.register(shutil.rmtree, out_dir, ignore_errors=True)
duck = lambda *sql: [sys.executable, "-c", DUCKDB, *sql]
analyzer = os.path.join(os.environ["TARGET"], "release", "analyzer")
big = path(check_rows)
big_jsonl = os.path.join(bench_dir, f"synth-{check_rows}.jsonl.zst")
commands = [
    (f"check, {check_rows} events", [analyzer, "check", big]),
    (f"check, {check_rows} as JSON Lines", [analyzer, "check", big_jsonl]),
    (f"duckdb single-effect, {check_rows}", duck(single_effect(big))),
    (f"duckdb reading check's columns, {check_rows}", duck(read_columns(big))),
]
for engine in os.environ.get("SQL_ENGINES", "").split():
    commands.append((f"sql on {engine}, {check_rows}",
                     [sys.executable, "-c", SQL_ENGINE, engine, analyzer, big]))
if large_rows:
    large = path(large_rows)
    commands += [
        (f"check, {large_rows} events", [analyzer, "check", large]),
        (f"duckdb single-effect, {large_rows}", duck(single_effect(large))),
    ]
for rows in view_rows:
    t = path(rows)
    commands += [
        (f"duckdb both queries, {rows}", duck(single_effect(t), ack_after_commit(t))),
        (f"chain, {rows}", [analyzer, "chain", t]),
        (f"boundaries, {rows}", [analyzer, "boundaries", t]),
        (f"timeline, {rows}", [analyzer, "timeline", t, "-o", f"{out_dir}/timeline-{rows}.svg"]),
        (f"report, {rows}", [analyzer, "report", t, "-o", f"{out_dir}/report-{rows}"]),
        (f"compare (itself), {rows}", [analyzer, "compare", t, t]),
        (f"diff (itself), {rows}", [analyzer, "diff", t, t]),
    ]

threads = duckdb.connect().execute("SELECT current_setting('threads')").fetchone()[0]
print(f"cores: {os.cpu_count()}; duckdb {duckdb.__version__}, threads = {threads} (default)")
for rows in [check_rows, *([large_rows] if large_rows else []), *view_rows]:
    print(f"trace {path(rows)}: {os.path.getsize(path(rows)) / 2**20:.1f} MiB")
print(f"trace {big_jsonl}: {os.path.getsize(big_jsonl) / 2**20:.1f} MiB")
print(f"best of {runs} runs, interleaved; every run is a fresh process\n")
best = {}
for _ in range(runs):
    for name, argv in commands:
        sample = run(argv)
        if name not in best or sample[0] < best[name][0]:
            best[name] = sample
print(f"{'command':<40}{'wall s':>8}{'cpu s':>8}{'peak MiB':>10}")
for name, _ in commands:
    wall, cpu, rss, _ = best[name]
    print(f"{name:<40}{wall:>8.2f}{cpu:>8.2f}{rss:>10.0f}")
wall = lambda name: best[name][0]
print()
ratio = wall(f"check, {check_rows} events") / wall(f"duckdb single-effect, {check_rows}")
for engine in os.environ.get("SQL_ENGINES", "").split():
    name = f"sql on {engine}, {check_rows}"
    print(f"every invariant as SQL on {engine}, {check_rows} events: {wall(name):.2f} s = "
          f"{wall(name) / wall(f'check, {check_rows} events'):.1f} x analyzer check")
print(f"check on {check_rows} events: {ratio:.2f} x DuckDB single-effect (goal: at most 1), "
      f"peak {best[f'check, {check_rows} events'][2]:.0f} MiB (goal: at most 512)")
text = best[f"check, {check_rows} as JSON Lines"]
parquet = best[f"check, {check_rows} events"]
print(f"check on {check_rows} events as zstd JSON Lines: {text[0]:.2f} s, peak {text[2]:.0f} MiB = "
      f"{text[2] / parquet[2]:.2f} x the Parquet check's peak (goal: at most 2)")
floor = wall(f"duckdb reading check's columns, {check_rows}")
print(f"DuckDB reading the columns check decodes, {check_rows} events: {floor:.2f} s = "
      f"{floor / wall(f'duckdb single-effect, {check_rows}'):.1f} x its single-effect; "
      f"check takes {wall(f'check, {check_rows} events') / floor:.2f} x that (goal: at most 1.3), "
      f"peak {best[f'check, {check_rows} events'][2]:.0f} MiB (goal: at most 256)")
if large_rows:
    r = wall(f"check, {large_rows} events") / wall(f"check, {check_rows} events")
    print(f"check on {large_rows} events: {r:.1f} x its {check_rows}-event time (goal: at most 11), "
          f"peak {best[f'check, {large_rows} events'][2]:.0f} MiB (goal: at most 1024)")
for rows in view_rows:
    yard = wall(f"duckdb both queries, {rows}")
    slowest = max((wall(n), n) for n, _ in commands if n.endswith(f", {rows}") and not n.startswith("duckdb"))
    print(f"views on {rows} events: slowest {slowest[1].split(',')[0]} {slowest[0]:.2f} s = "
          f"{slowest[0] / yard:.2f} x DuckDB both queries (goal: at most 3)"
          + (f"; check on {check_rows} events takes {wall(f'check, {check_rows} events'):.2f} s"
             if int(rows) >= 1_000_000 else ""))
PY

if [[ "${HTML_ROWS:-1000000}" != 0 ]]; then
    echo
    RUNS="$RUNS" BENCH_DIR="$BENCH_DIR" HTML_ROWS="${HTML_ROWS:-1000000}" scripts/bench-html.sh
fi
