#!/usr/bin/env bash
# Builds the release UI into dist/ with trunk (offline: it never downloads a tool), then writes
# each file's brotli (-q 11) and gzip (-9) twin, which the server sends to browsers that accept
# them (crates/server/src/http/ui.rs).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"
step "Building the UI (trunk build --release)"
trunk build --release --offline
step "Precompressing dist/ (brotli, gzip)"
shopt -s nullglob
for f in dist/*.wasm dist/*.js dist/*.css dist/*.html; do
  brotli -q 11 -f -k -o "$f.br" "$f"
  gzip -9 -n -f -k "$f"
done
