#!/bin/sh
# Builds the real oc, for the client checks of what the operator writes,
# and prints the binary's path (hack/build-vendored.sh). The tags are the
# ones oc's Makefile uses for its static Linux builds.
#
#   OC_GIT     a clone of openshift/oc holding OC_COMMIT (default: cloned
#              from GitHub into a temporary dir)
#   OC_COMMIT  default 6b8e30c5b39aa742147846341a203905e04834f3
set -eu
GIT=${OC_GIT:-} exec "$(dirname "$0")/build-vendored.sh" oc openshift/oc \
	"${OC_COMMIT:-6b8e30c5b39aa742147846341a203905e04834f3}" ./cmd/oc \
	"include_gcs include_oss containers_image_openpgp"
