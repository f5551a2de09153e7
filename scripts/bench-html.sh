#!/usr/bin/env bash
# Benchmark (not a test): the HTML report of a large synthetic valid trace.
#
# Builds the release binaries, writes (unless it exists) a synthetic trace of HTML_ROWS events
# (1,000,000 by default) with the `synth_trace` example, then, best of RUNS (3):
#   - `analyzer report TRACE --html FILE` as a fresh process: wall time, CPU time, peak memory;
#   - the page in Debian's headless Chromium (Playwright for Python, a fresh profile per run):
#     from navigation to the load event (the wall clock), and to the violations list and filter
#     built and to the timeline drawn from every row (the page's clock, performance.now()); then from typing a task id into #filter to its chain on
#     screen, for a task the analyzer drew in advance and for one the page draws from the rows.
# Also prints the file's size. Nothing here asserts a time.
#
# Usage: scripts/bench-html.sh   (env: HTML_ROWS, RUNS, BENCH_DIR)
set -euo pipefail

cd "$(dirname "$0")/.."
HTML_ROWS="${HTML_ROWS:-1000000}"
RUNS="${RUNS:-3}"
BENCH_DIR="${BENCH_DIR:-${TMPDIR:-/tmp}/outbox-trace-bench}"

[ -x /usr/bin/chromium ] && python3 -c 'import playwright' 2>/dev/null || {
    echo "bench-html: Debian's chromium and the playwright Python package are needed (scripts/deps.sh)" >&2
    exit 1
}
cargo build --release --quiet -p outbox-analyzer --bin analyzer --example synth_trace
target="${CARGO_TARGET_DIR:-target}"
mkdir -p "$BENCH_DIR"
trace="$BENCH_DIR/synth-$HTML_ROWS.parquet"
if [[ ! -s "$trace" ]]; then
    echo "writing $trace ..."
    "$target/release/examples/synth_trace" "$trace.tmp" "$HTML_ROWS"
    mv "$trace.tmp" "$trace"
fi

exec python3 - "$RUNS" "$trace" "$target/release/analyzer" "$BENCH_DIR/report-$HTML_ROWS.html" <<'PY'
"""Writes the report RUNS times, opens it RUNS times, prints the best of each."""
import os
import pathlib
import subprocess
import sys
import tempfile
import time

from playwright.sync_api import sync_playwright

runs, trace, analyzer, html = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def write():
    start = time.perf_counter()
    child = subprocess.Popen([analyzer, "report", trace, "--html", html], stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit("bench-html: analyzer report failed")
    return time.perf_counter() - start, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def chain_seconds(page, task):
    start = time.perf_counter()
    page.fill("#filter", task)
    page.wait_for_function(
        "t => [...document.querySelectorAll('#chain svg')].some(s => s.textContent.includes(t))",
        arg=task, timeout=120_000)
    return time.perf_counter() - start


def browse(p):
    with tempfile.TemporaryDirectory(prefix="bench-html-") as profile:
        ctx = p.chromium.launch_persistent_context(
            profile, executable_path="/usr/bin/chromium", headless=True, args=FLAGS,
            viewport={"width": 1500, "height": 1000})
        page = ctx.pages[0] if ctx.pages else ctx.new_page()
        page.goto("about:blank")
        start = time.perf_counter()
        page.goto(pathlib.Path(html).resolve().as_uri(), wait_until="load", timeout=120_000)
        loaded = time.perf_counter() - start
        page.wait_for_selector("#timeline svg", timeout=120_000)
        # The page's own clock, from navigation: the lists built, the timeline drawn.
        marks = page.evaluate("() => window.outboxReport.marks")
        lists, timeline = marks["lists"] / 1000, marks["timeline"] / 1000
        # t-1000 is drawn in advance (its worker crashed); t-12345 is drawn by the page.
        drawn = chain_seconds(page, "t-1000")
        built = chain_seconds(page, "t-12345")
        ctx.close()
    return loaded, lists, timeline, drawn, built


best_write, best_open = None, None
with sync_playwright() as p:
    for _ in range(runs):
        w = write()
        best_write = w if best_write is None or w[0] < best_write[0] else best_write
        b = browse(p)
        best_open = b if best_open is None or b[0] < best_open[0] else best_open
size = os.path.getsize(html) / 2**20
rows = trace.rsplit("-", 1)[1].split(".")[0]
print(f"HTML report of {trace} ({rows} events), best of {runs}; every write a fresh process, "
      "every opening a fresh browser profile")
print(f"write (analyzer report --html):  {best_write[0]:.2f} s wall, {best_write[1]:.2f} s CPU, "
      f"peak {best_write[2]:.0f} MiB; file {size:.1f} MiB")
loaded, lists, timeline, drawn, built = best_open
print(f"open in Chromium: load event {loaded:.2f} s, violations and filter built {lists:.2f} s, "
      f"timeline of every row drawn {timeline:.2f} s (from navigation)")
print(f"chain after typing a task id: drawn in advance {drawn:.2f} s, drawn by the page {built:.2f} s")
PY
