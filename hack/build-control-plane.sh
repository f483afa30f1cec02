#!/usr/bin/env bash
# Build the real test control plane from Go modules (no prebuilt binaries):
#   kube-apiserver, kube-scheduler  from k8s.io/kubernetes  (hack/controlplane/kube)
#   etcd                            from go.etcd.io/etcd/server/v3 (hack/controlplane/etcd)
#
# Binaries go to  ${KSCHED_CACHE_DIR:-~/.cache/ksched}/bin/<kube version>/ .
# Idempotent: each group (kube, etcd) carries a stamp = sha256 of its go.mod, go.sum, the
# Go version and the build flags; a group whose binaries exist and whose stamp matches
# is not rebuilt. Concurrent runs serialise on a lock file.
#
# Progress goes to stderr; the binary directory is the only line printed on stdout, so
# callers can do  BIN=$(hack/build-control-plane.sh) .
#
# Environment:
#   KSCHED_CACHE_DIR   cache root (default ~/.cache/ksched)
#   KSCHED_GO_P        go build -p (default: number of CPUs, at most 4)
#   KSCHED_FORCE=1     rebuild even if the stamps match
#   GO                 go command (default: go)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
KUBE_MOD="$ROOT/hack/controlplane/kube"
ETCD_MOD="$ROOT/hack/controlplane/etcd"
GO="${GO:-go}"
CACHE="${KSCHED_CACHE_DIR:-$HOME/.cache/ksched}"

log() { printf '[build-control-plane] %s\n' "$*" >&2; }

command -v "$GO" >/dev/null || { log "error: '$GO' not found; Go >= 1.26 is needed to build the control plane"; exit 1; }

# Read the pinned versions straight from the wrapper go.mod files (no network).
modver() { awk -v m="$2" '$1 == m && $2 ~ /^v/ { print $2; exit } $1 == "require" && $2 == m { print $3; exit }' "$1/go.mod"; }
KUBE_VERSION="$(modver "$KUBE_MOD" k8s.io/kubernetes)"
ETCD_VERSION="$(modver "$ETCD_MOD" go.etcd.io/etcd/server/v3)"
[[ -n "$KUBE_VERSION" && -n "$ETCD_VERSION" ]] || { log "error: cannot read versions from go.mod"; exit 1; }

BIN="$CACHE/bin/$KUBE_VERSION"
mkdir -p "$BIN"

nproc_="$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)"
P="${KSCHED_GO_P:-$(( nproc_ < 4 ? nproc_ : 4 ))}"
GOVERSION="$("$GO" env GOVERSION)"

# Static, stripped, path-independent binaries; upstream builds these with CGO off too.
export CGO_ENABLED=0
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-mod=readonly"
COMMON_FLAGS=(-trimpath -p "$P")

kube_minor="${KUBE_VERSION#v1.}"; kube_minor="${kube_minor%%.*}"
KUBE_LDFLAGS="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  KUBE_LDFLAGS+=" -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$kube_minor"
  KUBE_LDFLAGS+=" -X $pkg.gitTreeState=clean -X $pkg.gitCommit=module-$KUBE_VERSION"
done
ETCD_LDFLAGS="-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=module-$ETCD_VERSION"

stamp_of() { # module-dir ldflags
  { cat "$1/go.mod" "$1/go.sum"; echo "$GOVERSION"; echo "$2"; echo "${COMMON_FLAGS[0]} CGO_ENABLED=0"; } \
    | sha256sum | cut -d' ' -f1
}

# build <name> <module-dir> <ldflags> <pkg>:<binary>...
build_group() {
  local name="$1" dir="$2" ldflags="$3"; shift 3
  local stamp_file="$BIN/.$name.stamp" want have="" missing=0 spec bin pkgs=() bins=()
  want="$(stamp_of "$dir" "$ldflags")"
  [[ -f "$stamp_file" ]] && have="$(cat "$stamp_file")"
  for spec in "$@"; do
    pkgs+=("${spec%%:*}"); bins+=("${spec##*:}")
    [[ -x "$BIN/${spec##*:}" ]] || missing=1
  done
  if [[ "$missing" == 0 && "$have" == "$want" && "${KSCHED_FORCE:-0}" != 1 ]]; then
    log "$name: up to date (${bins[*]} in $BIN)"
    return 0
  fi
  log "$name: building ${bins[*]} with $GOVERSION -p $P (this takes minutes on a cold cache) ..."
  local tmp start end
  tmp="$(mktemp -d "$BIN/.build-$name.XXXXXX")"
  start=$(date +%s)
  (cd "$dir" && "$GO" build "${COMMON_FLAGS[@]}" -ldflags "$ldflags" -o "$tmp/" "${pkgs[@]}")
  end=$(date +%s)
  # `go build -o dir/ pkg` names the binary after the last path element of the package,
  # or the one before it when the last is a major-version suffix (.../server/v3 -> server).
  local i src base
  for i in "${!pkgs[@]}"; do
    base="${pkgs[$i]##*/}"
    if [[ "$base" =~ ^v[0-9]+$ ]]; then base="${pkgs[$i]%/*}"; base="${base##*/}"; fi
    src="$tmp/$base"
    [[ -x "$src" ]] || { log "error: expected $src after build"; exit 1; }
    mv -f "$src" "$BIN/${bins[$i]}"
  done
  rm -rf "$tmp"
  echo "$want" > "$stamp_file"
  log "$name: built in $((end - start))s: $(cd "$BIN" && du -h "${bins[@]}" | tr '\t\n' ' ')"
}

exec 9>"$BIN/.lock"
flock 9

total_start=$(date +%s)
build_group kube "$KUBE_MOD" "$KUBE_LDFLAGS" \
  k8s.io/kubernetes/cmd/kube-apiserver:kube-apiserver \
  k8s.io/kubernetes/cmd/kube-scheduler:kube-scheduler
# The server/v3 module root is etcd's main package.
build_group etcd "$ETCD_MOD" "$ETCD_LDFLAGS" \
  go.etcd.io/etcd/server/v3:etcd
log "done in $(( $(date +%s) - total_start ))s; binaries in $BIN"
echo "$BIN"
