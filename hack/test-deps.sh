#!/usr/bin/env bash
# Installs what cairn's tests need besides Go, on a fresh machine, and is a
# no-op once it is there:
#   - curl, which the example event workers call the API with;
#   - Debian's chromium, which the web console's tests drive headless
#     (internal/testkit/browsertest);
#   - kube-apiserver and kube-controller-manager for internal/testkit/kubetest's real
#     Kubernetes API, built from Go modules by hack/kube-binaries.sh into a
#     cache keyed by version.
# Packages come from apt-get (as root, or through sudo when it is there);
# without either, it says what to install and fails.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v curl >/dev/null 2>&1 || missing+=(curl)
[ -x "${CAIRN_CHROMIUM:-/usr/bin/chromium}" ] || missing+=(chromium)
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then sudo=sudo; else
      echo "test-deps: install ${missing[*]} (Debian: apt-get install -y ${missing[*]}), then run this again" >&2
      exit 1
    fi
  fi
  echo "test-deps: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
fi

hack/kube-binaries.sh
