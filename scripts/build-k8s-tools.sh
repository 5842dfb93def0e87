#!/usr/bin/env bash
# Builds the real control plane the acceptance tests run — kube-apiserver and
# kube-controller-manager, etcd, kwok — from the Go module proxy, once per version, into
# bin/k8s-<versions>/ (bin/ is not committed), and writes kwok's Stage configuration there
# as kwok-stages.yaml (acceptance/k8senv reads it). Cached: a second run only checks files.
# `build-k8s-tools.sh kubectl` builds only kubectl (same version and ldflags), which the
# acceptance tests run as users do (make test) and `make bench-kube` measures.
# See shared recipe k8s-control-plane.md.
set -euo pipefail
cd "$(dirname "$0")/.."
K8S=v1.34.4 ETCD=v3.5.35 KWOK=v0.8.0
out=$PWD/bin/k8s-$K8S-etcd-$ETCD-kwok-$KWOK
mkdir -p "$out"
minor=$(echo "$K8S" | cut -d. -f2)
ldf="-s -w -X k8s.io/component-base/version.gitVersion=$K8S -X k8s.io/component-base/version.gitMajor=1 \
 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/client-go/pkg/version.gitVersion=$K8S"
build() { # dir pkg name [ldflags]
  [ -x "$out/$3" ] && return 0
  echo "building $3 (once; cached in $out)" >&2
  (cd "acceptance/tools/$1" && CGO_ENABLED=0 go build -trimpath -ldflags "${4:-}" -o "$out/$3.tmp" "$2")
  mv "$out/$3.tmp" "$out/$3"
}

# kwok's default "fast" stages (nodes become Ready; pods Running+Ready; pods with a
# deletionTimestamp are deleted), concatenated in the order of their kustomization.yaml.
stages() {
  [ -s "$out/kwok-stages.yaml" ] && return 0
  local dir
  dir=$(cd acceptance/tools/kwok && go mod download -json "sigs.k8s.io/kwok@$KWOK" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
  [ -d "$dir/kustomize/stage" ] || { echo "kwok module source not found (Dir=$dir)" >&2; exit 1; }
  local tmp="$out/kwok-stages.yaml.tmp" sep="" kind f
  : >"$tmp"
  for kind in node pod; do
    for f in $(sed -n 's/^- \(.*\.yaml\)$/\1/p' "$dir/kustomize/stage/$kind/fast/kustomization.yaml"); do
      { printf '%s' "$sep"; echo "# from sigs.k8s.io/kwok@$KWOK kustomize/stage/$kind/fast/$f"
        sed -e '$a\' "$dir/kustomize/stage/$kind/fast/$f"; } >>"$tmp"
      sep=$'---\n'
    done
  done
  grep -q 'kind: Stage' "$tmp" || { echo "no Stage objects in $tmp" >&2; exit 1; }
  mv "$tmp" "$out/kwok-stages.yaml"
}

# kubectl is in k8s.io/kubernetes but its dependencies (kustomize, …) are not in the
# wrapper module's go.sum: build it with a copy of go.mod/go.sum (-modfile) that the go
# command completes from the module proxy, so the committed files stay as they are.
build_kubectl() {
  [ -x "$out/kubectl" ] && return 0
  echo "building kubectl (once; cached in $out)" >&2
  local mod="$out/kubectl-build"
  mkdir -p "$mod"
  cp acceptance/tools/k8s/go.mod "$mod/kubectl.mod"
  cp acceptance/tools/k8s/go.sum "$mod/kubectl.sum"
  (cd acceptance/tools/k8s && CGO_ENABLED=0 go build -mod=mod -modfile="$mod/kubectl.mod" -trimpath \
    -ldflags "$ldf" -o "$out/kubectl.tmp" k8s.io/kubernetes/cmd/kubectl)
  mv "$out/kubectl.tmp" "$out/kubectl"
}

case "${1:-}" in
"") ;;
kubectl) build_kubectl; ln -sfn "$(basename "$out")" bin/k8s; echo "$out/kubectl"; exit 0 ;;
*) echo "usage: $0 [kubectl]" >&2; exit 2 ;;
esac

build etcd go.etcd.io/etcd/server/v3 etcd
build kwok sigs.k8s.io/kwok/cmd/kwok kwok
stages
build k8s k8s.io/kubernetes/cmd/kube-apiserver kube-apiserver "$ldf"
build k8s k8s.io/kubernetes/cmd/kube-controller-manager kube-controller-manager "$ldf"
ln -sfn "$(basename "$out")" bin/k8s
echo "$out"
