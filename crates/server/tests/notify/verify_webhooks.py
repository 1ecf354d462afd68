"""Checks webhook deliveries with the Standard Webhooks reference library (PyPI's
standardwebhooks), not with Signoff's own code: reads the secret as the first argument and a
JSON list of deliveries ({"headers": {...}, "body": "..."}) on stdin, verifies each, and prints
one JSON line per delivery: the verified payload, or the library's error."""

import json
import sys

from standardwebhooks.webhooks import Webhook

secret = sys.argv[1]
hook = Webhook(secret)
for delivery in json.load(sys.stdin):
    try:
        payload = hook.verify(delivery["body"], delivery["headers"])
        print(json.dumps({"ok": True, "payload": payload}))
    except Exception as error:  # noqa: BLE001 - the verifier's refusal is the answer
        print(json.dumps({"ok": False, "error": f"{type(error).__name__}: {error}"}))
