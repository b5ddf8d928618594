/* SPDX-License-Identifier: MIT */
/* seccomp.c - a process's seccomp filters, run on the calls the attach
 * makes; see seccomp.h. */
#include "attach/seccomp.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <linux/seccomp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/random.h>
#include <sys/syscall.h>

#define FILTERS_MAX 64u
#define INSNS_MAX 4096u /* BPF_MAXINSNS */

#ifndef MFD_CLOEXEC
#define MFD_CLOEXEC 1u
#endif

/* A call, as the attach or the library makes it. */
struct call {
	const char *name;
	int nr;
	uint64_t args[6];
	bool may_fail; /* refused with an error, the library does without */
};

#define PROT_RX (PROT_READ | PROT_EXEC)
#define PROT_RW (PROT_READ | PROT_WRITE)
static const struct call calls[] = {
	{ "memfd_create", SYS_memfd_create, { 0, MFD_CLOEXEC }, false },
	{ "openat", SYS_openat, { (uint64_t)AT_FDCWD, 0, O_RDONLY | O_CLOEXEC }, false },
	{ "openat", SYS_openat, { 3, 0, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
				   0600 }, false },
	{ "openat", SYS_openat, { (uint64_t)AT_FDCWD, 0, O_RDONLY | O_DIRECTORY | O_CLOEXEC },
	  false },
	{ "read", SYS_read, { 3, 0, 832 }, false },
	{ "pread64", SYS_pread64, { 3, 0, 832, 64 }, false },
	{ "newfstatat", SYS_newfstatat, { 3, 0, 0, 0x1000 /* AT_EMPTY_PATH */ }, false },
	{ "close", SYS_close, { 3 }, false },
	{ "mmap", SYS_mmap, { 0, 8192, PROT_READ, MAP_PRIVATE | MAP_DENYWRITE, 3, 0 }, false },
	{ "mmap", SYS_mmap, { 0, 8192, PROT_RX, MAP_PRIVATE | MAP_FIXED | MAP_DENYWRITE, 3,
			      4096 }, false },
	{ "mmap", SYS_mmap, { 0, 8192, PROT_RW, MAP_PRIVATE | MAP_FIXED | MAP_DENYWRITE, 3,
			      8192 }, false },
	{ "mmap", SYS_mmap, { 0, 8192, PROT_RW, MAP_PRIVATE | MAP_FIXED | MAP_ANONYMOUS,
			      (uint64_t)-1, 0 }, false },
	{ "mmap", SYS_mmap, { 0, 8192, PROT_RW, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
			      (uint64_t)-1, 0 }, false },
	{ "mmap", SYS_mmap, { 0, 8192, PROT_RW, MAP_SHARED, 3, 0 }, false },
	{ "mprotect", SYS_mprotect, { 0, 4096, PROT_READ }, false },
	{ "mprotect", SYS_mprotect, { 0, 4096, PROT_RW }, false },
	{ "munmap", SYS_munmap, { 0, 4096 }, false },
	{ "mremap", SYS_mremap, { 0, 4096, 8192, MREMAP_MAYMOVE }, false },
	{ "futex", SYS_futex, { 0, FUTEX_WAIT_PRIVATE }, false },
	{ "futex", SYS_futex, { 0, FUTEX_WAKE_PRIVATE, 1 }, false },
	{ "getpid", SYS_getpid, { 0 }, false },
	{ "gettid", SYS_gettid, { 0 }, false },
	{ "fchmod", SYS_fchmod, { 3, 0600 }, false },
	{ "ftruncate", SYS_ftruncate, { 3, 1 << 20 }, false },
	{ "fallocate", SYS_fallocate, { 3, 0, 0, 4096 }, false },
	{ "fcntl", SYS_fcntl, { 3, F_OFD_SETLK }, false },
	{ "fcntl", SYS_fcntl, { 3, F_OFD_GETLK }, false },
	{ "getdents64", SYS_getdents64, { 3, 0, 4096 }, false },
	{ "unlink", SYS_unlink, { 0 }, false },
	{ "unlinkat", SYS_unlinkat, { 3, 0, 0 }, false },
	{ "clock_gettime", SYS_clock_gettime, { 1, 0 }, false },
	{ "readlink", SYS_readlink, { 0, 0, 240 }, true },
	{ "membarrier", SYS_membarrier,
	  { MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED }, true },
	{ "membarrier", SYS_membarrier,
	  { MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED }, true },
	{ "membarrier", SYS_membarrier, { MEMBARRIER_CMD_PRIVATE_EXPEDITED }, true },
	{ "getrandom", SYS_getrandom, { 0, 8, GRND_NONBLOCK }, true },
};
#define CALLS (sizeof(calls) / sizeof(calls[0]))

/* Runs one filter on `d`: its return value.  The instructions the kernel
 * accepts in a seccomp filter (its seccomp_check_filter()); anything else
 * the kernel would have refused to install, so it is not there. */
static uint32_t
run(const struct sock_filter *f, unsigned n, const struct seccomp_data *d)
{
	uint32_t a = 0, x = 0, mem[BPF_MEMWORDS] = { 0 };

	for (unsigned pc = 0; pc < n; pc++) {
		const struct sock_filter *i = &f[pc];
		uint32_t k = i->k, src = BPF_SRC(i->code) == BPF_X ? x : k;
		switch (i->code) {
		case BPF_LD | BPF_W | BPF_ABS:
			if (k > sizeof(*d) - 4 || (k & 3))
				return SECCOMP_RET_KILL_PROCESS;
			memcpy(&a, (const char *)d + k, 4);
			break;
		case BPF_LD | BPF_W | BPF_LEN: a = sizeof(*d); break;
		case BPF_LDX | BPF_W | BPF_LEN: x = sizeof(*d); break;
		case BPF_LD | BPF_IMM: a = k; break;
		case BPF_LDX | BPF_IMM: x = k; break;
		case BPF_LD | BPF_MEM: a = mem[k % BPF_MEMWORDS]; break;
		case BPF_LDX | BPF_MEM: x = mem[k % BPF_MEMWORDS]; break;
		case BPF_ST: mem[k % BPF_MEMWORDS] = a; break;
		case BPF_STX: mem[k % BPF_MEMWORDS] = x; break;
		case BPF_MISC | BPF_TAX: x = a; break;
		case BPF_MISC | BPF_TXA: a = x; break;
		case BPF_ALU | BPF_NEG: a = -a; break;
		case BPF_ALU | BPF_ADD | BPF_K: case BPF_ALU | BPF_ADD | BPF_X: a += src; break;
		case BPF_ALU | BPF_SUB | BPF_K: case BPF_ALU | BPF_SUB | BPF_X: a -= src; break;
		case BPF_ALU | BPF_MUL | BPF_K: case BPF_ALU | BPF_MUL | BPF_X: a *= src; break;
		case BPF_ALU | BPF_DIV | BPF_K: case BPF_ALU | BPF_DIV | BPF_X:
			if (!src)
				return 0; /* the kernel's: the filter returns 0 */
			a /= src;
			break;
		case BPF_ALU | BPF_AND | BPF_K: case BPF_ALU | BPF_AND | BPF_X: a &= src; break;
		case BPF_ALU | BPF_OR | BPF_K: case BPF_ALU | BPF_OR | BPF_X: a |= src; break;
		case BPF_ALU | BPF_XOR | BPF_K: case BPF_ALU | BPF_XOR | BPF_X: a ^= src; break;
		case BPF_ALU | BPF_LSH | BPF_K: case BPF_ALU | BPF_LSH | BPF_X:
			a = src < 32 ? a << src : 0;
			break;
		case BPF_ALU | BPF_RSH | BPF_K: case BPF_ALU | BPF_RSH | BPF_X:
			a = src < 32 ? a >> src : 0;
			break;
		case BPF_JMP | BPF_JA: pc += k; break;
		case BPF_JMP | BPF_JEQ | BPF_K: case BPF_JMP | BPF_JEQ | BPF_X:
			pc += a == src ? i->jt : i->jf;
			break;
		case BPF_JMP | BPF_JGT | BPF_K: case BPF_JMP | BPF_JGT | BPF_X:
			pc += a > src ? i->jt : i->jf;
			break;
		case BPF_JMP | BPF_JGE | BPF_K: case BPF_JMP | BPF_JGE | BPF_X:
			pc += a >= src ? i->jt : i->jf;
			break;
		case BPF_JMP | BPF_JSET | BPF_K: case BPF_JMP | BPF_JSET | BPF_X:
			pc += (a & src) ? i->jt : i->jf;
			break;
		case BPF_RET | BPF_K: return k;
		case BPF_RET | BPF_A: return a;
		default: return SECCOMP_RET_KILL_PROCESS;
		}
	}
	return SECCOMP_RET_KILL_PROCESS;
}

/* The verdict that wins among filters: the lowest action, as a signed
 * number (KILL_PROCESS, 0x80000000, first). */
static int32_t
action(uint32_t ret)
{
	return (int32_t)(ret & SECCOMP_RET_ACTION_FULL);
}

static const char *
verdict_name(uint32_t ret)
{
	switch (ret & SECCOMP_RET_ACTION_FULL) {
	case SECCOMP_RET_KILL_PROCESS: return "kills the process";
	case SECCOMP_RET_KILL_THREAD: return "kills the thread";
	case SECCOMP_RET_TRAP: return "raises SIGSYS";
	case SECCOMP_RET_ERRNO: return "fails it";
	case SECCOMP_RET_USER_NOTIF: return "hands it to a supervisor";
	case SECCOMP_RET_TRACE: return "hands it to a tracer";
	default: return "refuses it";
	}
}

static int
mode_of(pid_t pid)
{
	char path[64], line[256];
	int mode = -1;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Seccomp: %d", &mode) == 1)
			break;
	fclose(f);
	return mode;
}

struct filters {
	struct sock_filter *insns[FILTERS_MAX];
	unsigned len[FILTERS_MAX], n;
};

static int
read_filters(pid_t tid, struct filters *fs)
{
	for (fs->n = 0; fs->n < FILTERS_MAX; fs->n++) {
		long n = ptrace(PTRACE_SECCOMP_GET_FILTER, tid, (void *)(long)fs->n, NULL);
		if (n < 0)
			return errno == ENOENT ? 0 : -errno;
		if (n == 0 || n > (long)INSNS_MAX)
			return -EPROTO;
		fs->insns[fs->n] = calloc((size_t)n, sizeof(struct sock_filter));
		if (!fs->insns[fs->n] ||
		    ptrace(PTRACE_SECCOMP_GET_FILTER, tid, (void *)(long)fs->n,
			   fs->insns[fs->n]) != n)
			return -EPROTO;
		fs->len[fs->n] = (unsigned)n;
	}
	return -E2BIG;
}

int
mstat_seccomp_check(pid_t pid, pid_t tid, char *err, size_t len)
{
	struct filters fs = { .n = 0 };
	int mode = mode_of(pid), rc = 0;

	if (mode <= 0)
		return 0;
	if (mode == SECCOMP_MODE_STRICT) {
		snprintf(err, len, "it runs in seccomp's strict mode: it may make no "
			 "system call the attach needs");
		return -EPERM;
	}
	if ((rc = read_filters(tid, &fs)) < 0) {
		snprintf(err, len, "it runs under a seccomp filter, which cannot be "
			 "read without CAP_SYS_ADMIN (%s): the attach cannot know "
			 "whether the filter allows what it does", strerror(-rc));
		rc = -EACCES;
		goto out;
	}
	for (size_t c = 0; c < CALLS && rc == 0; c++) {
		struct seccomp_data d = { .nr = calls[c].nr, .arch = AUDIT_ARCH_X86_64 };
		uint32_t worst = SECCOMP_RET_ALLOW;
		memcpy(d.args, calls[c].args, sizeof(d.args));
		for (unsigned i = 0; i < fs.n; i++) {
			uint32_t r = run(fs.insns[i], fs.len[i], &d);
			if (action(r) < action(worst))
				worst = r;
		}
		uint32_t act = worst & SECCOMP_RET_ACTION_FULL;
		if (act == SECCOMP_RET_ALLOW || act == SECCOMP_RET_LOG ||
		    (act == SECCOMP_RET_ERRNO && calls[c].may_fail))
			continue;
		snprintf(err, len, "its seccomp filter %s %s(), which the attach needs",
			 verdict_name(worst), calls[c].name);
		rc = -EPERM;
	}
out:
	for (unsigned i = 0; i < fs.n; i++)
		free(fs.insns[i]);
	return rc;
}
