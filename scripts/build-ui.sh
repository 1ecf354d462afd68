#!/usr/bin/env bash
# Builds the release UI into dist/: trunk writes index.html and the CSS (offline: it never
# downloads a tool); cargo builds the wasm with the `ui` profile; crates/ui-split splits it at
# its split points into the module the chat needs at once and chunks loaded on first use, runs
# wasm-bindgen and wasm-opt on them, names each file by a hash of its content and adds the
# loader to index.html (docs/toolchain.md, UI chunks). Then each file gets its brotli (-q 11)
# and gzip (-9) twin, which the server sends to browsers that accept them
# (crates/server/src/http/ui.rs).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"
step "Building index.html and the CSS (trunk build --release)"
trunk build --release --offline
step "Building the wasm (cargo, the ui profile) and the splitter"
cargo build --locked --profile ui --target wasm32-unknown-unknown -p signoff-ui --bin signoff-ui
cargo build --locked --profile tool -p signoff-ui-split
step "Splitting the wasm into chunks (wasm-split, wasm-bindgen, wasm-opt)"
"$CARGO_TARGET_DIR/tool/signoff-ui-split" \
  "$CARGO_TARGET_DIR/wasm32-unknown-unknown/ui/signoff-ui.wasm" dist
step "Precompressing dist/ (brotli, gzip)"
shopt -s nullglob
for f in dist/*.wasm dist/*.js dist/*.css dist/*.html; do
  brotli -q 11 -f -k -o "$f.br" "$f"
  gzip -9 -n -f -k "$f"
done
