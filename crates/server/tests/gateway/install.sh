#!/usr/bin/env bash
# Installs the clients that the server's gateway tests drive, at the pinned versions, from the
# npm registry only: the MCP TypeScript SDK, and @anthropic-ai/claude-code (package-lock.json), whose native binary
# comes in the platform package of its optionalDependencies (here @anthropic-ai/claude-code-linux-x64)
# and is copied over bin/claude.exe by its postinstall. Idempotent: when the installed version
# matches the lock it only checks.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

installed() {
  # The version npm recorded for one installed package, or nothing.
  node -e 'try { process.stdout.write(require(process.argv[1]).version) } catch (e) {}' \
    "./node_modules/@anthropic-ai/$1/package.json"
}
locked() {
  node -e 'const l = require("./package-lock.json");
           process.stdout.write(l.packages["node_modules/@anthropic-ai/" + process.argv[1]].version)' "$1"
}

sdk_installed="$(node -e 'try { process.stdout.write(require("./node_modules/@modelcontextprotocol/sdk/package.json").version) } catch (e) {}')"
sdk_locked="$(node -e 'process.stdout.write(require("./package-lock.json").packages["node_modules/@modelcontextprotocol/sdk"].version)')"
if [ "$(installed claude-code)" != "$(locked claude-code)" ] || [ "$sdk_installed" != "$sdk_locked" ] \
   || [ ! -x node_modules/.bin/claude ] \
   || ! node_modules/.bin/claude --version >/dev/null 2>&1; then
  echo "==> Installing Claude Code from npm (crates/server/tests/gateway)"
  npm ci --no-audit --no-fund --silent
fi

[ -x node_modules/.bin/claude ] || { echo "error: claude is missing after npm ci" >&2; exit 1; }
version="$(node_modules/.bin/claude --version)" \
  || { echo "error: node_modules/.bin/claude --version fails" >&2; exit 1; }
echo "Claude Code $version is installed (@anthropic-ai/claude-code $(installed claude-code))"
echo "The MCP TypeScript SDK @modelcontextprotocol/sdk $sdk_locked is installed"
