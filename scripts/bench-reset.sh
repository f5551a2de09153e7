#!/usr/bin/env bash
# Times `recorder explore` on an example with its [reset] (services kept between schedules) and
# without it (services started for every schedule), then where each schedule's time went.
#
#   scripts/bench-reset.sh examples/node-postgres [explore options...]
#   scripts/bench-reset.sh examples/otel-python --jobs 2 --tasks 20
#
# Uses target/release/recorder when built, else target/debug/recorder. The example is copied
# to a temporary directory (its node_modules linked), the copy's [reset] table removed for the
# second search.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
example=$(cd "${1:?usage: bench-reset.sh EXAMPLE_DIR [explore options...]}" && pwd)
shift
recorder=${RECORDER:-$root/target/release/recorder}
[ -x "$recorder" ] || recorder=$root/target/debug/recorder
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for entry in "$example"/*; do
  case $(basename "$entry") in
    node_modules) ln -s "$entry" "$work/node_modules" ;;
    *) cp -r "$entry" "$work/" ;;
  esac
done
system=$work/outbox-system.toml
grep -q '^\[reset\]' "$system" || { echo "bench-reset: $example names no [reset]" >&2; exit 2; }
# The same file without its [reset] table (from its header to the next blank line).
awk '/^\[reset\]/ { skip = 1 } skip && /^$/ { skip = 0; next } !skip' "$system" >"$work/no-reset.toml"

for variant in outbox-system no-reset; do
  SECONDS=0
  code=0
  "$recorder" explore --system "$work/$variant.toml" --out "$work/$variant.parquet" --quiet "$@" \
    >"$work/$variant.txt" 2>&1 || code=$?
  printf '%s: exit %s in %s s; %s\n' "$variant" "$code" "$SECONDS" \
    "$(grep '^verdict' "$work/$variant.txt" || tail -n 1 "$work/$variant.txt")"
  python3 "$root/scripts/schedule-times.py" "$work/$variant.parquet" || true
done
