#!/usr/bin/env bash
# Builds the release UI into dist/ with trunk (offline: it never downloads a tool).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"
step "Building the UI (trunk build --release)"
trunk build --release --offline
