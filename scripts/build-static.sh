#!/usr/bin/env bash
# Builds the static Linux binary: `signoff` for x86_64-unknown-linux-musl, in release, with the
# built UI inside (the embed-ui feature), stripped, at target/static/signoff in the clone. It
# runs on any x86-64 Linux with no library installed; the container image (scripts/image.sh)
# holds nothing else.
#
#   scripts/build-static.sh              # builds the UI first (scripts/build-ui.sh)
#   scripts/build-static.sh --ui-built   # dist/ is fresh already (scripts/test.sh built it)
#
# Installs what it needs when missing: Debian's musl-tools (musl-gcc, for the crates that build
# C: SQLite, mimalloc, ring) and rustup's x86_64-unknown-linux-musl target.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"

TARGET=x86_64-unknown-linux-musl
BUILD_UI=1
case "${1:-}" in
  "") ;;
  --ui-built) BUILD_UI="" ;;
  *) die "usage: scripts/build-static.sh [--ui-built]" ;;
esac

if ! command -v musl-gcc >/dev/null; then
  step "Installing musl-tools from Debian (musl-gcc, for the crates that build C)"
  export DEBIAN_FRONTEND=noninteractive
  as_root apt-get update -qq
  as_root apt-get install -y -qq musl-tools >/dev/null
fi
if ! rustup target list --installed | grep -qx "$TARGET"; then
  step "Adding the $TARGET target"
  rustup target add "$TARGET" || die "rustup could not add the $TARGET target"
fi

if [ -n "$BUILD_UI" ]; then
  "$ROOT/scripts/setup.sh"
  "$ROOT/scripts/build-ui.sh"
fi
[ -f "$ROOT/dist/index.html" ] || die "no dist/index.html: build the UI first (scripts/build-ui.sh)"

step "Building signoff for $TARGET (release, the UI inside)"
# The cc crate builds the C parts (SQLite, mimalloc, ring) for musl with Debian's wrapper.
export CC_x86_64_unknown_linux_musl=musl-gcc
cargo build --release --locked -p signoff-server --features embed-ui --target "$TARGET"

OUT="$ROOT/target/static"
mkdir -p "$OUT"
strip -o "$OUT/signoff" "$CARGO_TARGET_DIR/$TARGET/release/signoff"
# Static: no interpreter, no shared library (file(1) may be missing, so readelf decides).
if readelf -l "$OUT/signoff" | grep -q 'INTERP'; then
  die "$OUT/signoff asks for a dynamic loader: it is not static"
fi
if readelf -d "$OUT/signoff" 2>/dev/null | grep -q 'NEEDED'; then
  die "$OUT/signoff needs shared libraries: it is not static"
fi
step "$("$OUT/signoff" --version): $OUT/signoff, $(wc -c <"$OUT/signoff") bytes (stripped, static)"
