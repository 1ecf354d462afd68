#!/usr/bin/env bash
# Interop tests: A2A clients nobody here wrote drive the Signoff server end to end, the
# `a2a-sdk` Python client (PyPI) and the `@a2a-js/sdk` client (npm), each in A2A v0.3 and v1.0.
# The Python run also takes a push notification on a local receiver and checks its JWT with
# PyJWT against the server's JWKS.
#
# Installs the pinned clients (skipped when already installed), builds the server, then for each
# client and version starts a fresh server (new data dir, free port), runs the client against it
# and stops the server. Each passing check prints `interop ok: <what>`; a failing one prints what
# was expected and what came, and the script exits non-zero after the remaining runs.
# Needs no network beyond PyPI and npm (and only on the first run).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/signoff/target}"
export PATH="$HOME/.cargo/bin:$PATH"
export PIP_DISABLE_PIP_VERSION_CHECK=1
VENV="${SIGNOFF_INTEROP_VENV:-$HOME/.cache/signoff/interop-venv}"
PYTHON="${PYTHON:-python3}"
CLIENT_TIMEOUT_S=300
START_TIMEOUT_S=30

step() { printf '\n==> %s\n' "$*"; }
die() { printf 'interop FAIL: %s\n' "$*" >&2; exit 1; }

# ---- 1. the clients, pinned ----------------------------------------------------------------

# The venv is rebuilt whenever requirements.txt changes; the stamp is a copy of the file it was
# built from.
if ! cmp -s "$HERE/requirements.txt" "$VENV/.signoff-requirements.txt" \
  || ! "$VENV/bin/python" -c 'import a2a.client' 2>/dev/null; then
  step "Installing the a2a-sdk Python client into $VENV (pinned, from PyPI)"
  if ! "$PYTHON" -c 'import ensurepip, venv' 2>/dev/null; then
    # Debian's python3 ships venv support separately.
    export DEBIAN_FRONTEND=noninteractive
    if [ "$(id -u)" -eq 0 ]; then apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null
    else sudo apt-get update -qq && sudo apt-get install -y -qq python3-venv >/dev/null; fi
  fi
  rm -rf "$VENV"
  mkdir -p "$(dirname "$VENV")"
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --requirement "$HERE/requirements.txt"
  cp "$HERE/requirements.txt" "$VENV/.signoff-requirements.txt"
fi

# `npm ci` wipes node_modules, so the stamp (a copy of the lockfile) goes with it.
if ! cmp -s "$HERE/package-lock.json" "$HERE/node_modules/.signoff-package-lock.json"; then
  step "Installing the @a2a-js/sdk client into tests/interop/node_modules (npm ci)"
  (cd "$HERE" && npm ci --no-audit --no-fund --silent)
  cp "$HERE/package-lock.json" "$HERE/node_modules/.signoff-package-lock.json"
fi

# ---- 2. the server ---------------------------------------------------------------------------

step "Building the server (cargo build -p signoff-server)"
(cd "$ROOT" && cargo build --locked -p signoff-server)
BIN="$CARGO_TARGET_DIR/debug/signoff"
[ -x "$BIN" ] || die "no server binary at $BIN after the build"

SERVER_PID=""
RUN_DIR=""
stop_server() {
  if [ -n "$SERVER_PID" ]; then
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=""
  fi
}
cleanup() {
  stop_server
  if [ -n "$RUN_DIR" ]; then rm -rf "$RUN_DIR"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
  "$VENV/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Starts a server on a free port with a fresh data dir; sets PORT and DATA. Retries when the
# server dies at start (another process may take the free port between the probe and the bind).
start_server() {
  local attempt deadline
  for attempt in 1 2 3; do
    DATA="$(mktemp -d "$RUN_DIR/data.XXXXXX")"
    PORT="$(free_port)"
    # --push-allow: the Python client's push receiver listens on this machine's loopback.
    NO_COLOR=1 "$BIN" --addr "127.0.0.1:$PORT" --data-dir "$DATA" --push-allow 127.0.0.1/32 \
      >"$DATA.log" 2>&1 &
    SERVER_PID=$!
    deadline=$((SECONDS + START_TIMEOUT_S))
    while [ "$SECONDS" -lt "$deadline" ]; do
      if ! kill -0 "$SERVER_PID" 2>/dev/null; then
        wait "$SERVER_PID" 2>/dev/null || true
        SERVER_PID=""
        break
      fi
      if curl -fsS -o /dev/null --max-time 2 "http://127.0.0.1:$PORT/.well-known/agent-card.json"; then
        return 0
      fi
      sleep 0.2
    done
    if [ -n "$SERVER_PID" ]; then
      stop_server
      printf 'server did not answer GET /.well-known/agent-card.json within %s s; its log:\n' "$START_TIMEOUT_S" >&2
      tail -n 40 "$DATA.log" >&2
      return 1
    fi
    printf 'server exited at start (attempt %s); its log:\n' "$attempt" >&2
    tail -n 40 "$DATA.log" >&2
  done
  return 1
}

RUN_DIR="$(mktemp -d "${TMPDIR:-/tmp}/signoff-interop.XXXXXX")"

# ---- 3. the clients against fresh servers ----------------------------------------------------

failed=()
passed=0
run_client() {
  local name="$1" version="$2"
  shift 2
  step "Interop: $name client, A2A v$version"
  if ! start_server; then
    echo "interop FAIL: $name v$version: the server did not start" >&2
    failed+=("$name v$version")
    return 0
  fi
  local base="http://127.0.0.1:$PORT"
  if timeout "$CLIENT_TIMEOUT_S" "$@" --base "$base" --version "$version" --sandbox "$DATA/sandbox"; then
    passed=$((passed + 1))
  else
    echo "interop FAIL: $name v$version (exit $?); the server's log:" >&2
    tail -n 40 "$DATA.log" >&2
    failed+=("$name v$version")
  fi
  stop_server
}

for version in 0.3 1.0; do
  run_client "python a2a-sdk" "$version" "$VENV/bin/python" "$HERE/python_client.py"
done
for version in 0.3 1.0; do
  run_client "node @a2a-js/sdk" "$version" node "$HERE/js_client.mjs"
done

step "Interop summary"
if [ "${#failed[@]}" -gt 0 ]; then
  printf 'interop: %s client runs passed; failed: %s\n' "$passed" "$(IFS=,; echo "${failed[*]}")" >&2
  exit 1
fi
echo "interop: all $passed client runs passed (python a2a-sdk and node @a2a-js/sdk, A2A v0.3 and v1.0)"
