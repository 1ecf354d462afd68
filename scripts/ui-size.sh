#!/usr/bin/env bash
# Prints the release UI's transfer size, file by file (raw, gzip -9, brotli -q 11), and checks
# it against scripts/ui-size-budget.txt, in brotli bytes as the server sends them:
#   first      what a fresh chat downloads before it works: index.html, the JS, the CSS and the
#              main wasm (every file but the chunks)
#   split_X    the chunk of split point X (beside its component, src/components/), loaded on first use
#   chunks     the chunks the splitter makes of code shared by split points, together
#   worker     the service worker (sw.js), fetched only once a person turns notifications on
#   total      every file
# A chunk with no line in the budget fails too: each new split point gets its own budget.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
DIST="${1:-$ROOT/dist}"
BUDGETS="$ROOT/scripts/ui-size-budget.txt"
[ -d "$DIST" ] || die "no $DIST: build the UI first (scripts/build-ui.sh)"

# The budget named $1, or nothing.
budget() { awk -v name="$1" '$1 == name && $2 ~ /^[0-9]+$/ { print $2; exit }' "$BUDGETS"; }

declare -A group_br=()
# index.html is not in the table (its rows are what crates/bench reads) but counts in first.
[ -f "$DIST/index.html" ] || die "no $DIST/index.html: build the UI first (scripts/build-ui.sh)"
html_br=$(brotli -q 11 -c "$DIST/index.html" | wc -c)
group_br[first]=$html_br
total_raw=0; total_gz=0; total_br=0
printf '%-44s %10s %10s %10s\n' file raw gzip brotli
shopt -s nullglob
for f in "$DIST"/*.wasm "$DIST"/*.js "$DIST"/*.css; do
  name="$(basename "$f")"
  case "$name" in
    split_*.wasm) group="${name%-*}" ;;
    chunk_*.wasm) group="chunks" ;;
    sw.js) group="worker" ;;
    *) group="first" ;;
  esac
  raw=$(wc -c <"$f")
  gz=$(gzip -9 -c "$f" | wc -c)
  br=$(brotli -q 11 -c "$f" | wc -c)
  printf '%-44s %10d %10d %10d\n' "$name" "$raw" "$gz" "$br"
  group_br[$group]=$(( ${group_br[$group]:-0} + br ))
  total_raw=$((total_raw + raw)); total_gz=$((total_gz + gz)); total_br=$((total_br + br))
done
printf '%-44s %10d %10d %10d\n' total "$total_raw" "$total_gz" "$total_br"
[ "$total_br" -gt 0 ] || die "no wasm, js or css in $DIST"
group_br[total]=$((total_br + html_br))

failed=""
echo
for group in $(printf '%s\n' "${!group_br[@]}" | sort); do
  size=${group_br[$group]}
  limit="$(budget "$group")"
  if [ -z "$limit" ]; then
    echo "$group: $size bytes brotli, and no budget for it in $BUDGETS"; failed=1
  elif [ "$size" -gt "$limit" ]; then
    echo "$group: $size bytes brotli, over its budget of $limit"; failed=1
  else
    echo "$group: $size bytes brotli of a $limit budget"
  fi
done
[ -z "$failed" ] || die "the UI is over its size budget (scripts/ui-size-budget.txt)"
echo "ui size ok"
