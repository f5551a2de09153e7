#!/usr/bin/env bash
# Checks a trace on Spark: runs the statement `analyzer sql --dialect spark` prints over PATH (a
# Parquet file, or a directory of them such as hive-style run_id=R/scenario=S/part-0.parquet) and
# prints one line per (run_id, scenario, invariant), as `analyzer check` decides them.
#
# PATH is anything Spark reads: a local path, hdfs://..., s3a://... (with the cluster's
# credentials and connector). Without SPARK_MASTER it runs pyspark in local mode on every core;
# with it, the same script is the driver of a cluster job, e.g.
#   SPARK_MASTER=spark://head:7077 scripts/check-on-spark.sh s3a://bucket/outbox/traces/
# The README shows how to submit the same statement with spark-submit.
#
# Exit codes (as `analyzer check`): 0 every invariant passed, 1 one failed, 2 bad input or usage,
# 3 nothing failed but something is unknown.
# Env: ANALYZER (default: target/release/analyzer, else target/debug/analyzer, else `analyzer`),
#      SPARK_MASTER (default local[*]), WITNESSES (N: also list up to N witness rows per failure),
#      SHUFFLE_PARTITIONS (default 16; raise it on a cluster for billions of rows).
set -euo pipefail

if [[ $# -ne 1 ]]; then
    echo "usage: scripts/check-on-spark.sh PATH" >&2
    exit 2
fi
cd "$(dirname "$0")/.."
analyzer="${ANALYZER:-}"
if [[ -z "$analyzer" ]]; then
    for candidate in target/release/analyzer target/debug/analyzer "$(command -v analyzer || true)"; do
        if [[ -n "$candidate" && -x "$candidate" ]]; then analyzer="$candidate"; break; fi
    done
fi
if [[ -z "$analyzer" ]]; then
    echo "check-on-spark: no analyzer binary (cargo build --release -p outbox-analyzer)" >&2
    exit 2
fi
python3 -c 'import pyspark' 2>/dev/null || {
    echo "check-on-spark: the pyspark Python package and a Java runtime are needed (scripts/deps.sh)" >&2
    exit 2
}
sql="$("$analyzer" sql --dialect spark ${WITNESSES:+--witnesses "$WITNESSES"})"

exec python3 - "$1" "${SPARK_MASTER:-local[*]}" "$sql" "${SHUFFLE_PARTITIONS:-16}" <<'PY'
import sys

from pyspark.sql import SparkSession

path, master, text, partitions = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
statements = [s for s in text.split(";\n") if s.strip()]
spark = (SparkSession.builder.master(master).appName("outbox-trace check")
         .config("spark.ui.enabled", "false")
         .config("spark.sql.shuffle.partitions", partitions)
         .config("spark.sql.sources.partitionColumnTypeInference.enabled", "false")
         .getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
try:
    # Partition directories (run_id=R/...) fill the columns their files lack.
    spark.read.parquet(path).createOrReplaceTempView("trace")
    rows = spark.sql(statements[0]).collect()
except Exception as e:  # a path Spark cannot read, or a file without the contract's columns
    first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    print(f"check-on-spark: {path}: {first}", file=sys.stderr)
    sys.exit(2)
scenarios = set()
for r in rows:
    scenarios.add(r["scenario_verdict"])
    mark = {"pass": "pass", "fail": "FAIL", "unknown": "unknown"}[r["verdict"]]
    count = f": {r['violations']} violation(s)" if r["verdict"] == "fail" else ""
    reason = f"{': ' if not count else '; '}{r['reason']}" if r["reason"] else ""
    print(f"{r['run_id']} {r['scenario']} {r['invariant']} {mark}{count}{reason}")
if len(statements) > 1:
    print("\nwitness rows (run_id scenario invariant seq actor#incarnation kind task_id event_id)")
    for r in spark.sql(statements[1]).collect():
        print(f"{r['run_id']} {r['scenario']} {r['invariant']} {r['seq']} "
              f"{r['actor']}#{r['incarnation']} {r['kind']} {r['task_id']} {r['event_id']}")
spark.stop()
# A scenario's verdict also holds what no invariant says (a named fault that never fired).
sys.exit(1 if "invalid" in scenarios else 3 if "unknown" in scenarios else 0)
PY
