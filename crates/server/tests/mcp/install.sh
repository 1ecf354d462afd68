#!/usr/bin/env bash
# Installs what the server's MCP tests and bench run, at pinned versions, from the registries
# only: @modelcontextprotocol/server-filesystem (stdio) and server-everything (streamable HTTP
# and SSE) from npm (package-lock.json), and the Python `mcp` SDK from PyPI (requirements.txt)
# into a venv for http_server.py. Idempotent: when everything matches the pins it only checks.
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

# The venv lives outside the clone, so fresh clones (CI) reuse it; the tests look for it there.
VENV="${SIGNOFF_MCP_VENV:-$HOME/.cache/signoff/mcp-venv}"
STAMP="$VENV/.signoff-requirements"
if ! cmp -s requirements.txt "$STAMP" || ! "$VENV/bin/python" -c 'import mcp.server.mcpserver' 2>/dev/null; then
  echo "==> Installing the Python MCP SDK from PyPI into $VENV"
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check --no-deps -r requirements.txt
  cp requirements.txt "$STAMP"
fi
"$VENV/bin/python" -c 'import mcp.server.mcpserver' || { echo "error: the mcp package does not import from $VENV" >&2; exit 1; }
echo "Python MCP SDK $("$VENV/bin/pip" show mcp 2>/dev/null | awk '/^Version:/ {print $2}') is installed in $VENV"
