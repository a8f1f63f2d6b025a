#!/usr/bin/env bash
# Builds kube-apiserver and kube-controller-manager for the tests of
# internal/testkit/kubetest from the k8s.io/kubernetes module whose version matches
# cairn's k8s.io/* modules (go.mod's k8s.io/client-go v0.X.Y -> v1.X.Y).
#
# Needs only Go and the module proxy. The module zip of k8s.io/kubernetes has
# no staging/ tree while its go.mod replaces every k8s.io/<x> with
# ./staging/src/k8s.io/<x>; this script fills staging/ from the published
# k8s.io/<x>@v0.X.Y modules and builds with GOWORK=off -mod=mod.
#
# Output: ${CAIRN_KUBE_BIN_DIR:-$HOME/.cache/cairn/kube/v1.X.Y}/{kube-apiserver,kube-controller-manager}.
# A no-op when both binaries are already there. Takes about 5 minutes on a
# 2-core machine with a warm module cache (longer when cold).
set -euo pipefail
cd "$(dirname "$0")/.."

client_go=$(go list -m -f '{{.Version}}' k8s.io/client-go)   # v0.37.2
minor_patch=${client_go#v0.}                                   # 37.2
version="v1.${minor_patch}"                                    # v1.37.2
minor=${minor_patch%%.*}                                       # 37
out=${CAIRN_KUBE_BIN_DIR:-$HOME/.cache/cairn/kube/$version}

if [[ -x "$out/kube-apiserver" && -x "$out/kube-controller-manager" ]]; then
  echo "kube-binaries: $version already in $out"
  exit 0
fi

echo "kube-binaries: building kube-apiserver and kube-controller-manager $version into $out"
scratch=$(mktemp -d "${TMPDIR:-/tmp}/cairn-kube-build.XXXXXX")
trap 'chmod -R u+w "$scratch" 2>/dev/null || true; rm -rf "$scratch"' EXIT

# Module directories, outside cairn's module so the lookups do not touch go.mod.
moddir() {
  (cd "$scratch" && GOWORK=off GOFLAGS=-mod=mod go mod download -json "$1" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
}

kdir=$(moddir "k8s.io/kubernetes@$version")
[[ -n "$kdir" ]] || { echo "kube-binaries: cannot download k8s.io/kubernetes@$version"; exit 1; }
cp -R "$kdir" "$scratch/src"
chmod -R u+w "$scratch/src"

# Every replace of k8s.io/<x> => ./staging/src/k8s.io/<x>.
staged=$(sed -n 's#^[[:space:]]*\(k8s\.io/[^ ]*\) => \./staging/src/k8s\.io/.*#\1#p' "$scratch/src/go.mod" | sort -u)
for m in $staged; do
  case "$m" in
    k8s.io/sample-cli-plugin|k8s.io/sample-controller) continue ;; # not served, not needed
  esac
  d=$(moddir "$m@v0.$minor_patch")
  [[ -n "$d" ]] || { echo "kube-binaries: cannot download $m@v0.$minor_patch"; exit 1; }
  mkdir -p "$scratch/src/staging/src/$(dirname "$m")"
  cp -R "$d" "$scratch/src/staging/src/$m"
done
chmod -R u+w "$scratch/src/staging"

mkdir -p "$out"
(
  cd "$scratch/src"
  GOWORK=off GOFLAGS="-mod=mod -buildvcs=false" go build \
    -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor" \
    -o "$scratch/bin/" ./cmd/kube-apiserver ./cmd/kube-controller-manager
)
# Move into place only when both built, so a half build never looks complete.
mv "$scratch/bin/kube-controller-manager" "$out/kube-controller-manager.tmp"
mv "$scratch/bin/kube-apiserver" "$out/kube-apiserver.tmp"
mv "$out/kube-controller-manager.tmp" "$out/kube-controller-manager"
mv "$out/kube-apiserver.tmp" "$out/kube-apiserver"
echo "kube-binaries: built $out/kube-apiserver and $out/kube-controller-manager"
