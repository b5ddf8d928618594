#!/usr/bin/env bash
# Instructions per malloc+free pair, counted by callgrind: unlike time,
# the same on a quiet and a busy machine.  Each variant runs the hot loop
# for N and 2N pairs; the difference over N cancels start-up and exit.
#
#   bench/instructions.sh PAIRS_EXE LIBMSTATSHM_SO FORWARD_SO LEAN_SO [ATTACH_SO [N]]
#
# ATTACH_SO (libmstatshm-attach.so.0, "none" to leave it out) adds the
# variant "attached": the loop in a process that loaded and started it
# as mstat-attach has a target do it (mstat-bench-pairs --attach).
#
# Prints "BENCH instructions variant=V ir_pair=X extra_ir=+Y" per variant.
set -euo pipefail
pairs=$1 lib=$2 fwd=$3 lean=$4 attach=${5:-none} n=${6:-200000}
valgrind=$(command -v valgrind || true)
if [ -z "$valgrind" ]; then
	echo "BENCH instructions skipped: valgrind not installed (bench/run.sh installs it)"
	exit 0
fi
tmp=$(mktemp -d /tmp/mstat-bench-ir.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# ir VARIANT_LOOP ITERS ARGS [ENV...]: total instructions of one run
ir() {
	local loop=$1 iters=$2 args=$3
	shift 3
	# shellcheck disable=SC2086 # $args: words, or none
	env -u LD_PRELOAD -u MALLOC_PERTURB_ -u MALLOC_CHECK_ -u GLIBC_TUNABLES \
		"$@" MSTAT_NAME=mstat-bench-ir \
		"$valgrind" --tool=callgrind --callgrind-out-file="$tmp/out" \
		"$pairs" --variant "$loop" --threads 1 --iters "$iters" $args \
		>/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; return 1; }
	awk '/^(summary|totals):/ { print $2; exit }' "$tmp/out"
}

declare -A per
# name|loop|env...|pairs arguments
variants=(
	"plain|plain|"
	"lib|plain|LD_PRELOAD=$lib"
	"forward|plain|LD_PRELOAD=$fwd"
	"lean-preload|plain|LD_PRELOAD=$lean"
	"go|go|"
	"sect-membarrier|sect-membarrier|"
	"sect-fenced|sect-fenced|"
	"lean-membarrier|lean-membarrier|"
	"lean+touch|lean+touch|"
	"lean+requested|lean+requested|"
	"lean+computed|lean+computed|"
	"floor|floor|"
	"usable|usable|"
)
[ "$attach" = none ] || variants+=("attached|plain||--attach $attach")
for v in "${variants[@]}"; do
	IFS='|' read -r name loop envs args <<<"$v"
	# shellcheck disable=SC2086
	a=$(ir "$loop" "$n" "$args" $envs) b=$(ir "$loop" $((2 * n)) "$args" $envs)
	per[$name]=$(awk -v a="$a" -v b="$b" -v n="$n" 'BEGIN { printf "%.1f", (b - a) / n }')
done
for v in "${variants[@]}"; do
	IFS='|' read -r name _ _ _ <<<"$v"
	awk -v name="$name" -v x="${per[$name]}" -v p="${per[plain]}" 'BEGIN {
		printf "BENCH instructions variant=%s ir_pair=%.1f extra_ir=%+.1f\n",
			name, x, x - p }'
done
