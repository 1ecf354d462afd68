#!/usr/bin/env bash
# Installs the OpenID provider the sign-in tests run (npm's oidc-provider, pinned by
# package-lock.json). Idempotent: when the installed version matches the lock it only checks.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
installed() {
  node -e 'try { process.stdout.write(require("./node_modules/oidc-provider/package.json").version) } catch (e) {}'
}
locked() {
  node -e 'process.stdout.write(require("./package-lock.json").packages["node_modules/oidc-provider"].version)'
}
if [ "$(installed)" != "$(locked)" ]; then
  echo "==> Installing the test OpenID provider from npm (crates/server/tests/oidc)"
  npm ci --no-audit --no-fund --silent
fi
[ "$(installed)" = "$(locked)" ] || { echo "error: oidc-provider is missing after npm ci" >&2; exit 1; }
echo "Test OpenID provider oidc-provider $(installed) is installed"
