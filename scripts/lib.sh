# Shared by the scripts in this folder: paths, logging, and the toolchain pins.
# Sourced, not run.

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# The cargo target directory lives outside the clone so that fresh clones (CI) reuse builds.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/signoff/target}"
export PATH="$HOME/.cargo/bin:$ROOT/tools/web/node_modules/.bin:$PATH"
# trunk must never try to download a tool or check for updates (registries only).
export TRUNK_SKIP_VERSION_CHECK=true

# Pinned tool versions (see docs/toolchain.md for why these).
TRUNK_VERSION="0.21.14"

# Each step says how long the script has run, so a slow run shows where its minutes went.
SCRIPT_START="${SCRIPT_START:-$(date +%s)}"
export SCRIPT_START
step() {
  local elapsed=$(( $(date +%s) - SCRIPT_START ))
  printf '\n==> [%02d:%02d] %s\n' $((elapsed / 60)) $((elapsed % 60)) "$*"
}
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# The wasm-bindgen version in Cargo.lock; wasm-bindgen-cli must match it exactly.
wasm_bindgen_version() {
  awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' "$ROOT/Cargo.lock"
}

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}
