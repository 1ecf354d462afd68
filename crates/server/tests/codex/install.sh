#!/usr/bin/env bash
# Installs Codex for the server's codex tests, at the pinned version, from the npm registry only:
# @openai/codex (package-lock.json), whose native binary comes in the platform package of its
# optionalDependencies (here @openai/codex-linux-x64). 0.153.4 is the last release with
# `codex mcp-server` (0.154.0 removed it). Idempotent: when the installed version matches the
# lock it only checks.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

installed="$(node -e 'try { process.stdout.write(require("./node_modules/@openai/codex/package.json").version) } catch (e) {}')"
locked="$(node -e 'process.stdout.write(require("./package-lock.json").packages["node_modules/@openai/codex"].version)')"
if [ "$installed" != "$locked" ] || [ ! -x node_modules/.bin/codex ] \
   || ! node_modules/.bin/codex --version >/dev/null 2>&1; then
  echo "==> Installing Codex from npm (crates/server/tests/codex)"
  npm ci --no-audit --no-fund --silent
fi

[ -x node_modules/.bin/codex ] || { echo "error: codex is missing after npm ci" >&2; exit 1; }
node_modules/.bin/codex mcp-server --help >/dev/null 2>&1 \
  || { echo "error: node_modules/.bin/codex has no mcp-server" >&2; exit 1; }
echo "Codex $(node_modules/.bin/codex --version) is installed (@openai/codex $locked)"
