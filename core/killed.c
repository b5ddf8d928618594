/* SPDX-License-Identifier: MIT */
/* killed.c - what the tools keep of a killed process; see killed.h. */
#include "core/killed.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "shm/clock.h"
#include "core/pprof.h"
#include "shm/procfs.h"
#include "core/symbols.h"

int
mstat_killed_env(struct mstat_grace *g, char *err, size_t errlen)
{
	static const struct {
		const char *var;
		uint64_t dflt, max;
		const char *what;
	} vars[] = {
		{ MSTAT_ENV_KILLED_GRACE, MSTAT_KILLED_GRACE_DEFAULT,
		  MSTAT_KILLED_GRACE_MAX, "a number of seconds in 0..86400" },
		{ MSTAT_ENV_KILLED_BYTES, MSTAT_KILLED_BYTES_DEFAULT, UINT64_MAX,
		  "a number of bytes" },
	};
	uint64_t *out[] = { &g->seconds, &g->max_bytes };

	for (size_t i = 0; i < 2; i++) {
		const char *e = getenv(vars[i].var);
		*out[i] = vars[i].dflt;
		if (e && *e && mstat_owner_grace_parse(e, vars[i].max, out[i]) < 0) {
			snprintf(err, errlen, "%s=%.32s: not %s", vars[i].var, e,
				 vars[i].what);
			return -EINVAL;
		}
	}
	return 0;
}

void
mstat_killed_kept_add(struct mstat_kept_list *l, int dirfd, const char *name,
		      const struct mstat_reaped *r)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i].ino == r->ino && l->v[i].dev == r->dev &&
		    strcmp(l->v[i].name, name) == 0)
			return;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 8;
		void *p = realloc(l->v, cap * sizeof(*l->v));
		if (!p)
			return; /* attached again, and read again: harmless */
		l->v = p;
		l->cap = cap;
	}
	mstat_owner_kept_set(&l->v[l->n++], dirfd, name, r);
}

static void
say(void (*note)(void *, const char *), void *arg, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void
say(void (*note)(void *, const char *), void *arg, const char *fmt, ...)
{
	char line[256];
	va_list ap;

	if (!note)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	note(arg, line);
}

/* What the byte bound did with a segment it took off. */
struct bound_said {
	void (*note)(void *arg, const char *line);
	void *arg;
	uint64_t max_bytes;
	size_t removed;
};

static void
bound_done(void *arg, const struct mstat_kept *k, int rc, const char *why)
{
	struct bound_said *b = arg;

	if (rc == MSTAT_REAP_LEFT)
		say(b->note, b->arg, "left %s: %s", k->name, why);
	else if (rc < 0)
		say(b->note, b->arg, "%s: cannot remove: %s", k->name,
		    strerror(-rc));
	else /* removed, or gone already */
		say(b->note, b->arg, "removed %s: the kept segments of killed "
		    "processes were over %llu bytes", k->name,
		    (unsigned long long)b->max_bytes);
	b->removed += rc == MSTAT_REAP_REMOVED;
}

size_t
mstat_killed_kept_bound(struct mstat_kept_list *l, const struct mstat_grace *g,
			void (*note)(void *arg, const char *line), void *arg)
{
	struct bound_said b = { note, arg, g->max_bytes, 0 };

	l->n -= mstat_owner_kept_evict(geteuid(), l->v, l->n, g->max_bytes,
				       bound_done, &b);
	return b.removed;
}

void
mstat_killed_kept_tick(struct mstat_kept_list *l,
		       int (*dirfd_of)(void *darg, uint64_t dev), void *darg,
		       const struct mstat_grace *g,
		       void (*note)(void *arg, const char *line), void *arg)
{
	size_t n = 0;

	for (size_t i = 0; i < l->n; i++) {
		struct mstat_kept *k = &l->v[i];
		struct mstat_reaped r;
		/* Not seen: removed by another, or its /dev/shm not listed. */
		if (!k->seen || (k->dirfd = dirfd_of(darg, k->dev)) < 0)
			continue;
		char why[96];
		int rc = mstat_owner_reap_kept(k, geteuid(), g->seconds, &r, why,
					       sizeof(why));
		if (rc == MSTAT_REAP_REMOVED)
			say(note, arg, "removed %s: killed %llu s ago, its grace "
			    "is over", k->name, (unsigned long long)
			    ((mstat_clock_wall_ns() - r.killed_ns) / 1000000000u));
		else if (rc == MSTAT_REAP_KILLED)
			l->v[n++] = *k;
		else if (rc == MSTAT_REAP_LEFT)
			/* Forgotten: what is there now is not what was kept. */
			say(note, arg, "left %s: %s", k->name, why);
	}
	l->n = n;
	(void)mstat_killed_kept_bound(l, g, note, arg);
	for (size_t i = 0; i < l->n; i++)
		l->v[i].seen = false;
}

const char *mstat_cgroup_root = "/sys/fs/cgroup";

/* The oom_kill count of cgroup `cg` (`up` levels above it): 0 or -errno. */
static int
cg_kills(const struct mstat_oom_watch *w, unsigned up, uint64_t *n)
{
	char cg[sizeof(w->cg)], path[512], buf[1024];

	snprintf(cg, sizeof(cg), "%s", w->cg);
	for (unsigned i = 0; i < up; i++) {
		char *slash = strrchr(cg, '/');
		if (!slash || slash == cg)
			return -ENOENT; /* the root has no such file */
		*slash = '\0';
	}
	/* v1: the memory hierarchy's own directory; v2: the unified one. */
	snprintf(path, sizeof(path), "%s%s%s/%s", mstat_cgroup_root,
		 w->v2 ? "" : "/memory", strcmp(cg, "/") == 0 ? "" : cg,
		 w->v2 ? "memory.events" : "memory.oom_control");
	ssize_t len = mstat_procfs_read_small(path, buf, sizeof(buf));
	if (len < 0)
		return (int)len;
	return mstat_procfs_keyed_count(buf, "oom_kill", n);
}

void
mstat_killed_oom_watch_start(struct mstat_oom_watch *w, pid_t pid)
{
	memset(w, 0, sizeof(*w));
	w->have_cg = mstat_procfs_memcg(pid, w->cg, sizeof(w->cg), &w->v2) == 0 &&
		     cg_kills(w, 0, &w->cg_kills) == 0;
	w->have_parent = w->have_cg && w->v2 &&
			 cg_kills(w, 1, &w->parent_kills) == 0;
	w->have_vm = mstat_procfs_vmstat_oom(&w->vm_kills) == 0;
}

enum mstat_oom
mstat_killed_oom_watch_end(const struct mstat_oom_watch *w, char *why, size_t len)
{
	uint64_t n;

	if (len)
		why[0] = '\0';
	/* A cgroup removed since (a container's, with its last process)
	 * has no file left: then nothing is known of it. */
	int rc = w->have_cg ? cg_kills(w, 0, &n) : -ENOENT;
	if (rc == 0 && n > w->cg_kills) {
		snprintf(why, len, "killed by the OOM killer: memory cgroup %s "
			 "(v%d) oom_kill %llu -> %llu", w->cg, w->v2 ? 2 : 1,
			 (unsigned long long)w->cg_kills, (unsigned long long)n);
		return MSTAT_OOM_CGROUP;
	}
	if (rc < 0 && w->have_parent && cg_kills(w, 1, &n) == 0 &&
	    n > w->parent_kills) {
		snprintf(why, len, "killed by the OOM killer: memory cgroup %s "
			 "(v2, gone; its parent's) oom_kill %llu -> %llu", w->cg,
			 (unsigned long long)w->parent_kills,
			 (unsigned long long)n);
		return MSTAT_OOM_CGROUP;
	}
	if (w->have_vm && mstat_procfs_vmstat_oom(&n) == 0 && n > w->vm_kills) {
		snprintf(why, len, "perhaps killed by the OOM killer: "
			 "/proc/vmstat oom_kill %llu -> %llu while it lived "
			 "(a hint: any process of the machine)",
			 (unsigned long long)w->vm_kills, (unsigned long long)n);
		return MSTAT_OOM_HINT;
	}
	return MSTAT_OOM_NO;
}

/* "-YYYYMMDDTHHMMSSZ.pb.gz": what ends a post-mortem file's name. */
#define STAMP_LEN 17u
#define SUFFIX ".pb.gz"

bool
mstat_killed_postmortem_name(const char *file)
{
	size_t n = strlen(file), sl = sizeof(SUFFIX) - 1;

	if (n < sl + STAMP_LEN + 3 || strcmp(file + n - sl, SUFFIX) != 0)
		return false;
	const char *t = file + n - sl - STAMP_LEN;
	for (unsigned i = 0; i < STAMP_LEN; i++) {
		char c = t[i];
		bool ok = i == 0 ? c == '-' : i == 9 ? c == 'T'
			  : i == 16 ? c == 'Z' : c >= '0' && c <= '9';
		if (!ok)
			return false;
	}
	/* "-PID" before it, and a name before that. */
	const char *p = t;
	while (p > file && p[-1] >= '0' && p[-1] <= '9')
		p--;
	return p < t && p - file >= 2 && p[-1] == '-';
}

struct pm_file {
	char name[256];
	uint64_t size;
};

static int
cmp_pm(const void *a, const void *b)
{
	const struct pm_file *x = a, *y = b;
	size_t xl = strlen(x->name), yl = strlen(y->name);
	size_t sl = sizeof(SUFFIX) - 1 + STAMP_LEN;
	/* By the time in the name, then by the name. */
	int c = strcmp(x->name + xl - sl, y->name + yl - sl);

	return c ? c : strcmp(x->name, y->name);
}

/* Removes the oldest post-mortem files of `dir` (not `keep`) while they
 * hold more than `max_bytes`.  Files of another user, links and anything
 * not named as ours stay. */
static void
trim(int dirfd, const char *keep, uint64_t max_bytes)
{
	struct pm_file *f = NULL;
	size_t n = 0, cap = 0;
	uint64_t sum = 0;
	int fd = dup(dirfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d))) {
		struct stat st;
		if (!mstat_killed_postmortem_name(de->d_name) ||
		    strlen(de->d_name) >= sizeof(f->name) ||
		    fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode) || st.st_uid != geteuid())
			continue;
		sum += (uint64_t)st.st_size;
		if (strcmp(de->d_name, keep) == 0)
			continue;
		if (n == cap) {
			size_t c = cap ? 2 * cap : 16;
			void *p = realloc(f, c * sizeof(*f));
			if (!p)
				break;
			f = p;
			cap = c;
		}
		snprintf(f[n].name, sizeof(f[n].name), "%s", de->d_name);
		f[n++].size = (uint64_t)st.st_size;
	}
	closedir(d);
	if (n)
		qsort(f, n, sizeof(*f), cmp_pm);
	for (size_t i = 0; i < n && sum > max_bytes; i++)
		if (unlinkat(dirfd, f[i].name, 0) == 0)
			sum -= f[i].size;
	free(f);
}

int
mstat_killed_postmortem_write(const char *dir, uint64_t max_bytes,
			      struct mstat_reader *r, const char *name, pid_t pid,
			      uint64_t end_ns, const char *comment, char *path,
			      size_t pathlen, char *err, size_t errlen)
{
	char safe[41], stamp[20], file[128];
	struct mstat_profile p;
	struct tm tm;
	time_t secs = (time_t)(end_ns / 1000000000u);
	size_t k = 0;

	/* The name is the process's to choose: only what is safe in a file
	 * name, and never a leading dot. */
	for (const char *c = name; *c && k < sizeof(safe) - 1; c++) {
		bool ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
			  (*c >= '0' && *c <= '9') || *c == '_' || *c == '+' ||
			  (k && (*c == '.' || *c == '-'));
		safe[k++] = ok ? *c : '_';
	}
	safe[k] = '\0';
	if (!k)
		snprintf(safe, sizeof(safe), "process");
	gmtime_r(&secs, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
	snprintf(file, sizeof(file), "%s-%d-%s" SUFFIX, safe, (int)pid, stamp);
	if ((size_t)snprintf(path, pathlen, "%s/%s", dir, file) >= pathlen) {
		snprintf(err, errlen, "%s: name too long", dir);
		return -ENAMETOOLONG;
	}
	int rc = mstat_reader_profile(r, &p);
	if (rc < 0) {
		snprintf(err, errlen, "%s", mstat_reader_error(r));
		return rc;
	}
	struct mstat_symbols *sym = mstat_symbols_new(&p);
	const struct mstat_pprof_options o = { .time_ns = end_ns, .comment = comment };
	rc = mstat_pprof_write_with(&p, sym, &o, path, err, errlen);
	mstat_symbols_free(sym);
	mstat_reader_profile_release(&p);
	if (rc < 0)
		return rc;
	int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd >= 0) {
		trim(dirfd, file, max_bytes);
		close(dirfd);
	}
	return 0;
}

int
mstat_killed_dir_option(const char *v, void *dst, char *why, size_t len)
{
	int fd = open(v, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0 || faccessat(fd, ".", W_OK, AT_EACCESS) < 0) {
		int e = errno;
		/* Said at start, to the one who wrote the command. */
		if (e == ENOENT)
			snprintf(why, len, "%s: make it first (mkdir -m 700 %s)",
				 strerror(e), v);
		else
			snprintf(why, len, "%s", strerror(e));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	*(const char **)dst = v;
	return 0;
}
