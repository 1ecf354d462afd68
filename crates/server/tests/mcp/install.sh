#!/usr/bin/env bash
# Installs the third-party MCP servers that the server's MCP tests and bench run, from npm at the
# versions pinned in package-lock.json: @modelcontextprotocol/server-filesystem (stdio) and
# @modelcontextprotocol/server-everything (streamable HTTP). Idempotent: when the installed
# versions already match the lockfile it only checks them.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

installed() {
  # The version npm recorded for one installed package, or nothing.
  node -e 'try { process.stdout.write(require(process.argv[1]).version) } catch (e) {}' \
    "./node_modules/@modelcontextprotocol/$1/package.json"
}
locked() {
  node -e 'const l = require("./package-lock.json");
           process.stdout.write(l.packages["node_modules/@modelcontextprotocol/" + process.argv[1]].version)' "$1"
}

up_to_date=true
for server in server-filesystem server-everything; do
  if [ "$(installed "$server")" != "$(locked "$server")" ] || [ ! -x "node_modules/.bin/mcp-$server" ]; then
    up_to_date=false
  fi
done

if [ "$up_to_date" = false ]; then
  echo "==> Installing the MCP test servers from npm (crates/server/tests/mcp)"
  npm ci --no-audit --no-fund --silent
fi

for server in server-filesystem server-everything; do
  [ -x "node_modules/.bin/mcp-$server" ] || { echo "error: mcp-$server is missing after npm ci" >&2; exit 1; }
  echo "MCP test server @modelcontextprotocol/$server $(installed "$server") is installed"
done
