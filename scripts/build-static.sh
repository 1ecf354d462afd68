#!/usr/bin/env bash
# Builds the static Linux binary: `signoff` for x86_64-unknown-linux-musl, in release, with the
# built UI inside (the embed-ui feature), stripped, at target/static/signoff in the clone. It
# runs on any x86-64 Linux with no library installed; the container image (scripts/image.sh)
# holds nothing else.
#
#   scripts/build-static.sh              # builds the UI first (scripts/build-ui.sh)
#   scripts/build-static.sh --ui-built   # dist/ is fresh already (scripts/test.sh built it)
#   scripts/build-static.sh --profile static-check
#                                        # the test command's quick build (Cargo.toml says why),
#                                        # at target/static-static-check/signoff instead
#
# Installs what it needs when missing: Debian's musl-tools (musl-gcc, for the crates that build
# C: SQLite, mimalloc, ring) and rustup's x86_64-unknown-linux-musl target.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"

TARGET=x86_64-unknown-linux-musl
BUILD_UI=1
PROFILE=release
while [ $# -gt 0 ]; do
  case "$1" in
    --ui-built) BUILD_UI=""; shift ;;
    --profile) [ $# -ge 2 ] || die "--profile needs a name"; PROFILE="$2"; shift 2 ;;
    *) die "usage: scripts/build-static.sh [--ui-built] [--profile NAME]" ;;
  esac
done

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

step "Building signoff for $TARGET ($PROFILE, the UI inside)"
# The cc crate builds the C parts (SQLite, mimalloc, ring) for musl with Debian's wrapper.
export CC_x86_64_unknown_linux_musl=musl-gcc
cargo build --profile "$PROFILE" --locked -p signoff-server --features embed-ui --target "$TARGET"

# The shipping build keeps its place (scripts/bench.sh measures it); another profile's is apart.
OUT="$ROOT/target/static"
[ "$PROFILE" = release ] || OUT="$ROOT/target/static-$PROFILE"
PROFILE_DIR="$PROFILE"
[ "$PROFILE" = dev ] && PROFILE_DIR=debug
mkdir -p "$OUT"
strip -o "$OUT/signoff" "$CARGO_TARGET_DIR/$TARGET/$PROFILE_DIR/signoff"
# Static: no interpreter, no shared library (file(1) may be missing, so readelf decides).
if readelf -l "$OUT/signoff" | grep -q 'INTERP'; then
  die "$OUT/signoff asks for a dynamic loader: it is not static"
fi
if readelf -d "$OUT/signoff" 2>/dev/null | grep -q 'NEEDED'; then
  die "$OUT/signoff needs shared libraries: it is not static"
fi
step "$("$OUT/signoff" --version): $OUT/signoff, $(wc -c <"$OUT/signoff") bytes (stripped, static)"
