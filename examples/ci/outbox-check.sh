#!/usr/bin/env bash
# A CI's outbox check: the systematic search of outbox-trace over a team's system file, and what
# the pipeline shows of it.
#
#   examples/ci/outbox-check.sh SYSTEM_FILE OUT_DIR [recorder explore flags...]
#
# Writes OUT_DIR/explore.parquet (the trace), OUT_DIR/junit.xml (a test suite per schedule, a
# test case per invariant: what GitLab, Jenkins and GitHub's test reporters read),
# OUT_DIR/search.json (the coverage table as data) and OUT_DIR/report.html (the analyzer's page,
# written whatever the verdict, so a red build has it). Exits as `recorder explore` does: 0 every
# schedule valid, 1 a violation, 3 undecided, 2 bad input, 4 a service missing. `recorder` and
# `analyzer` are taken from the PATH.
set -uo pipefail

if [ $# -lt 2 ]; then
  echo "usage: outbox-check.sh SYSTEM_FILE OUT_DIR [recorder explore flags...]" >&2
  exit 2
fi
system=$1
out=$2
shift 2
mkdir -p "$out" || exit 2

recorder explore --system "$system" --out "$out/explore.parquet" \
  --junit "$out/junit.xml" --json "$out/search.json" "$@"
status=$?

if [ -f "$out/explore.parquet" ]; then
  analyzer report "$out/explore.parquet" --html "$out/report.html" >/dev/null \
    || echo "outbox-check: the HTML report could not be written" >&2
fi
exit "$status"
