#!/usr/bin/env bash
# Installs what Signoff's build and tests need, skipping whatever is already there.
# Idempotent: a second run only checks versions.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null \
  || ! command -v brotli >/dev/null; then
  step "Installing Chromium, chromedriver and brotli from Debian"
  export DEBIAN_FRONTEND=noninteractive
  as_root apt-get update -qq
  # Not Debian's binaryen: its wasm-opt 108 silently breaks the app in the browser.
  as_root apt-get install -y -qq chromium chromium-driver brotli >/dev/null
fi

if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  step "Adding the wasm32-unknown-unknown target"
  rustup target add wasm32-unknown-unknown
fi

# The two tools run for seconds on this machine only: built without their fat LTO, with
# parallel codegen and light optimisation, they build in about half the time (trunk's release
# profile alone asks for one codegen unit and whole-program LTO).
tool_install() {
  CARGO_PROFILE_RELEASE_LTO=off CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
    CARGO_PROFILE_RELEASE_OPT_LEVEL=1 CARGO_PROFILE_RELEASE_DEBUG=false \
    cargo install "$@"
}

if ! trunk --version 2>/dev/null | grep -qx "trunk $TRUNK_VERSION"; then
  step "Installing trunk $TRUNK_VERSION from crates.io (about 4 minutes on 2 cores)"
  # 0.22 needs a newer rustc than the one here.
  tool_install trunk --version "$TRUNK_VERSION" --locked
fi

WB="$(wasm_bindgen_version)"
[ -n "$WB" ] || die "no wasm-bindgen in Cargo.lock"
if ! wasm-bindgen --version 2>/dev/null | grep -q " $WB\$"; then
  step "Installing wasm-bindgen-cli $WB from crates.io (about 2 minutes)"
  # Without --locked: its lockfile pins a webpki-roots the index here lacks.
  tool_install wasm-bindgen-cli --version "$WB" --force
fi

if ! wasm-opt --version 2>/dev/null | grep -q 'version 132' \
  || [ ! -f "$ROOT/tools/web/node_modules/axe-core/axe.min.js" ]; then
  step "Installing wasm-opt (binaryen 132) and axe-core (the browser tests' accessibility check) from npm"
  (cd "$ROOT/tools/web" && npm ci --no-audit --no-fund --silent)
fi

step "Fetching crates"
(cd "$ROOT" && cargo fetch --locked)
