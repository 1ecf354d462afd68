#!/usr/bin/env bash
# Runs the hostile-input property tests over and over, for a while each: every round uses a
# large PROPTEST_CASES and a fresh PROPTEST_RNG_SEED, so each round explores new inputs. Stops
# at the first failure and shows its output (proptest also saves the shrunk case under the
# crate's proptest-regressions/, and replays it first on every later run).
#
#   scripts/fuzz.sh [--seconds N] [--cases N] [--list] [TARGET...]
#
#   --seconds N  how long to fuzz each target (default 600); a round started in time finishes
#   --cases N    PROPTEST_CASES per property per round (default 1000)
#   --list       print the targets and exit
#   TARGET...    fuzz only these targets (default: all)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"

DURATION=600
CASES=1000

# name | cargo test selection | test name filter | what it covers
TARGETS=(
  "sse|-p signoff-protocol --test hostile_text|sse::|SSE parser: arbitrary bytes and chunkings; hostile text through encode_data and back"
  "codec|-p signoff-protocol --test hostile_text|codec::|A2A v0.3 and v1.0 request decoders: arbitrary JSON, hostile strings in every field, lone surrogates"
  "decision|-p signoff-protocol --test hostile_text|decision::|plain-text approval and rejection (Decision::from_text, from_message_or_text)"
  "json-keys|-p signoff-protocol --test hostile_text|json_keys::|duplicate JSON keys (json_keys::reject_duplicate_keys) against a tree walk"
  "markdown|-p signoff-ui --lib|markdown::proptests::prop_|the UI's markdown renderer: only its own tags, safe links, no <script"
  "scripted|-p signoff-server --lib|scripted::tests::prop_|the server's scripted-model grammar"
)

usage() {
  sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'
}

field() { # field INDEX LINE
  local parts
  IFS='|' read -r -a parts <<<"$2"
  printf '%s' "${parts[$1]}"
}

list_targets() {
  local target
  for target in "${TARGETS[@]}"; do
    printf '%-10s %s\n' "$(field 0 "$target")" "$(field 3 "$target")"
  done
}

selected=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds)
      [ $# -ge 2 ] || die "--seconds needs a number"
      DURATION="$2"
      shift 2
      ;;
    --cases)
      [ $# -ge 2 ] || die "--cases needs a number"
      CASES="$2"
      shift 2
      ;;
    --list)
      list_targets
      exit 0
      ;;
    -h | --help)
      usage
      exit 0
      ;;
    -*) die "unknown option $1 (see --help)" ;;
    *)
      selected+=("$1")
      shift
      ;;
  esac
done
[[ "$DURATION" =~ ^[0-9]+$ ]] || die "--seconds must be a whole number, not $DURATION"
[[ "$CASES" =~ ^[1-9][0-9]*$ ]] || die "--cases must be a positive whole number, not $CASES"

targets=()
if [ ${#selected[@]} -eq 0 ]; then
  targets=("${TARGETS[@]}")
else
  for name in "${selected[@]}"; do
    found=""
    for target in "${TARGETS[@]}"; do
      [ "$(field 0 "$target")" = "$name" ] && found="$target"
    done
    [ -n "$found" ] || die "no target $name (see --list)"
    targets+=("$found")
  done
fi

# Builds a target's test binary (a failed build is a failure, shown) and prints its path.
build() {
  local selection="$1" log
  log="$(mktemp)"
  # shellcheck disable=SC2086 # the selection is several arguments
  if ! cargo test $selection --no-run >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    die "could not build: cargo test $selection"
  fi
  rm -f "$log"
  # shellcheck disable=SC2086
  cargo test $selection --no-run --message-format=json 2>/dev/null |
    grep -o '"executable":"[^"]*"' | tail -n 1 | cut -d'"' -f4
}

random_seed() {
  od -An -N8 -tu8 /dev/urandom | tr -d ' \n'
}

summary=()
for target in "${targets[@]}"; do
  name="$(field 0 "$target")"
  selection="$(field 1 "$target")"
  filter="$(field 2 "$target")"
  step "fuzz $name: $(field 3 "$target")"
  binary="$(build "$selection")"
  [ -x "$binary" ] || die "cargo gave no test binary for: cargo test $selection"
  tests="$("$binary" --list "$filter" 2>/dev/null | grep -c ': test$' || true)"
  if [ "$tests" -eq 0 ]; then
    echo "$name: no tests match '$filter' in cargo test $selection; absent, skipped"
    summary+=("$name: absent, skipped")
    continue
  fi
  echo "$tests properties, $CASES cases each per round, for ${DURATION} s"
  start=$SECONDS
  rounds=0
  while [ "$rounds" -eq 0 ] || [ $((SECONDS - start)) -lt "$DURATION" ]; do
    seed="$(random_seed)"
    if ! output="$(PROPTEST_CASES="$CASES" PROPTEST_RNG_SEED="$seed" "$binary" "$filter" 2>&1)"; then
      printf '%s\n' "$output"
      echo
      echo "FAILED: $name, round $((rounds + 1)), after $((rounds * tests * CASES)) passing cases"
      echo "reproduce: PROPTEST_CASES=$CASES PROPTEST_RNG_SEED=$seed cargo test $selection -- $filter"
      exit 1
    fi
    rounds=$((rounds + 1))
  done
  line="$name: $((rounds * tests * CASES)) cases ($tests properties x $CASES cases x $rounds rounds) in $((SECONDS - start)) s, all passed"
  echo "$line"
  summary+=("$line")
done

step "Summary"
printf '%s\n' "${summary[@]}"
