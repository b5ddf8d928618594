/* SPDX-License-Identifier: MIT */
/* procs.c - the machine's processes and their /dev/shm; see procs.h. */
#include "core/procs.h"

#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shm/beneath.h"
#include "shm/layout.h"
#include "shm/name.h"

/* Processes whose mount namespace and root are looked at again each
 * sweep: a sixteenth of them, and at least this many. */
#define RECHECK_MIN 16

static uint64_t
mix(uint64_t x)
{
	x ^= x >> 31;
	x *= UINT64_C(0x7fb5d329728ea185);
	x ^= x >> 27;
	x *= UINT64_C(0x81dadef4bc2dd44d);
	return x ^ (x >> 33);
}

/* ---- the directories ---- */

void
mstat_procs_shmdir_ref(struct mstat_shmdir *d)
{
	d->refs++;
}

void
mstat_procs_shmdir_unref(struct mstat_procs *ps, struct mstat_shmdir *d)
{
	if (!d || --d->refs)
		return;
	for (size_t i = 0; i < ps->ndirs; i++)
		if (ps->dirs[i] == d) {
			ps->dirs[i] = ps->dirs[--ps->ndirs];
			break;
		}
	close(d->fd);
	free(d);
}

/* The directory open at `fd` (which it takes), as one already held if
 * it is the same directory, with a reference for the caller; NULL if out
 * of memory. */
static struct mstat_shmdir *
dir_get(struct mstat_procs *ps, int fd, bool own, uint64_t mnt_ns)
{
	struct mstat_shmdir *d;
	struct stat st;

	if (fstat(fd, &st) < 0) {
		close(fd);
		return NULL;
	}
	for (size_t i = 0; i < ps->ndirs; i++) {
		d = ps->dirs[i];
		if (d->dev == (uint64_t)st.st_dev && d->ino == (uint64_t)st.st_ino) {
			close(fd);
			if (own && !d->own) { /* another namespace's, ours too */
				d->own = true;
				d->mnt_ns = 0;
				d->where[0] = '\0';
			}
			d->refs++;
			return d;
		}
	}
	if (ps->ndirs == ps->capdirs) {
		size_t cap = ps->capdirs ? 2 * ps->capdirs : 16;
		void *p = realloc(ps->dirs, cap * sizeof(*ps->dirs));
		void *q = realloc(ps->listed, cap * sizeof(*ps->listed));
		if (p)
			ps->dirs = p;
		if (q)
			ps->listed = q;
		if (!p || !q) {
			close(fd);
			return NULL;
		}
		ps->capdirs = cap;
	}
	if (!(d = calloc(1, sizeof(*d)))) {
		close(fd);
		return NULL;
	}
	d->fd = fd;
	d->dev = (uint64_t)st.st_dev;
	d->ino = (uint64_t)st.st_ino;
	d->refs = 1;
	d->own = own;
	d->mnt_ns = own ? 0 : mnt_ns;
	if (!own)
		snprintf(d->where, sizeof(d->where), " in mnt:[%llu]",
			 (unsigned long long)mnt_ns);
	ps->dirs[ps->ndirs++] = d;
	return d;
}

/* Lists `d` in this sweep, once. */
static void
list(struct mstat_procs *ps, struct mstat_shmdir *d)
{
	if (d->listed == ps->sweep)
		return;
	d->listed = ps->sweep;
	ps->listed[ps->nlisted++] = d;
}

/* ---- the processes ---- */

/* Whether two places see the same files: one mount namespace, one root. */
static bool
same_view(const struct mstat_proc_place *a, const struct mstat_proc_place *b)
{
	return a->mnt_ns == b->mnt_ns && a->root_dev == b->root_dev &&
	       a->root_ino == b->root_ino;
}

static int
cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

int
mstat_procs_pids_parse(const char *s, pid_t *pids, size_t max, size_t *n)
{
	*n = 0;
	for (;;) {
		char *end;
		if (!isdigit((unsigned char)*s))
			return -1; /* no sign, no space, no empty item */
		errno = 0;
		long v = strtol(s, &end, 10);
		if (errno || v <= 0 || v > 0x7fffffff || *n == max ||
		    (*end && *end != ','))
			return -1;
		pids[(*n)++] = (pid_t)v;
		if (!*end)
			return 0;
		s = end + 1;
	}
}

int
mstat_procs_namespaces_parse(const char *s, struct mstat_namespaces *ns)
{
	memset(ns, 0, sizeof(*ns));
	if (strcmp(s, "all") == 0)
		return 0;
	if (strcmp(s, "own") == 0) {
		ns->own = true;
		return 0;
	}
	if (mstat_procs_pids_parse(s, ns->pids, MSTAT_NAMESPACES_PIDS_MAX,
				   &ns->npids) < 0)
		return -1;
	qsort(ns->pids, ns->npids, sizeof(pid_t), cmp_pid);
	return 0;
}

/* Each pid of `ns` a process that exists: 0, or -1 with why. */
static int
namespaces_exist(const struct mstat_namespaces *ns, char *why, size_t len)
{
	for (size_t i = 0; i < ns->npids; i++)
		if (kill(ns->pids[i], 0) < 0 && errno == ESRCH) {
			snprintf(why, len, "no process %d: its /dev/shm cannot "
				 "be read", (int)ns->pids[i]);
			return -1;
		}
	return 0;
}

int
mstat_procs_namespaces_env(struct mstat_namespaces *ns, char *why, size_t len)
{
	const char *e = getenv("MSTAT_NAMESPACES");
	char r[200];

	memset(ns, 0, sizeof(*ns));
	if (!e || !*e)
		return 0;
	if (mstat_procs_namespaces_parse(e, ns) < 0 ||
	    namespaces_exist(ns, r, sizeof(r)) < 0) {
		snprintf(why, len, "MSTAT_NAMESPACES=%.64s: %s", e,
			 mstat_procs_namespaces_parse(e, ns) < 0
				 ? MSTAT_NAMESPACES_WANT : r);
		return -1;
	}
	return 0;
}

int
mstat_procs_namespaces_option(const char *v, void *dst, char *why, size_t len)
{
	struct mstat_namespaces ns;

	if (mstat_procs_namespaces_parse(v, &ns) < 0)
		return -1; /* what the option wants */
	if (namespaces_exist(&ns, why, len) < 0)
		return -1;
	*(struct mstat_namespaces *)dst = ns;
	return 0;
}

int
mstat_procs_init(struct mstat_procs *ps, const struct mstat_namespaces *which)
{
	memset(ps, 0, sizeof(*ps));
	if (which)
		ps->which = *which;
	ps->euid = geteuid();
	ps->iter.fd = -1;
	(void)mstat_procfs_place(0, &ps->place);
	return 0;
}

static void
group_free(struct mstat_procs *ps, struct mstat_nsgroup *g)
{
	mstat_procs_shmdir_unref(ps, g->dir);
	free(g);
}

void
mstat_procs_fini(struct mstat_procs *ps)
{
	for (size_t i = 0; i < ps->ngroups; i++)
		group_free(ps, ps->groups[i]);
	mstat_procs_shmdir_unref(ps, ps->own);
	/* Held by nobody else by now: the targets are gone. */
	while (ps->ndirs)
		mstat_procs_shmdir_unref(ps, ps->dirs[0]);
	free(ps->groups);
	free(ps->dirs);
	free(ps->listed);
	free(ps->procs);
	free(ps->by_pid);
	free(ps->by_nspid);
	memset(ps, 0, sizeof(*ps));
	ps->iter.fd = -1;
}

/* Whether an error of /proc says the process is not ours to look at
 * (rather than gone). */
static bool
denied(int rc)
{
	return rc == -EACCES || rc == -EPERM;
}

/* A process not known before (or that replaced one under its pid). */
static void
read_new(struct mstat_proc *p, pid_t pid, uint64_t ino, uint64_t start)
{
	struct mstat_proc_status st = { 0 };

	memset(p, 0, sizeof(*p));
	p->pid = pid;
	p->d_ino = ino;
	p->start = start;
	if (mstat_procfs_status(pid, &st) == 0) {
		p->euid = st.euid;
		p->nspid = st.nspid;
	} else {
		p->euid = (uid_t)-1;
	}
	p->inspectable = mstat_procfs_place(pid, &p->place) == 0;
}

static size_t
slot_pid(const struct mstat_procs *ps, pid_t pid)
{
	size_t i = (size_t)mix((uint64_t)pid) & ps->mask;

	while (ps->by_pid[i] && ps->procs[ps->by_pid[i] - 1].pid != pid)
		i = (i + 1) & ps->mask;
	return i;
}

struct mstat_proc *
mstat_procs_find(struct mstat_procs *ps, pid_t pid)
{
	if (!ps->by_pid)
		return NULL;
	uint32_t k = ps->by_pid[slot_pid(ps, pid)];
	return k ? &ps->procs[k - 1] : NULL;
}

struct mstat_proc *
mstat_procs_find_ns(struct mstat_procs *ps, uint64_t pid_ns, pid_t nspid)
{
	if (ps->place.pid_ns && pid_ns == ps->place.pid_ns) {
		struct mstat_proc *p = mstat_procs_find(ps, nspid);
		return p && p->inspectable ? p : NULL;
	}
	if (!ps->by_nspid || !pid_ns)
		return NULL;
	for (size_t i = (size_t)mix(pid_ns ^ mix((uint64_t)nspid)) & ps->mask;
	     ps->by_nspid[i]; i = (i + 1) & ps->mask) {
		struct mstat_proc *p = &ps->procs[ps->by_nspid[i] - 1];
		if (p->place.pid_ns == pid_ns && p->nspid == nspid)
			return p;
	}
	return NULL;
}

/* Room for n processes and their indexes: 0 or -ENOMEM. */
static int
reserve(struct mstat_procs *ps, size_t n)
{
	if (n <= ps->cap)
		return 0;
	size_t cap = ps->cap ? 2 * ps->cap : 256;
	while (cap < n)
		cap *= 2;
	void *p = realloc(ps->procs, cap * sizeof(*ps->procs));
	if (!p)
		return -ENOMEM;
	ps->procs = p;
	ps->cap = cap;
	return 0;
}

/* Both indexes, from ps->procs. */
static int
reindex(struct mstat_procs *ps)
{
	size_t slots = 64;

	while (slots < 2 * ps->n)
		slots *= 2;
	if (slots - 1 != ps->mask || !ps->by_pid) {
		uint32_t *a = calloc(slots, sizeof(*a)), *b = calloc(slots, sizeof(*b));
		if (!a || !b) {
			free(a);
			free(b);
			return -ENOMEM;
		}
		free(ps->by_pid);
		free(ps->by_nspid);
		ps->by_pid = a;
		ps->by_nspid = b;
		ps->mask = slots - 1;
	} else {
		memset(ps->by_pid, 0, slots * sizeof(*ps->by_pid));
		memset(ps->by_nspid, 0, slots * sizeof(*ps->by_nspid));
	}
	for (size_t k = 0; k < ps->n; k++) {
		const struct mstat_proc *p = &ps->procs[k];
		ps->by_pid[slot_pid(ps, p->pid)] = (uint32_t)k + 1;
		if (!p->inspectable || p->place.pid_ns == ps->place.pid_ns)
			continue;
		size_t i = (size_t)mix(p->place.pid_ns ^ mix((uint64_t)p->nspid)) &
			   ps->mask;
		while (ps->by_nspid[i])
			i = (i + 1) & ps->mask;
		ps->by_nspid[i] = (uint32_t)k + 1;
	}
	return 0;
}

/* A process of /proc, seen this sweep: known, or read as new. */
static void
see(struct mstat_procs *ps, const struct mstat_proc_entry *e, size_t known)
{
	uint64_t start;
	/* Only those known before the walk are in the index. */
	struct mstat_proc *p = NULL;

	if (ps->by_pid) {
		uint32_t k = ps->by_pid[slot_pid(ps, e->pid)];
		p = k && k - 1 < known ? &ps->procs[k - 1] : NULL;
	}
	if (p && p->d_ino == e->ino) {
		p->seen = ps->sweep;
		return;
	}
	/* New, or its /proc entry was made again: the same process if it
	 * started at the same time. */
	if (mstat_procfs_start_time(e->pid, &start) < 0)
		return; /* gone already */
	if (p && p->start == start) {
		p->d_ino = e->ino;
		p->seen = ps->sweep;
		return;
	}
	if (!p) {
		if (reserve(ps, ps->n + 1) < 0)
			return;
		p = &ps->procs[ps->n++];
	}
	read_new(p, e->pid, e->ino, start);
	p->seen = ps->sweep;
}

/* Every process of /proc into ps->procs; those gone out of it. */
static void
walk(struct mstat_procs *ps)
{
	struct mstat_proc_entry batch[256];
	size_t known = ps->n;
	long got;

	if (mstat_procfs_iter_open(&ps->iter) < 0)
		return;
	while ((got = mstat_procfs_iter_next(&ps->iter, batch,
					     sizeof(batch) / sizeof(batch[0]))) > 0)
		for (long i = 0; i < got; i++)
			see(ps, &batch[i], known);
	mstat_procfs_iter_close(&ps->iter);
	size_t kept = 0;
	for (size_t k = 0; k < ps->n; k++)
		if (ps->procs[k].seen == ps->sweep)
			ps->procs[kept++] = ps->procs[k];
	ps->n = kept;
}

/* A slice of the known processes: moved to another mount namespace or
 * root since they were read? */
static void
recheck(struct mstat_procs *ps)
{
	size_t m = ps->n / 16 > RECHECK_MIN ? ps->n / 16 : RECHECK_MIN;

	for (size_t k = 0; k < m && k < ps->n; k++) {
		struct mstat_proc *p = &ps->procs[(ps->recheck + k) % ps->n];
		if (p->inspectable)
			p->inspectable = mstat_procfs_place(p->pid, &p->place) == 0;
	}
	if (ps->n)
		ps->recheck = (ps->recheck + m) % ps->n;
}

/* ---- the groups ---- */

static struct mstat_nsgroup *
group_of(struct mstat_procs *ps, const struct mstat_proc *p)
{
	const struct mstat_proc_place *pl = &p->place;

	/* Few: hundreds, on a host of containers; found by a linear
	 * search from the last one found, which processes of one
	 * container, mostly next to each other in pid order, hit. */
	for (size_t j = 0; j < ps->ngroups; j++) {
		size_t i = (ps->last_group + j) % ps->ngroups;
		struct mstat_nsgroup *g = ps->groups[i];
		if (g->mnt_ns == pl->mnt_ns && g->root_dev == pl->root_dev &&
		    g->root_ino == pl->root_ino) {
			ps->last_group = i;
			return g;
		}
	}
	if (ps->ngroups == ps->capgroups) {
		size_t cap = ps->capgroups ? 2 * ps->capgroups : 16;
		void *q = realloc(ps->groups, cap * sizeof(*ps->groups));
		if (!q)
			return NULL;
		ps->groups = q;
		ps->capgroups = cap;
	}
	struct mstat_nsgroup *g = calloc(1, sizeof(*g));
	if (!g)
		return NULL;
	g->mnt_ns = pl->mnt_ns;
	g->root_dev = pl->root_dev;
	g->root_ino = pl->root_ino;
	g->own = same_view(pl, &ps->place);
	ps->groups[ps->ngroups++] = g;
	return g;
}

static void
group(struct mstat_procs *ps)
{
	for (size_t k = 0; k < ps->n; k++) {
		struct mstat_proc *p = &ps->procs[k];
		struct mstat_nsgroup *g = p->inspectable ? group_of(ps, p) : NULL;
		p->group = g;
		if (!g)
			continue;
		if (g->seen != ps->sweep) {
			g->seen = ps->sweep;
			g->first = p->pid;
			g->via_lives = false;
			g->wanted = !ps->which.own && !ps->which.npids;
		}
		g->via_lives |= p->pid == g->via;
		if (ps->which.npids &&
		    bsearch(&p->pid, ps->which.pids, ps->which.npids,
			    sizeof(pid_t), cmp_pid))
			g->wanted = true;
	}
	size_t kept = 0;
	for (size_t i = 0; i < ps->ngroups; i++) {
		struct mstat_nsgroup *g = ps->groups[i];
		if (g->seen != ps->sweep) {
			group_free(ps, g);
			continue;
		}
		/* The process it is opened through stays, while it lives. */
		if (!g->via_lives) {
			g->via = g->first;
			g->mount_id = 0;
		}
		ps->groups[kept++] = g;
	}
	ps->ngroups = kept;
}

/* The group's /dev/shm, opened again through its process: a container
 * may have mounted another over it. */
static void
open_group(struct mstat_procs *ps, struct mstat_nsgroup *g)
{
	struct mstat_shmdir *d = NULL;
	int root = mstat_procfs_root_open(g->via);
	int fd = root < 0 ? root : mstat_beneath_shm_dir(root);

	if (root >= 0)
		close(root);
	if (root == -ENOENT || root == -ESRCH) {
		/* Gone, or a zombie: another process of it, next sweep. */
		struct mstat_proc *p = mstat_procs_find(ps, g->via);
		if (p)
			p->inspectable = false;
	}
	g->err = fd < 0 ? fd : 0;
	if (fd >= 0)
		d = dir_get(ps, fd, false, g->mnt_ns);
	/* After the new one is held: the same directory stays open. */
	mstat_procs_shmdir_unref(ps, g->dir);
	g->dir = d;
	if (d)
		list(ps, d);
}

/* This process's /dev/shm, by its path, as always. */
static void
open_own(struct mstat_procs *ps)
{
	struct mstat_shmdir *d = NULL;
	int fd = open(MSTAT_SHM_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd >= 0)
		d = dir_get(ps, fd, true, ps->place.mnt_ns);
	mstat_procs_shmdir_unref(ps, ps->own);
	ps->own = d;
	if (d)
		list(ps, d);
}

/* Whether an error opening a group's /dev/shm means it could not be read
 * (not: the process went, or there is none). */
static bool
unreadable(int rc)
{
	return denied(rc) || rc == -ENOSYS || rc == -ELOOP || rc == -ENOTDIR;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* Whether the namespace of a process that could not be looked at is one
 * asked for: in every namespace, or among those of some pids, its. */
static bool
asked(const struct mstat_procs *ps, const struct mstat_proc *p)
{
	if (ps->which.own)
		return false;
	return !ps->which.npids ||
	       bsearch(&p->pid, ps->which.pids, ps->which.npids, sizeof(pid_t),
		       cmp_pid);
}

/* Namespaces not read: groups asked for whose /dev/shm could not be
 * opened, and the namespaces of processes asked for that could not be
 * looked at, told apart by their first mount, those of groups read (and
 * this process's) left out. */
static void
count_unreadable(struct mstat_procs *ps)
{
	size_t hidden = 0;

	ps->unreadable = 0;
	ps->unreadable_err = 0;
	for (size_t i = 0; i < ps->ngroups; i++) {
		const struct mstat_nsgroup *g = ps->groups[i];
		if (!g->own && g->wanted && unreadable(g->err)) {
			ps->unreadable++;
			if (!ps->unreadable_err)
				ps->unreadable_err = g->err;
		}
	}
	for (size_t k = 0; k < ps->n; k++)
		hidden += !ps->procs[k].inspectable && ps->procs[k].place.mount_id &&
			  asked(ps, &ps->procs[k]);
	if (!hidden)
		return;
	uint64_t *ids = malloc((hidden + ps->ngroups + 1) * sizeof(*ids));
	if (!ids)
		return;
	size_t m = 0, n = 0;
	for (size_t k = 0; k < ps->n; k++)
		if (!ps->procs[k].inspectable && ps->procs[k].place.mount_id &&
		    asked(ps, &ps->procs[k]))
			ids[m++] = ps->procs[k].place.mount_id;
	uint64_t *known = ids + m;
	if (mstat_procfs_mount_id(0, &known[n]) == 0)
		n++;
	for (size_t i = 0; i < ps->ngroups; i++) {
		struct mstat_nsgroup *g = ps->groups[i];
		if (!g->mount_id)
			(void)mstat_procfs_mount_id(g->via, &g->mount_id);
		if (g->mount_id)
			known[n++] = g->mount_id;
	}
	qsort(ids, m, sizeof(*ids), cmp_u64);
	qsort(known, n, sizeof(*known), cmp_u64);
	for (size_t k = 0; k < m; k++)
		if ((k == 0 || ids[k] != ids[k - 1]) &&
		    !bsearch(&ids[k], known, n, sizeof(*known), cmp_u64)) {
			ps->unreadable++;
			if (!ps->unreadable_err)
				ps->unreadable_err = -EACCES;
		}
	free(ids);
}

void
mstat_procs_sweep(struct mstat_procs *ps)
{
	ps->sweep++;
	ps->nlisted = 0;
	walk(ps);
	recheck(ps);
	(void)reindex(ps);
	group(ps);
	/* Ours first, whatever /proc says: its segments keep the names and
	 * messages they have always had. */
	open_own(ps);
	for (size_t i = 0; i < ps->ngroups; i++)
		if (!ps->groups[i]->own && ps->groups[i]->wanted)
			open_group(ps, ps->groups[i]);
		else if (!ps->groups[i]->own && ps->groups[i]->dir) {
			/* No longer asked for (or never). */
			mstat_procs_shmdir_unref(ps, ps->groups[i]->dir);
			ps->groups[i]->dir = NULL;
			ps->groups[i]->err = 0;
		}
	count_unreadable(ps);
}

struct mstat_shmdir *
mstat_procs_dir_of(const struct mstat_procs *ps, const struct mstat_proc *p)
{
	if (!p || !p->group)
		return NULL;
	return p->group->own ? ps->own : p->group->dir;
}

int
mstat_procs_dir_is(const struct mstat_procs *ps, pid_t pid,
		   const struct mstat_shmdir *dir)
{
	struct mstat_proc_place pl;
	struct stat st;
	int rc, fd, root;

	if ((rc = mstat_procfs_place(pid, &pl)) < 0)
		return rc;
	if (same_view(&pl, &ps->place)) {
		if (stat(MSTAT_SHM_DIR, &st) < 0)
			return -errno;
	} else {
		if ((root = mstat_procfs_root_open(pid)) < 0)
			return root;
		fd = mstat_beneath_shm_dir(root);
		close(root);
		if (fd < 0)
			return fd;
		rc = fstat(fd, &st) < 0 ? -errno : 0;
		close(fd);
		if (rc < 0)
			return rc;
	}
	return (uint64_t)st.st_dev == dir->dev && (uint64_t)st.st_ino == dir->ino;
}

const char *
mstat_procs_unreadable_why(const struct mstat_procs *ps)
{
	switch (ps->unreadable_err) {
	case 0: return "";
	case -ENOSYS: return "this kernel has no openat2 (Linux 5.6)";
	case -ELOOP:
	case -ENOTDIR: return "its /dev/shm is a symbolic link";
	default: return "permission denied (reading them needs CAP_SYS_PTRACE, "
			"and CAP_DAC_OVERRIDE for other users' segments)";
	}
}
