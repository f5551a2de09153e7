#!/usr/bin/env bash
# Renders the analyzer's Mermaid diagrams with the real mermaid-cli: every golden .mmd, and for
# every scenario of every committed fixture its default chain and its boundaries flowchart. A
# diagram Mermaid rejects fails with Mermaid's parse error. The tests do not need this script
# (analyzer/tests/it/mermaid.rs checks the same files with a built-in checker).
#
# Needs mmdc and Debian's chromium:
#   apt-get install chromium
#   PUPPETEER_SKIP_DOWNLOAD=1 npm install -g @mermaid-js/mermaid-cli
# MMDC and CHROMIUM override the commands.
set -euo pipefail
cd "$(dirname "$0")/.."
MMDC=${MMDC:-mmdc}
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
command -v "$MMDC" >/dev/null || { echo "check-mermaid: $MMDC not found (see this script's header)" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/puppeteer.json" <<JSON
{"executablePath": "$CHROMIUM", "args": ["--no-sandbox", "--headless", "--disable-gpu",
 "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"]}
JSON

cargo build -q -p outbox-analyzer
analyzer=target/debug/analyzer
cp analyzer/tests/golden/*.mmd "$work/"
for trace in analyzer/tests/fixtures/*.parquet; do
    stem=$(basename "$trace" .parquet)
    scenarios=$("$analyzer" check --json "$trace" | python3 -c \
        'import json, sys; print("\n".join(sorted({s["scenario"] for s in json.load(sys.stdin)["scenarios"]})))' || true)
    for s in $scenarios; do
        "$analyzer" chain "$trace" --scenario "$s" -o "$work/$stem-$s-chain.mmd" || true
        "$analyzer" boundaries "$trace" --scenario "$s" -o "$work/$stem-$s-boundaries.mmd"
    done
done

failed=0
count=0
for mmd in "$work"/*.mmd; do
    count=$((count + 1))
    if ! "$MMDC" -q -p "$work/puppeteer.json" -i "$mmd" -o "${mmd%.mmd}.svg" >"$work/log" 2>&1; then
        echo "FAIL $(basename "$mmd")"
        cat "$work/log"
        failed=$((failed + 1))
    fi
done
echo "check-mermaid: $count diagrams, $failed rejected"
[ "$failed" -eq 0 ]
