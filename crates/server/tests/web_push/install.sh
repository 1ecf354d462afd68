#!/usr/bin/env bash
# Installs the independent checks the Web Push tests use: PyPI's PyJWT (the VAPID JWT, ES256)
# and http_ece (the aes128gcm payload), with cryptography beneath them, and websocket-client
# (the browser test's reach into the service worker), pinned in requirements.txt, into a venv.
# Idempotent: when it matches the pin it only checks.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

# The venv lives outside the clone, so fresh clones (CI) reuse it; the tests look for it there.
VENV="${SIGNOFF_WEB_PUSH_VENV:-$HOME/.cache/signoff/web-push-venv}"
STAMP="$VENV/.signoff-requirements"
CHECK='import jwt, http_ece, cryptography, websocket'
if ! cmp -s requirements.txt "$STAMP" || ! "$VENV/bin/python" -c "$CHECK" 2>/dev/null; then
  echo "==> Installing PyJWT and http_ece from PyPI into $VENV"
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check --no-deps -r requirements.txt
  cp requirements.txt "$STAMP"
fi
"$VENV/bin/python" -c "$CHECK" || { echo "error: PyJWT or http_ece does not import from $VENV" >&2; exit 1; }
echo "PyJWT and http_ece are installed in $VENV"
