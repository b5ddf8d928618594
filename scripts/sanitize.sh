#!/usr/bin/env bash
# The unit, protocol, interpose, top, exporter and hostile suites under
# AddressSanitizer and UndefinedBehaviorSanitizer, in build-sanitize/.
# Any finding fails its test.  (Beside ASan's own malloc the interposer
# cannot run: of the interpose suite only 'race' applies, and the tests
# that need the library inside a process are not configured.)  Then the
# interpose and profile suites under UndefinedBehaviorSanitizer alone, in
# build-ubsan/, which leaves malloc to the interposer: its every path,
# sampling included, inside real processes.
# Extra arguments go to `meson test`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
[ -d build-sanitize ] ||
	meson setup build-sanitize -Db_sanitize=address,undefined -Db_lundef=false
meson compile -C build-sanitize
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
meson test -C build-sanitize --print-errorlogs --suite unit --suite protocol \
	--suite interpose --suite top --suite exporter --suite hostile "$@"

[ -d build-ubsan ] ||
	meson setup build-ubsan -Db_sanitize=undefined -Db_lundef=false
meson compile -C build-ubsan
meson test -C build-ubsan --print-errorlogs --suite interpose --suite profile "$@"
