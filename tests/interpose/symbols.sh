#!/usr/bin/env bash
# libmstatshm.so exports exactly its API (versioned MSTATSHM_1), the
# malloc family, the C++ operators, _exit/_Exit and the exec functions
# (unversioned: a versioned malloc would never bind to a program's
# malloc@GLIBC_2.2.5), and nothing else.
# Usage: symbols.sh LIBMSTATSHM
set -euo pipefail
# Under valgrind (meson test --setup valgrind) the interposer never runs
# (valgrind replaces malloc everywhere) and bash reports its own leaks:
# skip, from a process that is not bash.
[[ ${LD_PRELOAD:-} != *vgpreload* ]] ||
	exec /bin/sh -c 'echo "SKIP: valgrind replaces malloc everywhere"; exit 77'
lib=$1
got=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TWi]$/ {print $3}' | sort)
want=$(sort <<'EOF2'
mstat_reader_close@@MSTATSHM_1
mstat_reader_error@@MSTATSHM_1
mstat_reader_info@@MSTATSHM_1
mstat_reader_open_name@@MSTATSHM_1
mstat_reader_open_pid@@MSTATSHM_1
mstat_reader_set_wait_budget@@MSTATSHM_1
mstat_reader_snapshot@@MSTATSHM_1
mstat_record_alloc@@MSTATSHM_1
mstat_record_free@@MSTATSHM_1
mstat_record_realloc@@MSTATSHM_1
mstat_self_enabled@@MSTATSHM_1
mstat_self_snapshot@@MSTATSHM_1
mstat_self_status@@MSTATSHM_1
malloc
free
calloc
realloc
reallocarray
posix_memalign
aligned_alloc
memalign
valloc
pvalloc
malloc_usable_size
_exit
_Exit
execve
execv
execvp
execvpe
execl
execle
execlp
fexecve
execveat
_Znwm
_Znam
_ZnwmRKSt9nothrow_t
_ZnamRKSt9nothrow_t
_ZnwmSt11align_val_t
_ZnamSt11align_val_t
_ZnwmSt11align_val_tRKSt9nothrow_t
_ZnamSt11align_val_tRKSt9nothrow_t
_ZdlPv
_ZdaPv
_ZdlPvm
_ZdaPvm
_ZdlPvRKSt9nothrow_t
_ZdaPvRKSt9nothrow_t
_ZdlPvSt11align_val_t
_ZdaPvSt11align_val_t
_ZdlPvmSt11align_val_t
_ZdaPvmSt11align_val_t
_ZdlPvSt11align_val_tRKSt9nothrow_t
_ZdaPvSt11align_val_tRKSt9nothrow_t
EOF2
)
if [ "$got" != "$want" ]; then
	echo "FAIL: exported symbols differ (< exported, > expected):" >&2
	diff <(echo "$got") <(echo "$want") >&2 || true
	exit 1
fi
echo ok
