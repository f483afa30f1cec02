#!/usr/bin/env bash
# Build the real test control plane from Go modules (no prebuilt binaries):
#   kube-apiserver, kube-scheduler, kube-controller-manager
#                                   from k8s.io/kubernetes  (hack/controlplane/kube)
#   etcd                            from go.etcd.io/etcd/server/v3 (hack/controlplane/etcd)
#   ksched-conformance              the differential conformance harness, a Go program of
#                                   ours that runs kube-scheduler's code on test cases
#                                   (tests/conformance/harness: its own module, pinned to
#                                   the same module set as hack/controlplane/kube)
#   ksched-queue-conformance        the queueing-hint harness: upstream's scheduling
#                                   queue on cases of cluster events
#                                   (tests/conformance/queueharness, same module set)
#
# Binaries go to  ${KSCHED_CACHE_DIR:-~/.cache/ksched}/bin/<kube version>/ .
# Idempotent: each group (kube, etcd, conformance) carries a stamp = sha256 of its go.mod, go.sum, the
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
CONFORMANCE_MOD="$ROOT/tests/conformance/harness"
QUEUE_CONFORMANCE_MOD="$ROOT/tests/conformance/queueharness"
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

# Sources of the wrapper module itself (a Go program of ours, if any) count in the stamp.
stamp_of() { # module-dir ldflags
  { cat "$1/go.mod" "$1/go.sum"; find "$1" -name '*.go' -type f | LC_ALL=C sort | xargs -r cat;
    echo "$GOVERSION"; echo "$2"; echo "${COMMON_FLAGS[0]} CGO_ENABLED=0"; } \
    | sha256sum | cut -d' ' -f1
}

STAGES_TOTAL=0
STAGE=0
TOTAL_START=$(date +%s)
elapsed() { local s=$(( $(date +%s) - TOTAL_START )); printf '%dm%02ds' $((s / 60)) $((s % 60)); }

# stage <what> <command...>: one line when a stage starts and one when it ends, each
# with the time since the build began.  A heartbeat line every 60 s shows a long
# compile is alive (a cold kube-apiserver takes 5-10 minutes on 2 busy cores).
stage() {
  local what="$1"; shift
  STAGE=$((STAGE + 1))
  log "[$STAGE/$STAGES_TOTAL] $what ... (at $(elapsed))"
  local t0; t0=$(date +%s)
  ( while sleep 60; do log "[$STAGE/$STAGES_TOTAL] $what: still running, $(( $(date +%s) - t0 ))s (at $(elapsed))"; done ) &
  local beat=$! rc=0
  "$@" || rc=$?
  kill "$beat" 2>/dev/null; wait "$beat" 2>/dev/null || true
  if [[ $rc -ne 0 ]]; then log "[$STAGE/$STAGES_TOTAL] $what: FAILED (exit $rc)"; exit "$rc"; fi
  log "[$STAGE/$STAGES_TOTAL] $what: done in $(( $(date +%s) - t0 ))s (at $(elapsed))"
}

# `go build -o dir/ pkg` names the binary after the last path element of the package,
# or the one before it when the last is a major-version suffix (.../server/v3 -> server).
compile() { # module-dir ldflags pkg binary
  local dir="$1" ldflags="$2" pkg="$3" bin="$4" tmp
  tmp="$(mktemp -d "$BIN/.build-$bin.XXXXXX")"
  (cd "$dir" && "$GO" build "${COMMON_FLAGS[@]}" -ldflags "$ldflags" -o "$tmp/$bin" "$pkg") || { rm -rf "$tmp"; return 1; }
  mv -f "$tmp/$bin" "$BIN/$bin"
  rm -rf "$tmp"
}

# Module downloads, quietly (`go: downloading` is one line per module: hundreds).
download() { # module-dir...
  local d out
  for d in "$@"; do
    out="$(cd "$d" && "$GO" mod download 2>&1)" || { printf '%s\n' "$out" >&2; return 1; }
  done
}

# plan <name> <module-dir> <ldflags> <pkg>:<binary>...: queue a group's binaries unless
# they exist and the group's stamp matches.
PLAN=()
plan_group() {
  local name="$1" dir="$2" ldflags="$3"; shift 3
  local stamp_file="$BIN/.$name.stamp" want have="" missing=0 spec
  want="$(stamp_of "$dir" "$ldflags")"
  [[ -f "$stamp_file" ]] && have="$(cat "$stamp_file")"
  for spec in "$@"; do [[ -x "$BIN/${spec##*:}" ]] || missing=1; done
  if [[ "$missing" == 0 && "$have" == "$want" && "${KSCHED_FORCE:-0}" != 1 ]]; then
    log "$name: up to date ($(for spec in "$@"; do printf '%s ' "${spec##*:}"; done)in $BIN)"
    return 0
  fi
  rm -f "$stamp_file"
  for spec in "$@"; do PLAN+=("$name|$dir|$ldflags|${spec%%:*}|${spec##*:}"); done
  PLAN+=("$name|$dir|stamp|$want|")
}

exec 9>"$BIN/.lock"
flock 9

plan_group kube "$KUBE_MOD" "$KUBE_LDFLAGS" \
  k8s.io/kubernetes/cmd/kube-apiserver:kube-apiserver \
  k8s.io/kubernetes/cmd/kube-scheduler:kube-scheduler \
  k8s.io/kubernetes/cmd/kube-controller-manager:kube-controller-manager
# The server/v3 module root is etcd's main package.
plan_group etcd "$ETCD_MOD" "$ETCD_LDFLAGS" \
  go.etcd.io/etcd/server/v3:etcd
# A group of its own, so that changing the harness never rebuilds kube-apiserver. It
# shares the kube group's modules and flags, so its packages come from the Go build
# cache the kube group filled (a few seconds, then the link).
plan_group conformance "$CONFORMANCE_MOD" "-s -w" \
  ksched.local/tests/conformance/harness:ksched-conformance
# The queueing-hint harness (tests/conformance/queueharness): the same module set, its
# own group so that changing one harness never relinks the other.
plan_group queueconformance "$QUEUE_CONFORMANCE_MOD" "-s -w" \
  ksched.local/tests/conformance/queueharness:ksched-queue-conformance

if [[ ${#PLAN[@]} -gt 0 ]]; then
  dirs=()
  for item in "${PLAN[@]}"; do IFS='|' read -r _ d _ _ _ <<<"$item"; [[ " ${dirs[*]} " == *" $d "* ]] || dirs+=("$d"); done
  STAGES_TOTAL=1
  for item in "${PLAN[@]}"; do [[ "$item" == *"|stamp|"* ]] || STAGES_TOTAL=$((STAGES_TOTAL + 1)); done
  log "building with $GOVERSION -p $P into $BIN (a cold build takes 6-15 minutes on 2 cores)"
  stage "download Go modules" download "${dirs[@]}"
  for item in "${PLAN[@]}"; do
    IFS='|' read -r name dir ldflags pkg bin <<<"$item"
    if [[ "$ldflags" == stamp ]]; then echo "$pkg" > "$BIN/.$name.stamp"; continue; fi
    stage "compile $bin" compile "$dir" "$ldflags" "$pkg" "$bin"
  done
fi
log "done in $(elapsed); binaries in $BIN"
echo "$BIN"
