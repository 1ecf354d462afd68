"""The independent side of the Web Push tests (tests/api/web_push.rs), with PyPI's PyJWT and
http_ece (install.sh installs them).

  check_push.py keys    prints a browser's subscription keys as JSON: {"p256dh", "auth",
                        "private"} (the P-256 private key as PKCS#8 DER, base64url), as a
                        browser makes them when it subscribes.
  check_push.py check   reads {"authorization", "vapid_key", "audience", "body", "private",
                        "auth"} on stdin (body base64url) and prints {"claims", "plaintext"}:
                        the VAPID JWT verified (ES256) against the key Signoff advertises, and
                        the aes128gcm payload decrypted with the subscription's private key.
  check_push.py decrypt JSON
                        prints the plaintext of {"body_hex", "private", "auth"} (a browser test
                        hands it to the service worker as the push service would).
Any failure exits non-zero, saying why.
"""

import base64
import json
import os
import sys

import http_ece
import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def keys() -> None:
    private = ec.generate_private_key(ec.SECP256R1())
    public = private.public_key().public_bytes(
        serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
    )
    der = private.private_bytes(
        serialization.Encoding.DER,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    print(json.dumps({"p256dh": b64(public), "auth": b64(os.urandom(16)), "private": b64(der)}))


def check() -> None:
    given = json.load(sys.stdin)
    scheme, _, params = given["authorization"].partition(" ")
    if scheme != "vapid":
        sys.exit(f"Authorization is not vapid: {scheme!r}")
    fields = dict(part.strip().split("=", 1) for part in params.split(","))
    if fields.get("k") != given["vapid_key"]:
        sys.exit("the k of Authorization is not the key GET /api/push/vapid advertises")
    point = unb64(given["vapid_key"])
    key = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), point)
    claims = jwt.decode(
        fields["t"],
        key,
        algorithms=["ES256"],
        audience=given["audience"],
        options={"require": ["aud", "exp", "sub"]},
    )
    header = jwt.get_unverified_header(fields["t"])
    if header.get("alg") != "ES256":
        sys.exit(f"the JWT's alg is {header.get('alg')!r}")
    private = serialization.load_der_private_key(unb64(given["private"]), password=None)
    plaintext = http_ece.decrypt(
        unb64(given["body"]),
        private_key=private,
        auth_secret=unb64(given["auth"]),
        version="aes128gcm",
    )
    print(json.dumps({"claims": claims, "plaintext": plaintext.decode()}))


def decrypt() -> None:
    given = json.loads(sys.argv[2])
    private = serialization.load_der_private_key(unb64(given["private"]), password=None)
    plaintext = http_ece.decrypt(
        bytes.fromhex(given["body_hex"]),
        private_key=private,
        auth_secret=unb64(given["auth"]),
        version="aes128gcm",
    )
    sys.stdout.write(plaintext.decode())


if __name__ == "__main__":
    {"keys": keys, "check": check, "decrypt": decrypt}[sys.argv[1]]()
