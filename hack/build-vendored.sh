#!/bin/sh
# Builds a Go command of a repository that vendors its dependencies and is
# not served by the module proxy, and prints the binary's path. The source
# comes from git at COMMIT; a build of the same commit is reused from the
# cache.
#
#   build-vendored.sh NAME GITHUB_REPO COMMIT PACKAGE [TAGS]
#   GIT   a clone holding COMMIT (default: cloned from GitHub into a temporary dir)
set -eu
name=$1 repo=$2 commit=$3 pkg=$4 tags=${5:-}
cache=${XDG_CACHE_HOME:-$HOME/.cache}/payload-applier/bin
out=$cache/$name-$commit
if [ -x "$out" ]; then
	echo "$out"
	exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git=${GIT:-}
if [ -z "$git" ]; then
	git clone -q --filter=blob:none "https://github.com/$repo" "$tmp/src.git" >&2
	git=$tmp/src.git
fi
mkdir -p "$tmp/src" "$cache"
git --git-dir="$git/.git" rev-parse --git-dir >/dev/null 2>&1 && git="$git/.git"
git --git-dir="$git" archive "$commit" | tar -x -C "$tmp/src"
echo "building $name at $commit (a few minutes)" >&2
(cd "$tmp/src" && go build -mod=vendor -tags "$tags" -o "$out.tmp" "$pkg")
mv "$out.tmp" "$out"
echo "$out"
