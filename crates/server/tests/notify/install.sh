#!/usr/bin/env bash
# Installs the independent verifier the notification tests check webhook signatures with: PyPI's
# standardwebhooks (requirements.txt) into a venv. Idempotent: when it matches the pin it only
# checks.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

# The venv lives outside the clone, so fresh clones (CI) reuse it; the tests look for it there.
VENV="${SIGNOFF_NOTIFY_VENV:-$HOME/.cache/signoff/notify-venv}"
STAMP="$VENV/.signoff-requirements"
if ! cmp -s requirements.txt "$STAMP" || ! "$VENV/bin/python" -c 'import standardwebhooks' 2>/dev/null; then
  echo "==> Installing standardwebhooks from PyPI into $VENV"
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check --no-deps -r requirements.txt
  cp requirements.txt "$STAMP"
fi
"$VENV/bin/python" -c 'import standardwebhooks' || { echo "error: standardwebhooks does not import from $VENV" >&2; exit 1; }
echo "standardwebhooks $("$VENV/bin/pip" show standardwebhooks 2>/dev/null | awk '/^Version:/ {print $2}') is installed in $VENV"
