#!/bin/sh
# Builds the real cluster-version-operator for side-by-side benchmarks and
# prints the binary's path (hack/build-vendored.sh).
#
#   CVO_GIT     a clone of openshift/cluster-version-operator holding
#               CVO_COMMIT (default: cloned from GitHub into a temporary dir)
#   CVO_COMMIT  default 6e719331fb5863141397f35b1f47bed42148a6dd
set -eu
GIT=${CVO_GIT:-} exec "$(dirname "$0")/build-vendored.sh" cluster-version-operator openshift/cluster-version-operator \
	"${CVO_COMMIT:-6e719331fb5863141397f35b1f47bed42148a6dd}" ./cmd/cluster-version-operator
