#!/usr/bin/env bash
# Runs every check Signoff has: formatting, lints, native tests (protocol, server, UI reducer),
# the wasm32 builds, the release UI with its size budget, the binary with the UI inside, the
# browser tests in headless Chromium, the server's tests a second time on PostgreSQL, three
# replicas on one PostgreSQL (alone, and behind the README's nginx), the container image (when
# podman works here), the Kubernetes manifests, and the interop tests with third-party A2A
# clients. Exits non-zero on the first failure.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$ROOT/scripts/postgres.sh"
cd "$ROOT"
trap postgres_stop EXIT
START=$SECONDS
LOG="$CARGO_TARGET_DIR/signoff-test.log"
mkdir -p "$CARGO_TARGET_DIR"
: >"$LOG"

# A fresh clone builds everything once: incremental caches would only add gigabytes of disk.
if [ "${CI:-}" = "true" ]; then export CARGO_INCREMENTAL=0; fi
check_free_disk "$CARGO_TARGET_DIR" "$NEEDED_DISK_GB"

"$ROOT/scripts/setup.sh"

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy (native, all targets) -D warnings"
cargo clippy --locked --workspace --all-targets -- -D warnings
# Run by name only (it needs PostgreSQL), so --all-targets leaves it out.
cargo clippy --locked -p signoff-server --test replicas -- -D warnings
cargo clippy --locked -p signoff-server --test oidc -- -D warnings

step "cargo clippy (UI and protocol for wasm32) -D warnings"
cargo clippy --locked -p signoff-ui --target wasm32-unknown-unknown -- -D warnings
# The UI lints only its own crate: the protocol crate (its `redact` rules too) is linted as wasm here.
cargo clippy --locked -p signoff-protocol --target wasm32-unknown-unknown -- -D warnings

step "wasm32 build of the protocol crate"
cargo build --locked -p signoff-protocol --target wasm32-unknown-unknown

"$ROOT/scripts/build-ui.sh"

step "UI size budget"
"$ROOT/scripts/ui-size.sh"

step "The binary with the UI inside (the embed-ui feature): clippy, the static build, and its test"
cargo clippy --locked -p signoff-server --features embed-ui --lib --bins --test embedded_ui -- -D warnings
# One build with the UI inside serves both this test and the container image's check below: the
# static binary, in the quick profile (Cargo.toml, static-check).
"$ROOT/scripts/build-static.sh" --ui-built --profile static-check
SIGNOFF_EMBEDDED_BIN="$ROOT/target/static-static-check/signoff" \
  cargo test --locked -p signoff-server --test embedded_ui 2>&1 | tee -a "$LOG"

step "MCP servers for the server's tests (npm, PyPI)"
"$ROOT/crates/server/tests/mcp/install.sh"

step "The OpenID provider for the sign-in tests (npm's oidc-provider)"
"$ROOT/crates/server/tests/oidc/install.sh"

step "The webhook verifier for the notification tests (PyPI's standardwebhooks)"
"$ROOT/crates/server/tests/notify/install.sh"
step "The Web Push checks (PyPI's PyJWT and http_ece)"
"$ROOT/crates/server/tests/web_push/install.sh"
step "Slack's message types for the Slack test (npm's @slack/types, @slack/webhook, typescript)"
"$ROOT/crates/server/tests/slack/install.sh"
step "The SMTP server for the email test (PyPI's aiosmtpd)"
"$ROOT/crates/server/tests/email/install.sh"
step "Claude Code and the MCP TypeScript SDK for the gateway tests (npm's @anthropic-ai/claude-code, @modelcontextprotocol/sdk)"
"$ROOT/crates/server/tests/gateway/install.sh"
step "Claude Code over ACP for the coding-agent tests (npm's @zed-industries/claude-code-acp)"
"$ROOT/crates/server/tests/acp/install.sh"
step "Codex for the codex tests (npm's @openai/codex, the last release with codex mcp-server)"
"$ROOT/crates/server/tests/codex/install.sh"

step "The worked examples of docs/policies.md: signoff policy check and test"
cargo run --locked -q -p signoff-server -- policy check --agents docs/policies/agents.toml \
  --policies docs/policies \
  --environment prod --groups oncall,sre
cargo run --locked -q -p signoff-server -- policy test --agents docs/policies/agents.toml \
  --policies docs/policies \
  --environment prod docs/policies/cases.toml

step "cargo test (protocol, server, UI reducer, browser tests in headless Chromium: --test browser)"
export SIGNOFF_UI_DIR="$ROOT/dist"
cargo test --locked --workspace 2>&1 | tee -a "$LOG"

step "The server's tests again on PostgreSQL (store, HITL, restart, MCP, upstream, gateway)"
postgres_for_tests
SIGNOFF_TEST_BACKEND=postgres cargo test --locked -p signoff-server --test api --test mcp --test upstream --test gateway 2>&1 | tee -a "$LOG"

step "Sign-in against a real OpenID provider (--auth oidc), on SQLite and on PostgreSQL"
cargo test --locked -p signoff-server --test oidc 2>&1 | tee -a "$LOG"
SIGNOFF_TEST_BACKEND=postgres cargo test --locked -p signoff-server --test oidc 2>&1 | tee -a "$LOG"

if ! command -v nginx >/dev/null && [ ! -x /usr/sbin/nginx ]; then
  step "Installing nginx from Debian (the load balancer in front of the replicas)"
  export DEBIAN_FRONTEND=noninteractive
  as_root apt-get update -qq
  as_root apt-get install -y -qq nginx-light openssl >/dev/null
fi
step "Three replicas on one PostgreSQL: 300 chats, one replica killed and restarted; notifications through a kill; and behind nginx"
# One test at a time: each starts three replicas, and the kills must not starve each other.
cargo test --locked -p signoff-server --test replicas -- --nocapture --test-threads=1 2>&1 | tee -a "$LOG"

step "The Kubernetes manifests (deploy/kubernetes): rendered and validated"
"$ROOT/scripts/kubernetes.sh" 2>&1 | tee -a "$LOG"

step "The container image (deploy/Containerfile, the static binary built above)"
if ! command -v podman >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  as_root apt-get update -qq && as_root apt-get install -y -qq podman >/dev/null || true
fi
if command -v podman >/dev/null && podman info >/dev/null 2>&1; then
  "$ROOT/scripts/image.sh" --profile static-check --binary-built 2>&1 | tee -a "$LOG"
else
  echo "image check skipped: podman does not work on this machine (podman info fails)" | tee -a "$LOG"
fi

if [ -x "$ROOT/tests/interop/run.sh" ]; then
  step "Interop with third-party A2A clients (a2a-sdk from PyPI, @a2a-js/sdk from npm)"
  "$ROOT/tests/interop/run.sh" 2>&1 | tee -a "$LOG"
fi

step "Summary"
passed=$(grep -Eo 'test result: ok\. [0-9]+ passed' "$LOG" | awk '{s+=$4} END {print s+0}')
suites=$(grep -c 'test result: ok\.' "$LOG" || true)
interop=$(grep -c '^interop ok:' "$LOG" || true)
deploy=$(grep -Ec '^(image ok|kubernetes manifests ok):' "$LOG" || true)
echo "all checks passed: $passed Rust tests in $suites suites, $interop interop checks, $deploy deployment checks, in $((SECONDS - START)) s"
