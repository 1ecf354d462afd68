#!/usr/bin/env bash
# Installs the ACP agents that the server's ACP client tests drive, at the pinned versions, from
# the npm registry only (package-lock.json): Zed's @zed-industries/claude-code-acp, whose entry
# point dist/index.js speaks ACP (newline-delimited JSON-RPC) over stdio and runs Claude Code
# through @anthropic-ai/claude-agent-sdk, which spawns its bundled cli.js with this same node (no
# native binary, no download at install or run time); and the example agent of the protocol's
# own SDK, @agentclientprotocol/sdk's dist/examples/agent.js; and Google's @google/gemini-cli,
# one bundled bundle/gemini.js that speaks ACP with --experimental-acp (its optional native
# modules, node-pty and keytar, are not needed: npm leaves their install scripts unrun).
# Idempotent: when the installed versions match the lock and the entry points are there it only
# checks.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

entry=node_modules/@zed-industries/claude-code-acp/dist/index.js

installed() {
  # The version npm recorded for one installed package, or nothing.
  node -e 'try { process.stdout.write(require(process.argv[1]).version) } catch (e) {}' \
    "./node_modules/$1/package.json"
}
locked() {
  node -e 'const l = require("./package-lock.json");
           process.stdout.write(l.packages["node_modules/" + process.argv[1]].version)' "$1"
}

if [ "$(installed @zed-industries/claude-code-acp)" != "$(locked @zed-industries/claude-code-acp)" ] \
   || [ "$(installed @anthropic-ai/claude-agent-sdk)" != "$(locked @anthropic-ai/claude-agent-sdk)" ] \
   || [ "$(installed @agentclientprotocol/sdk)" != "$(locked @agentclientprotocol/sdk)" ] \
   || [ "$(installed @google/gemini-cli)" != "$(locked @google/gemini-cli)" ] \
   || [ ! -f node_modules/@google/gemini-cli/bundle/gemini.js ] \
   || [ ! -f node_modules/@agentclientprotocol/sdk/dist/examples/agent.js ] \
   || [ ! -f "$entry" ] \
   || [ ! -f node_modules/@anthropic-ai/claude-agent-sdk/cli.js ]; then
  echo "==> Installing the ACP agent claude-code-acp from npm (crates/server/tests/acp)"
  npm ci --no-audit --no-fund --silent
fi

[ -f "$entry" ] || { echo "error: $entry is missing after npm ci" >&2; exit 1; }
claude_code="$(node -e 'process.stdout.write(require("./node_modules/@anthropic-ai/claude-agent-sdk/package.json").claudeCodeVersion || "?")')"
echo "The ACP agent @zed-industries/claude-code-acp $(installed @zed-industries/claude-code-acp) is installed ($entry)"
echo "with @anthropic-ai/claude-agent-sdk $(installed @anthropic-ai/claude-agent-sdk) (Claude Code $claude_code)"
echo "The ACP SDK's example agent @agentclientprotocol/sdk $(installed @agentclientprotocol/sdk) is installed"
echo "Gemini CLI @google/gemini-cli $(installed @google/gemini-cli) is installed"
