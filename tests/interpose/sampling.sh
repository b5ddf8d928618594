#!/usr/bin/env bash
# Sampling changes no count: one fixed workload (sampling.c) gives the same
# per-class counts with no allocation sampled and with every one sampled,
# in front of jemalloc and tcmalloc, whose block for n bytes depends on n
# alone.  glibc's depends on its heap, which sampling changes (a plain
# block freed once moved, a mapped one raising the mmap threshold): there
# the same is checked call by call, by test_pattern.c in pattern-sampled.
# Usage: sampling.sh LIBMSTATSHM_SO0 SAMPLING_PROGRAM
set -euo pipefail
. "$(dirname "$0")/../shell.sh"
lib=$1 prog=$2

for next in libjemalloc.so.2 libtcmalloc_minimal.so.4; do
	name=$next
	for bytes in 0 1; do
		MSTAT_SAMPLE_BYTES=$bytes LD_PRELOAD="$lib $next" \
			"$prog" >"$tmp/$bytes" 2>"$tmp/$bytes.err" ||
			fail "$name, MSTAT_SAMPLE_BYTES=$bytes: $(cat "$tmp/$bytes.err")"
	done
	# The sampled run really sampled: its blocks are page-aligned.
	read -r _ got _ all <"$tmp/1.err"
	[ "$got" -gt 0 ] && [ "$got" -ge $((all * 9 / 10)) ] ||
		fail "$name: $got of $all blocks sampled with MSTAT_SAMPLE_BYTES=1"
	diff -u "$tmp/0" "$tmp/1" >"$tmp/diff" ||
		fail "$name: the counts differ with every allocation sampled:
$(cat "$tmp/diff")"
	echo "ok: $name, $(wc -l <"$tmp/0") lines the same, $got of $all blocks sampled"
done
