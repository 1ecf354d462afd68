#!/usr/bin/env bash
# Renders the Kubernetes manifests (deploy/kubernetes: the base and each overlay, with
# `kubectl kustomize`) and validates every object against the Kubernetes schemas with PyPI's
# kubernetes-validate (strict: an unknown field fails; it ships its schemas, so it works
# offline), then checks what the README promises of them: probes on /readyz and /healthz, a
# non-root read-only container, resource requests, the Secrets referenced, the SSE annotations.
# It also reads deploy/compose.yaml: three replicas of the image on one PostgreSQL, each with the
# tokens secret, and nginx with deploy/nginx.conf, whose upstream must name those replicas. The
# server listens on 0.0.0.0 everywhere, so no manifest may leave it on --auth none.
#
#   scripts/kubernetes.sh            # every kustomization; the rendered YAML in target/kubernetes/
#
# kubectl must be on the machine (skipped, saying so, when it is not); kubernetes-validate goes
# into a venv under $HOME/.cache/signoff (skipped, saying so, when pip cannot install it).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"

if ! command -v kubectl >/dev/null; then
  echo "kubernetes manifests skipped: no kubectl on this machine"
  exit 0
fi
VENV="$HOME/.cache/signoff/kubernetes-validate-venv"
if [ ! -x "$VENV/bin/kubernetes-validate" ]; then
  step "Installing kubernetes-validate from PyPI into $VENV"
  rm -rf "$VENV"
  if ! { python3 -m venv "$VENV" \
    && "$VENV/bin/pip" install --quiet --disable-pip-version-check kubernetes-validate; }; then
    rm -rf "$VENV"
    echo "kubernetes manifests skipped: kubernetes-validate could not be installed from PyPI"
    exit 0
  fi
fi

OUT="$ROOT/target/kubernetes"
mkdir -p "$OUT"
checked=0
for dir in deploy/kubernetes/base deploy/kubernetes/overlays/*; do
  name="$(basename "$dir")"
  step "kubectl kustomize $dir"
  kubectl kustomize "$dir" >"$OUT/$name.yaml"
  "$VENV/bin/kubernetes-validate" --strict --quiet "$OUT/$name.yaml"
  "$VENV/bin/python" - "$OUT/$name.yaml" "$name" <<'PY'
import sys, yaml

path, name = sys.argv[1:]
objects = [o for o in yaml.safe_load_all(open(path)) if o]
kinds = {}
for o in objects:
    kinds.setdefault(o["kind"], []).append(o)
problems = []

def need(condition, what):
    if not condition:
        problems.append(what)

for kind in ["Deployment", "Service", "Ingress", "ConfigMap"]:
    need(kind in kinds, f"no {kind}")
deployment = kinds["Deployment"][0]
spec = deployment["spec"]
pod = spec["template"]["spec"]
need(pod.get("securityContext", {}).get("runAsNonRoot") is True, "the pod may run as root")
server = next(c for c in pod["containers"] if c["name"] == "signoff")
need(server["readinessProbe"]["httpGet"]["path"] == "/readyz", "readiness is not /readyz")
need(server["livenessProbe"]["httpGet"]["path"] == "/healthz", "liveness is not /healthz")
for c in pod["containers"]:
    security = c.get("securityContext", {})
    need(security.get("readOnlyRootFilesystem") is True, f"{c['name']}: root filesystem writable")
    need(security.get("allowPrivilegeEscalation") is False, f"{c['name']}: may escalate")
    need("requests" in c.get("resources", {}), f"{c['name']}: no resource requests")
env = {e["name"]: e for e in server.get("env", [])}
# The server listens on 0.0.0.0, where --auth none is refused at start: it names who people are.
args = server.get("args", [])
auth = args[args.index("--auth") + 1] if "--auth" in args else env.get("SIGNOFF_AUTH", {}).get("value", "tokens")
need(auth != "none", "the server runs --auth none on 0.0.0.0, which it refuses")
if auth == "proxy":
    need("--trusted-proxies" in args, "--auth proxy without --trusted-proxies")
annotations = kinds["Ingress"][0]["metadata"].get("annotations", {})
need(annotations.get("nginx.ingress.kubernetes.io/proxy-buffering") == "off",
     "the Ingress buffers (SSE needs proxy-buffering off)")
need(int(annotations.get("nginx.ingress.kubernetes.io/proxy-read-timeout", "60")) >= 3600,
     "the Ingress cuts quiet streams within an hour")
secrets = {e["valueFrom"]["secretKeyRef"]["name"] for c in pod["containers"]
           for e in c.get("env", []) if "secretKeyRef" in e.get("valueFrom", {})}
need("signoff-oidc" in secrets, "no Secret for the OIDC client")
replicas = spec.get("replicas", 1)
if name == "sqlite":
    need(replicas == 1, f"SQLite with {replicas} replicas")
    need("SIGNOFF_DATABASE_URL" not in env, "SQLite overlay still names a database URL")
    need(spec["strategy"]["type"] == "Recreate", "two pods would share the SQLite file")
    need("PersistentVolumeClaim" in kinds, "no PersistentVolumeClaim for SQLite's data")
    data = next(v for v in pod["volumes"] if v["name"] == "data")
    need("persistentVolumeClaim" in data and "emptyDir" not in data, "data is not on the claim")
else:
    need(replicas >= 2, f"{replicas} replica(s) on PostgreSQL")
    need(env.get("SIGNOFF_DATABASE_URL", {}).get("valueFrom", {}).get("secretKeyRef", {})
         .get("name") == "signoff-database", "the database URL does not come from a Secret")
    need("PodDisruptionBudget" in kinds, "no PodDisruptionBudget")
if name == "kagent":
    agents = next(c for c in kinds["ConfigMap"] if c["metadata"]["name"].startswith("signoff-agents"))
    need("http://kagent-controller.kagent:8083/api/a2a/" in agents["data"]["agents.toml"],
         "the kagent overlay does not relay to kagent's controller")
if problems:
    print(f"{name}: " + "; ".join(problems), file=sys.stderr)
    sys.exit(1)
print(f"kubernetes ok: {name}, {len(objects)} objects valid ({', '.join(sorted(kinds))})")
PY
  checked=$((checked + 1))
done
step "deploy/compose.yaml against deploy/nginx.conf"
"$VENV/bin/python" - "$ROOT/deploy/compose.yaml" "$ROOT/deploy/nginx.conf" <<'PY'
import re, sys, yaml

compose = yaml.safe_load(open(sys.argv[1]))
nginx = open(sys.argv[2]).read()
services = compose["services"]
upstream = re.search(r"upstream signoff \{(.*?)\}", nginx, re.S).group(1)
names = [m.split(":")[0] for m in re.findall(r"server\s+(\S+);", upstream)]
problems = []
for name in names:
    service = services.get(name)
    if service is None:
        problems.append(f"nginx.conf names {name}, which compose.yaml does not run")
        continue
    if service.get("image") != "localhost/signoff:latest":
        problems.append(f"{name} runs {service.get('image')}, not the image scripts/image.sh builds")
    if "postgres:5432" not in service.get("environment", {}).get("SIGNOFF_DATABASE_URL", ""):
        problems.append(f"{name} does not use the compose PostgreSQL")
    # The image's default, --auth tokens from /run/secrets/signoff-tokens (--auth none is
    # refused on 0.0.0.0).
    if "--auth" in service.get("command", []) or "SIGNOFF_AUTH" in service.get("environment", {}):
        problems.append(f"{name} changes the image's auth mode; the README says it is tokens")
    if "signoff-tokens" not in service.get("secrets", []):
        problems.append(f"{name} has no signoff-tokens secret: its tokens file would be missing")
if len(names) != 3:
    problems.append(f"nginx.conf's upstream has {len(names)} replicas, not 3")
mounts = services["nginx"].get("volumes", [])
if "./nginx.conf:/etc/nginx/conf.d/signoff.conf:ro" not in mounts:
    problems.append("compose's nginx does not run deploy/nginx.conf")
if compose.get("secrets", {}).get("signoff-tokens", {}).get("file") != "./tokens":
    problems.append("the signoff-tokens secret is not deploy/tokens")
if "postgres" not in services:
    problems.append("no PostgreSQL service")
if problems:
    print("compose.yaml: " + "; ".join(problems), file=sys.stderr)
    sys.exit(1)
print(f"compose ok: {', '.join(sorted(services))}; nginx runs deploy/nginx.conf over {', '.join(names)}")
PY
echo "kubernetes manifests ok: $checked kustomizations rendered and validated, and the compose file"
