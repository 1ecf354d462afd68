#!/usr/bin/env bash
# Sets up what is missing, builds the UI and the server with the UI inside it (the embed-ui
# feature: one binary, as released), and serves Signoff on http://127.0.0.1:8080 with the
# offline demo agent. Ctrl-C stops it.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
"$ROOT/scripts/setup.sh"
"$ROOT/scripts/build-ui.sh"
cd "$ROOT"
step "Building the server, the UI inside it"
cargo build --release --locked -p signoff-server --features embed-ui
ADDR="${SIGNOFF_ADDR:-127.0.0.1:8080}"
step "Signoff on http://$ADDR (data in ${SIGNOFF_DATA_DIR:-./data}; Ctrl-C stops it)"
exec "$CARGO_TARGET_DIR/release/signoff" --addr "$ADDR" \
  --data-dir "${SIGNOFF_DATA_DIR:-$ROOT/data}" "$@"
