#!/usr/bin/env bash
# Fuzzes segment validation and the reader (tests/fuzz/fuzz_reader.c):
# opening, snapshots, and the heap profile (mstat_reader_profile()), with
# libFuzzer, AddressSanitizer and UndefinedBehaviorSanitizer for SECONDS
# seconds, from a seed corpus generated for this run (tests/fuzz/seeds.c)
# in a temporary directory.  Run as root on Debian: it installs clang and
# libFuzzer's runtime (libclang-rt-dev) if they are missing.
#
#   bash tests/fuzz/run.sh SECONDS
#
# Builds into build-fuzz/ (its own directory, not meson's; emptied at each
# run).  Inputs are at most 96 KiB: the start of a segment, then its heap
# profile region (profile_at and profile_bytes below, fuzz_reader.c).
# Exits non-zero if the fuzzer found a crash, a leak, a hang (an input
# that runs longer than 10 s) or an abort of the target's own checks;
# the input is then kept in build-fuzz/artifacts/ and printed (gzip and
# base64), and `build-fuzz/fuzz_reader FILE` runs it again.  The whole run
# takes SECONDS plus the build; a fuzzer that does not stop by itself is
# killed 60 s after that.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [[ $# -ne 1 || ! $1 =~ ^[1-9][0-9]*$ ]]; then
	echo "usage: bash tests/fuzz/run.sh SECONDS" >&2
	exit 2
fi
secs=$1
bash scripts/deps.sh clang libclang-rt-dev

out=build-fuzz
cc=clang
# An input is the first profile_at bytes of a segment (the header, the
# class table and the first slots, where the counters' fields the reader
# looks at are; the rest of that part is holes), then up to profile_bytes
# of its heap profile region, wherever the header puts it (fuzz_reader.c):
# the profile's head, and the stack table, frame pool and module list of a
# small profile, or the first 255 stack entries of a default one.
profile_at=81920 # the control page, the class table, three slots
profile_bytes=16384
cflags=(-std=c11 -D_GNU_SOURCE -g -O1 -fno-omit-frame-pointer
	-Wall -Wextra -Wno-unused-parameter -fno-strict-aliasing
	-I. -Iinclude -DFUZZ_PROFILE_AT="$profile_at"
	-DFUZZ_PROFILE_BYTES="$profile_bytes")
san=(-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all)
rm -rf "$out"
mkdir -p "$out/shm"
# The shm sources as the library has them, instrumented (any finding of
# UndefinedBehaviorSanitizer stops the run as a crash does), with their
# mappings made by the target's guarded mmap (see fuzz_reader.c).
for f in shm/*.c; do
	"$cc" "${cflags[@]}" "${san[@]}" -Dmmap=fuzz_mmap -Dmunmap=fuzz_munmap \
		-c "$f" -o "$out/shm/$(basename "$f" .c).o"
done
"$cc" "${cflags[@]}" "${san[@]}" tests/fuzz/fuzz_reader.c "$out"/shm/*.o \
	-o "$out/fuzz_reader"
"$cc" "${cflags[@]}" tests/fuzz/seeds.c -o "$out/seeds"

corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT
"$out/seeds" "$corpus"
mkdir -p "$out/artifacts"

# -use_value_profile: comparisons count as coverage by how close their
# operands came, which walks a field towards the bound a check compares
# it with (most of the reader's checks of a segment are such bounds).
rc=0
UBSAN_OPTIONS=print_stacktrace=1 \
timeout --kill-after=10 $((secs + 60)) \
	"$out/fuzz_reader" -max_total_time="$secs" -timeout=10 \
	-max_len=$((profile_at + profile_bytes)) -use_value_profile=1 \
	-print_final_stats=1 \
	-artifact_prefix="$out/artifacts/" "$corpus" || rc=$?
if ((rc != 0)); then
	echo "fuzz_reader failed (exit $rc); inputs kept:" >&2
	for f in "$out"/artifacts/*; do
		[[ -f $f ]] || continue
		# Mostly zeros: compressed, a segment's input fits a log.
		echo "$f (gzip, base64; base64 -d | gunzip restores it):" >&2
		gzip -9c "$f" | base64 -w 76 >&2
	done
	exit "$rc"
fi
