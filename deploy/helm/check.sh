#!/usr/bin/env bash
# The chart's checks in the test command: `helm lint`, then `helm template` under each
# topology of docs/deployment.md, every rendered manifest decoded strictly into the
# Kubernetes API types (deploy/helm/check: k8s.io/api, sigs.k8s.io/yaml) and checked for
# consistency, and the checker's own tests. Helm is built once from the Go module proxy
# into ~/.cache/turnpike-tools (a warm run takes seconds).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
chart="$here/turnpike"
helm_version=v3.22.0
tools="${TURNPIKE_TOOLS_CACHE:-$HOME/.cache/turnpike-tools}"
helm="$tools/helm-$helm_version/helm"

command -v go >/dev/null || { echo "helm check: Go is needed (go.dev toolchain, 1.26+)" >&2; exit 1; }
if [ ! -x "$helm" ]; then
  echo "helm check: building helm $helm_version (once)"
  GOBIN="$(dirname "$helm")" GOFLAGS=-mod=mod go install "helm.sh/helm/v3/cmd/helm@$helm_version"
fi
checker="$tools/turnpike-helm-check"
(cd "$here/check" && go test ./... >/dev/null && go build -o "$checker" .)

"$helm" lint --strict "$chart"
"$helm" lint --strict "$chart" --set controlPlane.replicaCount=3 \
  --set controlPlane.database.existingSecret=pg
# The topologies: one SQLite control plane with autoscaled gateways (the defaults);
# three control planes on PostgreSQL, Redis-shared quotas, a TLS secret; fixed gateways.
# --kube-version: helm template assumes an old cluster; the checker decodes with k8s.io/api
# of a current one.
render() { "$helm" template turnpike "$chart" --namespace apim --kube-version 1.33.0 "$@"; }
echo "helm check: defaults";     render | "$checker"
echo "helm check: HA";           render --set controlPlane.replicaCount=3 \
  --set controlPlane.database.existingSecret=turnpike-postgres \
  --set gateway.redis.existingSecret=turnpike-redis --set gateway.tlsSecret=gateway-tls \
  --set secrets.existingSecret=turnpike-secrets --set-string gateway.extraEnv.TURNPIKE_MAX_CONNECTIONS_PER_IP=0 | "$checker"
echo "helm check: fixed gateways"; render --set gateway.autoscaling.enabled=false \
  --set gateway.replicaCount=3 | "$checker"
# A topology the chart must refuse: several control planes on one SQLite file.
if render --set controlPlane.replicaCount=2 >/dev/null 2>&1; then
  echo "helm check: two control planes on SQLite were not refused" >&2; exit 1
fi
echo "helm check: ok (helm $helm_version, $(cd "$here/check" && go list -m -f '{{.Path}} {{.Version}}' k8s.io/api sigs.k8s.io/yaml | paste -sd, -))"
