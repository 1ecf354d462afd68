#!/usr/bin/env bash
# The bench command: builds the server, the bench and the UI in release, runs the real
# server binary on loopback with fresh data folders, prints a table of every figure, and writes
# the same figures as JSON to target/bench/results.json (the table to target/bench/results.txt).
#
#   scripts/bench.sh                      # everything, the issue's counts (the waiting phase's
#                                         # 100,000 paused chats take minutes more on 2 cores)
#   scripts/bench.sh --scale 0.1          # a quick look with a tenth of the chats
#   scripts/bench.sh --phases latency,load
#   scripts/bench.sh --phases reach,waiting,replicas --scale 0.1
#
# Arguments are passed to the bench binary (crates/bench; `--help` lists them).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$ROOT/scripts/postgres.sh"
cd "$ROOT"
START=$SECONDS

"$ROOT/scripts/build-ui.sh"

step "Building the server (the UI inside) and the bench (release)"
# Two builds, not one: built together, cargo would unify the bench's dependency features into
# the server's, and the bench would measure a binary other than the one scripts/run.sh serves.
cargo build --release --locked -p signoff-server --features embed-ui
cargo build --release --locked -p signoff-bench

OUT="$ROOT/target/bench"
mkdir -p "$OUT"
step "UI transfer size"
# Over the size budget ui-size.sh fails, but its figures are still what we report.
"$ROOT/scripts/ui-size.sh" | tee "$OUT/ui-size.txt" || true

# Fresh data folders for every server the bench starts, removed at the end.
WORK="$(mktemp -d "${TMPDIR:-/tmp}/signoff-bench.XXXXXX")"
trap 'rm -rf "$WORK"; postgres_stop' EXIT
# 1,000 concurrent chats need a few thousand sockets on each side.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

# The shipping sizes are of what scripts/build-static.sh and scripts/image.sh left (not rebuilt
# here: the static build alone takes minutes); the table notes which commit the binary is of.
SHIP=()
[ -f "$ROOT/target/static/signoff" ] && SHIP+=(--static-binary "$ROOT/target/static/signoff")
if command -v podman >/dev/null \
  && IMAGE_BYTES="$(podman image inspect --format '{{.Size}}' localhost/signoff:latest 2>/dev/null)"; then
  SHIP+=(--image-bytes "$IMAGE_BYTES")
fi

DIRTY=()
[ -z "$(git status --porcelain --untracked-files=no)" ] || DIRTY=(--dirty)

step "PostgreSQL for the replicas phase"
postgres_for_tests

step "Running the bench (the real server on 127.0.0.1, fresh data in $WORK)"
"$CARGO_TARGET_DIR/release/signoff-bench" \
  --server "$CARGO_TARGET_DIR/release/signoff" \
  --work-dir "$WORK" \
  --out "$OUT/results.json" \
  --commit "$(git rev-parse --short=12 HEAD)" "${DIRTY[@]}" \
  --ui-size "$OUT/ui-size.txt" \
  --mcp-dir "$ROOT/crates/server/tests/mcp" \
  --dist "$ROOT/dist" \
  --postgres "$SIGNOFF_TEST_POSTGRES_URL" \
  ${SHIP[@]+"${SHIP[@]}"} \
  "$@" | tee "$OUT/results.txt"

step "Done in $((SECONDS - START)) s: $OUT/results.json"
