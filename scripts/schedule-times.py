#!/usr/bin/env python3
"""Where a search's time goes, per schedule, from its trace: the median and the longest of

  whole       the scenario's run_end.detail.elapsed_ms (services, setup, roles, tasks, end)
  before      from the scenario's start to its run_start row (services ready, reset, setup)
  first task  from run_start to the first row a process wrote (the roles up, a task through)
  last span   from the last row a process wrote to run_end (quiet, observe, everything stopped)

  scripts/schedule-times.py TRACE.parquet [TRACE2.parquet ...]

Reads the trace with pyarrow; scenarios without a run_end (cut short) are left out.
"""

import json
import statistics
import sys

import pyarrow.parquet as pq


def phases(path):
    rows = pq.read_table(path, columns=["scenario", "kind", "actor", "ts_ns", "detail"]).to_pylist()
    by = {}
    for r in rows:
        s = by.setdefault(r["scenario"], {"start": None, "end": None, "first": None, "last": None, "ms": None})
        if r["kind"] == "run_start":
            s["start"] = r["ts_ns"]
        elif r["kind"] == "run_end":
            s["end"] = r["ts_ns"]
            s["ms"] = json.loads(r["detail"] or "{}").get("elapsed_ms")
        elif r["actor"] != "recorder":
            s["first"] = r["ts_ns"] if s["first"] is None else min(s["first"], r["ts_ns"])
            s["last"] = r["ts_ns"] if s["last"] is None else max(s["last"], r["ts_ns"])
    out = []
    for s in by.values():
        if None in (s["start"], s["end"], s["first"], s["ms"]):
            continue
        span = (s["end"] - s["start"]) / 1e9
        out.append((s["ms"] / 1e3, s["ms"] / 1e3 - span, (s["first"] - s["start"]) / 1e9,
                    (s["end"] - s["last"]) / 1e9))
    return out


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for path in sys.argv[1:]:
        rows = phases(path)
        if not rows:
            print(f"{path}: no complete scenario")
            continue
        print(f"{path}: {len(rows)} scenario(s), seconds per schedule (median / longest)")
        for i, name in enumerate(["whole", "before", "first task", "last span"]):
            values = [r[i] for r in rows]
            print(f"  {name:<11} {statistics.median(values):6.1f} / {max(values):6.1f}")


if __name__ == "__main__":
    main()
