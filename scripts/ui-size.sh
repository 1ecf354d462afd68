#!/usr/bin/env bash
# Prints the release UI's transfer size (wasm + js + css: raw, gzip -9, brotli -q 11) and fails
# when the gzip total passes the budget in ui-size-budget.txt (bytes).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
DIST="${1:-$ROOT/dist}"
BUDGET=$(grep -Eo '^[0-9]+' "$ROOT/scripts/ui-size-budget.txt" | head -n 1)
[ -d "$DIST" ] || die "no $DIST: build the UI first (scripts/build-ui.sh)"

total_raw=0; total_gz=0; total_br=0
printf '%-44s %10s %10s %10s\n' file raw gzip brotli
shopt -s nullglob
for f in "$DIST"/*.wasm "$DIST"/*.js "$DIST"/*.css; do
  raw=$(wc -c <"$f")
  gz=$(gzip -9 -c "$f" | wc -c)
  br=$(brotli -q 11 -c "$f" | wc -c)
  printf '%-44s %10d %10d %10d\n' "$(basename "$f")" "$raw" "$gz" "$br"
  total_raw=$((total_raw + raw)); total_gz=$((total_gz + gz)); total_br=$((total_br + br))
done
printf '%-44s %10d %10d %10d\n' total "$total_raw" "$total_gz" "$total_br"
[ "$total_gz" -gt 0 ] || die "no wasm, js or css in $DIST"
if [ "$total_gz" -gt "$BUDGET" ]; then
  die "the UI is $total_gz bytes gzip, over its budget of $BUDGET (scripts/ui-size-budget.txt)"
fi
echo "ui size ok: $total_gz bytes gzip of a $BUDGET budget"
