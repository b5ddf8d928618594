# shell.sh - the start every shell test shares; sourced after
# `set -euo pipefail`.
#
# Under valgrind (meson test --setup valgrind) the interposer never runs
# (valgrind replaces malloc everywhere) and bash reports its own leaks:
# skip, from a process that is not bash.  Then $tmp, a directory removed
# at exit, and `fail MESSAGE`.
[[ ${LD_PRELOAD:-} != *vgpreload* ]] ||
	exec /bin/sh -c 'echo "SKIP: valgrind replaces malloc everywhere"; exit 77'
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
