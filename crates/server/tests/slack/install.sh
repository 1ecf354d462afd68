#!/usr/bin/env bash
# Installs what the Slack message test (tests/api/slack.rs) checks the server's Slack messages
# with, at the versions package-lock.json pins, from npm only: Slack's published types
# (@slack/types, @slack/webhook) and the TypeScript compiler. Idempotent: when everything
# matches the lock it only checks.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

PACKAGES=("@slack/types" "@slack/webhook" "typescript")
installed() {
  node -e 'try { process.stdout.write(require("./node_modules/" + process.argv[1] + "/package.json").version) } catch (e) {}' "$1"
}
locked() {
  node -e 'process.stdout.write(require("./package-lock.json").packages["node_modules/" + process.argv[1]].version)' "$1"
}

for package in "${PACKAGES[@]}"; do
  if [ "$(installed "$package")" != "$(locked "$package")" ]; then
    echo "==> Installing Slack's types and TypeScript from npm (crates/server/tests/slack)"
    npm ci --no-audit --no-fund --silent
    break
  fi
done
for package in "${PACKAGES[@]}"; do
  [ "$(installed "$package")" = "$(locked "$package")" ] || { echo "error: $package is missing after npm ci" >&2; exit 1; }
  echo "$package $(installed "$package") is installed"
done
