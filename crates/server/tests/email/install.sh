#!/usr/bin/env bash
# Installs the SMTP server the email tests send to: PyPI's aiosmtpd (requirements.txt) into a
# venv. Idempotent: when it matches the pins it only checks.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

# The venv lives outside the clone, so fresh clones (CI) reuse it; the tests look for it there.
VENV="${SIGNOFF_EMAIL_VENV:-$HOME/.cache/signoff/email-venv}"
STAMP="$VENV/.signoff-requirements"
if ! cmp -s requirements.txt "$STAMP" || ! "$VENV/bin/python" -c 'import aiosmtpd' 2>/dev/null; then
  echo "==> Installing aiosmtpd from PyPI into $VENV"
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check --no-deps -r requirements.txt
  cp requirements.txt "$STAMP"
fi
"$VENV/bin/python" -c 'import aiosmtpd.controller, aiosmtpd.handlers' || { echo "error: aiosmtpd does not import from $VENV" >&2; exit 1; }
echo "aiosmtpd $("$VENV/bin/pip" show aiosmtpd 2>/dev/null | awk '/^Version:/ {print $2}') is installed in $VENV"
