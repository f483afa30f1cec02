#!/bin/sh
# Regenerates python/ksched/config/feature_gates_v1_36.py from kube-scheduler v1.36's own
# feature-gate registry. Builds hack/featuregates/main.go against the module set of the
# test control plane (hack/controlplane/kube/go.mod, go.sum) in a temporary directory, so
# nothing under hack/controlplane changes.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed 's#^module .*#module ksched.local/hack/featuregates#' "$root/hack/controlplane/kube/go.mod" \
    | sed '/^tool (/,/^)/d' > "$tmp/go.mod"
cp "$root/hack/controlplane/kube/go.sum" "$tmp/go.sum"
sed '1d' "$here/main.go" > "$tmp/main.go"
out="$root/python/ksched/config/feature_gates_v1_36.py"
(cd "$tmp" && GOFLAGS=-mod=mod go run . > "$out.tmp")
mv "$out.tmp" "$out"
echo "wrote $out"
