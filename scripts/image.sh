#!/usr/bin/env bash
# Builds Signoff's container image (deploy/Containerfile: the static binary on an empty base)
# with podman, tags it localhost/signoff:VERSION and localhost/signoff:latest, and checks it:
# its config (a numeric non-root user, the entrypoint, port 8080, the /data volume, where the
# server listens and keeps its data, its auth mode (tokens from a mounted file), the OCI labels) and its files (the binary, the CA bundle, /data and /tmp,
# nothing else). Running a container is not needed for any of it.
#
#   scripts/image.sh              # builds the UI and the static binary first
#   scripts/image.sh --ui-built   # dist/ is fresh already (scripts/test.sh built it)
#   scripts/image.sh --save FILE  # also writes the image as an OCI archive (podman load -i FILE)
#   scripts/image.sh --profile static-check --binary-built
#                                 # the test command's check: of the quick static build it
#                                 # made already, tagged localhost/signoff:VERSION-static-check
#                                 # only (never :latest, which scripts/bench.sh measures)
#
# Installs Debian's podman when it is missing.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"

STATIC_ARGS=()
SAVE=""
PROFILE=release
BUILD_BINARY=1
while [ $# -gt 0 ]; do
  case "$1" in
    --ui-built) STATIC_ARGS+=(--ui-built); shift ;;
    --binary-built) BUILD_BINARY=""; shift ;;
    --profile) [ $# -ge 2 ] || die "--profile needs a name"; PROFILE="$2"; shift 2 ;;
    --save) [ $# -ge 2 ] || die "--save needs a file"; SAVE="$2"; shift 2 ;;
    *) die "usage: scripts/image.sh [--ui-built] [--binary-built] [--profile NAME] [--save FILE]" ;;
  esac
done

if ! command -v podman >/dev/null; then
  step "Installing podman from Debian"
  export DEBIAN_FRONTEND=noninteractive
  as_root apt-get update -qq
  as_root apt-get install -y -qq podman >/dev/null
fi
podman info >/dev/null 2>&1 || die "podman is installed but does not work here (podman info fails)"

BIN="$ROOT/target/static/signoff"
[ "$PROFILE" = release ] || BIN="$ROOT/target/static-$PROFILE/signoff"
if [ -n "$BUILD_BINARY" ]; then
  "$ROOT/scripts/build-static.sh" --profile "$PROFILE" ${STATIC_ARGS[@]+"${STATIC_ARGS[@]}"}
fi
[ -x "$BIN" ] || die "no $BIN: build it first (scripts/build-static.sh --profile $PROFILE)"

# "signoff 0.1.0 (commit 1a2b3c4)"
read -r _ VERSION _ REVISION <<<"$("$BIN" --version)"
REVISION="${REVISION%)}"
SOURCE="$(git remote get-url origin 2>/dev/null || echo unknown)"
IMAGE="localhost/signoff:$VERSION"
TAGS=(-t "$IMAGE" -t localhost/signoff:latest)
if [ "$PROFILE" != release ]; then
  IMAGE="localhost/signoff:$VERSION-$PROFILE"
  TAGS=(-t "$IMAGE")
fi

STAGE="$(mktemp -d "${TMPDIR:-/tmp}/signoff-image.XXXXXX")"
trap 'rm -rf "$STAGE"' EXIT
cp "$BIN" "$STAGE/signoff"
mkdir "$STAGE/data"
# The public certificate authorities, from Debian's ca-certificates: the server checks HTTPS
# (a model endpoint, a remote agent) against the system's trust store, and an empty base has none.
CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt
if [ ! -s "$CA_BUNDLE" ]; then
  step "Installing ca-certificates from Debian (the image's trust store)"
  export DEBIAN_FRONTEND=noninteractive
  as_root apt-get update -qq
  as_root apt-get install -y -qq ca-certificates >/dev/null
fi
cp "$CA_BUNDLE" "$STAGE/ca-certificates.crt"

step "Building $IMAGE (podman build, deploy/Containerfile)"
podman build --quiet -f "$ROOT/deploy/Containerfile" \
  --build-arg "VERSION=$VERSION" --build-arg "REVISION=$REVISION" --build-arg "SOURCE=$SOURCE" \
  "${TAGS[@]}" "$STAGE" >/dev/null

step "Checking $IMAGE: its config and its files"
podman image inspect "$IMAGE" >"$STAGE/inspect.json"
podman save --quiet --format docker-archive -o "$STAGE/image.tar" "$IMAGE"
python3 - "$STAGE/inspect.json" "$STAGE/image.tar" "$BIN" "$VERSION" "$REVISION" "$SOURCE" "$STAGE/ca-certificates.crt" <<'PY'
import hashlib, json, sys, tarfile

inspect_path, archive, binary, version, revision, source, ca_bundle = sys.argv[1:]
image = json.load(open(inspect_path))[0]
config = image["Config"]
problems = []

def expect(what, got, want):
    if got != want:
        problems.append(f"{what}: {got!r}, expected {want!r}")

expect("user", config.get("User"), "65532:65532")
expect("entrypoint", config.get("Entrypoint"), ["/usr/local/bin/signoff"])
expect("command", config.get("Cmd"), None)
expect("exposed ports", sorted(config.get("ExposedPorts") or {}), ["8080/tcp"])
expect("volumes", sorted(config.get("Volumes") or {}), ["/data"])
env = dict(item.split("=", 1) for item in config.get("Env") or [])
expect("SIGNOFF_ADDR", env.get("SIGNOFF_ADDR"), "0.0.0.0:8080")
expect("SIGNOFF_DATA_DIR", env.get("SIGNOFF_DATA_DIR"), "/data")
# Listening on every interface, it must not be the one local user (--auth none is refused there).
expect("SIGNOFF_AUTH", env.get("SIGNOFF_AUTH"), "tokens")
expect("SIGNOFF_TOKENS_FILE", env.get("SIGNOFF_TOKENS_FILE"), "/run/secrets/signoff-tokens")
labels = config.get("Labels") or {}
for key, want in [("source", source), ("version", version), ("revision", revision),
                  ("title", "signoff"), ("licenses", "Apache-2.0")]:
    expect(f"label org.opencontainers.image.{key}",
           labels.get(f"org.opencontainers.image.{key}"), want)

# Every layer's entries, the later layers over the earlier ones.
files = {}
with tarfile.open(archive) as outer:
    manifest = json.load(outer.extractfile("manifest.json"))[0]
    for layer in manifest["Layers"]:
        member = outer.getmember(layer)
        while member.issym():
            member = outer.getmember(member.linkname.replace("../", ""))
        with tarfile.open(fileobj=outer.extractfile(member)) as inner:
            for entry in inner.getmembers():
                name = entry.name.lstrip("./").rstrip("/")
                if name:
                    data = inner.extractfile(entry).read() if entry.isfile() else None
                    files[name] = (entry, data)

allowed_dirs = {"usr", "usr/local", "usr/local/bin", "data", "tmp", "etc", "etc/ssl", "etc/ssl/certs"}
allowed_files = {"usr/local/bin/signoff", "etc/ssl/certs/ca-certificates.crt"}
for name, (entry, _) in sorted(files.items()):
    if entry.isdir() and name in allowed_dirs:
        continue
    if entry.isfile() and name in allowed_files:
        continue
    problems.append(f"unexpected entry in the image: /{name}")
bundle_entry = files.get("etc/ssl/certs/ca-certificates.crt")
if bundle_entry is None:
    problems.append("no /etc/ssl/certs/ca-certificates.crt in the image: HTTPS would trust nobody")
elif bundle_entry[1] != open(ca_bundle, "rb").read():
    problems.append("/etc/ssl/certs/ca-certificates.crt is not Debian's bundle")
binary_entry = files.get("usr/local/bin/signoff")
if binary_entry is None:
    problems.append("no /usr/local/bin/signoff in the image")
else:
    entry, data = binary_entry
    if hashlib.sha256(data).digest() != hashlib.sha256(open(binary, "rb").read()).digest():
        problems.append("/usr/local/bin/signoff is not the static binary just built")
    if not entry.mode & 0o001:
        problems.append(f"/usr/local/bin/signoff is not executable by others: {oct(entry.mode)}")
for folder in ["data", "tmp"]:
    entry = files.get(folder)
    if entry is None or not entry[0].isdir():
        problems.append(f"no /{folder} folder in the image")
    elif (entry[0].uid, entry[0].gid) != (65532, 65532):
        problems.append(f"/{folder} belongs to {entry[0].uid}:{entry[0].gid}, not 65532:65532")

if problems:
    print("image check failed:\n  " + "\n  ".join(problems), file=sys.stderr)
    sys.exit(1)
listing = ", ".join("/" + name + ("/" if entry.isdir() else "") for name, (entry, _) in sorted(files.items()))
print(f"image ok: {image['RepoTags'][0]}, {image['Size']} bytes; user 65532:65532, "
      f"entrypoint /usr/local/bin/signoff, port 8080, volume /data; files: {listing}")
PY

if [ -n "$SAVE" ]; then
  podman save --quiet --format oci-archive -o "$SAVE" "$IMAGE"
  step "Saved $IMAGE to $SAVE"
fi
