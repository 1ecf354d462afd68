#!/usr/bin/env bash
# What a person waits for when the UI loads on a slow link (scripts/ui-load-bench.py): serves
# a built dist/ with the release server on loopback (fresh data folder, the demo agent), starts
# chromedriver, and prints the bytes and times. Builds nothing but the server.
#
#   scripts/ui-load-bench.sh                 # dist/ as scripts/build-ui.sh left it
#   scripts/ui-load-bench.sh /tmp/dist-old   # another build, to compare
#   RUNS=3 scripts/ui-load-bench.sh          # fewer runs (default 10)
#   PROFILE=dev scripts/ui-load-bench.sh     # a debug server (builds faster; the link and the
#                                            # browser's CPU, not the server, set the times)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
DIST="$(cd "${1:-$ROOT/dist}" && pwd)"
[ -f "$DIST/index.html" ] || die "no $DIST/index.html: build the UI first (scripts/build-ui.sh)"
cd "$ROOT"
PROFILE="${PROFILE:-release}"
step "Building the server ($PROFILE)"
cargo build --profile "$PROFILE" --locked -p signoff-server
BIN_DIR="$CARGO_TARGET_DIR/$([ "$PROFILE" = dev ] && echo debug || echo "$PROFILE")"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/signoff-ui-bench.XXXXXX")"
PIDS=()
cleanup() { for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
SERVER_PORT=$(free_port)
"$BIN_DIR/signoff" --addr "127.0.0.1:$SERVER_PORT" --data-dir "$WORK/data" \
  --ui-dir "$DIST" >"$WORK/server.log" 2>&1 &
PIDS+=($!)
DRIVER_PORT=$(free_port)
"${CHROMEDRIVER:-/usr/bin/chromedriver}" --port="$DRIVER_PORT" >"$WORK/driver.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do
  curl -fsS "http://127.0.0.1:$SERVER_PORT/healthz" >/dev/null 2>&1 \
    && curl -fsS "http://127.0.0.1:$DRIVER_PORT/status" >/dev/null 2>&1 && break
  sleep 0.2
done
step "Loading the UI from $DIST (1.6 Mbit/s, 150 ms RTT, CPU 4x slower)"
python3 "$ROOT/scripts/ui-load-bench.py" --base "http://127.0.0.1:$SERVER_PORT" --dist "$DIST" \
  --driver "http://127.0.0.1:$DRIVER_PORT" --chromium "${CHROMIUM:-/usr/bin/chromium}" \
  --runs "${RUNS:-10}"
