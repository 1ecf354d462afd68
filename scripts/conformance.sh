#!/usr/bin/env bash
# Runs the official A2A conformance suite (the A2A TCK) against the real server with the
# conformance agent, and prints the counts per category.
#
#   scripts/conformance.sh PATH-TO-A2A-TCK-CHECKOUT
#
# The checkout is a git clone of the suite (a work tree or a bare repository) holding the
# branches `0.3.x` (A2A v0.3) and `1.0-dev` (A2A v1.0); it is not part of this repository and
# is only read: each branch is exported with `git archive` into $HOME/.cache/signoff/tck/.
# The suite's Python dependencies go into one venv per line under $HOME/.cache/signoff/ (from
# PyPI). For each line the server is started with --conformance-agent on a free port with a
# fresh data dir. v0.3: the categories mandatory, capabilities, quality, features, against the
# agent's JSON-RPC endpoint. v1.0: the `must` and `should` levels over JSON-RPC, from the origin.
# Reports (JUnit XML, the server's log) stay in $HOME/.cache/signoff/tck/reports/.
# Not part of scripts/test.sh. docs/conformance.md says what the conformance agent does.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"

[ $# -eq 1 ] || die "usage: scripts/conformance.sh PATH-TO-A2A-TCK-CHECKOUT"
TCK_GIT="$1"
git -C "$TCK_GIT" rev-parse --git-dir >/dev/null 2>&1 || die "$TCK_GIT is not a git checkout"
CACHE="$HOME/.cache/signoff/tck"
REPORTS="$CACHE/reports"
PYTHON="${PYTHON:-python3}"
export PIP_DISABLE_PIP_VERSION_CHECK=1
START_TIMEOUT_S=30
# The suite's streaming timeout; the conformance agent's long-running task outlasts twice it.
export TCK_STREAMING_TIMEOUT=2.0
mkdir -p "$CACHE" "$REPORTS"

# ---- the suite: each line exported from its branch, with its venv ----------------------------

# export_line BRANCH: the branch's files in $CACHE/BRANCH (fresh each run); prints the commit.
export_line() {
  local branch="$1" commit
  commit="$(git -C "$TCK_GIT" rev-parse --verify "$branch^{commit}" 2>/dev/null \
    || git -C "$TCK_GIT" rev-parse --verify "origin/$branch^{commit}")" \
    || die "no branch $branch in $TCK_GIT"
  rm -rf "${CACHE:?}/$branch"
  mkdir -p "$CACHE/$branch"
  git -C "$TCK_GIT" archive "$commit" | tar -x -C "$CACHE/$branch"
  echo "$commit"
}

# venv_for BRANCH: a venv with the line's dependencies (requirements.txt, else pyproject's list),
# rebuilt when that list changes.
venv_for() {
  local branch="$1" venv="$HOME/.cache/signoff/tck-venv-$1" deps="$CACHE/$1.deps"
  if [ -f "$CACHE/$branch/requirements.txt" ]; then
    cp "$CACHE/$branch/requirements.txt" "$deps"
    # The v0.3 line's TLS tests import OpenSSL, which its requirements.txt does not list
    # (without it pytest stops at collecting the mandatory tests).
    printf '\npyOpenSSL\n' >>"$deps"
  else
    "$PYTHON" - "$CACHE/$branch/pyproject.toml" >"$deps" <<'PY'
import sys, tomllib
with open(sys.argv[1], "rb") as f:
    print("\n".join(tomllib.load(f)["project"]["dependencies"]))
PY
  fi
  if ! cmp -s "$deps" "$venv/.signoff-deps.txt"; then
    step "Installing the $branch suite's Python dependencies into $venv (PyPI)" >&2
    rm -rf "$venv"
    "$PYTHON" -m venv "$venv"
    "$venv/bin/pip" install --quiet --requirement "$deps" >&2
    cp "$deps" "$venv/.signoff-deps.txt"
  fi
  echo "$venv"
}

# ---- the server ---------------------------------------------------------------------------------

step "Building the server (cargo build -p signoff-server)"
cargo build --locked -p signoff-server
BIN="$CARGO_TARGET_DIR/debug/signoff"
[ -x "$BIN" ] || die "no server binary at $BIN after the build"

SERVER_PID=""
RUN_DIR="$(mktemp -d "${TMPDIR:-/tmp}/signoff-conformance.XXXXXX")"
stop_server() {
  if [ -n "$SERVER_PID" ]; then
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=""
  fi
}
trap 'stop_server; rm -rf "$RUN_DIR"' EXIT
trap 'exit 130' INT TERM

free_port() {
  "$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# start_server NAME: a server with the conformance agent on a free port and a fresh data dir;
# sets PORT. Its log is $REPORTS/NAME-server.log.
start_server() {
  local name="$1" attempt deadline log="$REPORTS/$1-server.log"
  for attempt in 1 2 3; do
    PORT="$(free_port)"
    NO_COLOR=1 "$BIN" --addr "127.0.0.1:$PORT" --data-dir "$(mktemp -d "$RUN_DIR/data.XXXXXX")" \
      --conformance-agent >"$log" 2>&1 &
    SERVER_PID=$!
    deadline=$((SECONDS + START_TIMEOUT_S))
    while [ "$SECONDS" -lt "$deadline" ] && kill -0 "$SERVER_PID" 2>/dev/null; do
      if curl -fs -o /dev/null --max-time 2 "http://127.0.0.1:$PORT/.well-known/agent-card.json"; then
        return 0
      fi
      sleep 0.2
    done
    stop_server
    printf 'the server did not start (attempt %s); its log:\n' "$attempt" >&2
    tail -n 20 "$log" >&2
  done
  die "the server did not start"
}

# counts REPORT.xml [PART]: "P passed, F failed, S skipped" from a JUnit report, of the tests
# whose module or class name holds PART if given (an xfail is a skip there; pytest's own summary
# line, printed above, tells them apart).
counts() {
  "$PYTHON" - "$1" "${2:-}" <<'PY'
import sys, xml.etree.ElementTree as ET
cases = [case for case in ET.parse(sys.argv[1]).getroot().iter("testcase")
         if sys.argv[2] in case.get("classname", "")]
passed = failed = skipped = 0
for case in cases:
    kinds = {child.tag for child in case}
    if kinds & {"failure", "error"}:
        failed += 1
    elif "skipped" in kinds:
        skipped += 1
    else:
        passed += 1
print(f"{passed} passed, {failed} failed, {skipped} skipped")
PY
}

SUMMARY=()

# ---- v0.3 ---------------------------------------------------------------------------------------

COMMIT_03="$(export_line 0.3.x)"
VENV_03="$(venv_for 0.3.x)"
start_server v0.3
for category in mandatory capabilities quality features; do
  case "$category" in
    mandatory) path="tests/mandatory/"; markers=(-m "mandatory_jsonrpc or mandatory_protocol") ;;
    *) path="tests/optional/$category/"; markers=() ;;
  esac
  step "A2A v0.3 suite ($COMMIT_03): $category"
  (cd "$CACHE/0.3.x" && "$VENV_03/bin/python" -m pytest "$path" \
    "--sut-url=http://127.0.0.1:$PORT/api/a2a/default/conformance" --test-scope=all \
    --tb=short -q -rs -p no:cacheprovider ${markers[@]+"${markers[@]}"} \
    "--junitxml=$REPORTS/v0.3-$category.xml") || true
  SUMMARY+=("v0.3 $category: $(counts "$REPORTS/v0.3-$category.xml")")
done
stop_server

# ---- v1.0 ---------------------------------------------------------------------------------------

COMMIT_10="$(export_line 1.0-dev)"
VENV_10="$(venv_for 1.0-dev)"
start_server v1.0
for level in must should; do
  step "A2A v1.0 suite ($COMMIT_10): $level (JSON-RPC)"
  (cd "$CACHE/1.0-dev" && "$VENV_10/bin/python" -m pytest tests/compatibility/ \
    "--sut-host=http://127.0.0.1:$PORT" --transport=jsonrpc -m "$level" --tb=short -q -rs \
    -p no:cacheprovider "--junitxml=$REPORTS/v1.0-$level.xml") || true
  SUMMARY+=("v1.0 $level (JSON-RPC): $(counts "$REPORTS/v1.0-$level.xml")")
done
SUMMARY+=("v1.0 should, agent card caching: $(counts "$REPORTS/v1.0-should.xml" caching)")
stop_server

step "Counts (suite commits: 0.3.x $COMMIT_03, 1.0-dev $COMMIT_10; reports in $REPORTS)"
printf '%s\n' "${SUMMARY[@]}"
