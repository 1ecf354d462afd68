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

# A cold run of the test command fills about this much of the target directory's disk.
NEEDED_DISK_GB=12
# Stops early, with a clear message, when the disk holding the target directory $1 cannot take what
# a run still has to build ($2 GB cold, less what the directory already holds): running out halfway
# fails tests with errors that say nothing of the disk.
check_free_disk() {
  local dir="$1" needed_gb="$2" probe free_gb held_gb
  probe="$dir"
  while [ ! -d "$probe" ]; do probe="$(dirname "$probe")"; done
  free_gb=$(( $(df -Pk "$probe" | awk 'NR == 2 { print $4 }') / 1024 / 1024 ))
  held_gb=0
  if [ -d "$dir" ]; then held_gb=$(( $(du -sk "$dir" | cut -f1) / 1024 / 1024 )); fi
  local wanted_gb=$(( needed_gb - held_gb ))
  if [ "$wanted_gb" -lt 2 ]; then wanted_gb=2; fi
  if [ "$free_gb" -lt "$wanted_gb" ]; then
    die "only ${free_gb} GB free on the disk of $dir, which already holds ${held_gb} GB; this run needs about ${wanted_gb} GB more. Free some space (cargo clean empties the target directory) and run again."
  fi
  echo "disk: ${free_gb} GB free, ${held_gb} GB already built in $dir"
}
