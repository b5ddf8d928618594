/* SPDX-License-Identifier: MIT */
/*
 * discover.c - finding segments in /dev/shm, attaching, refusing, and
 * removing the segments of processes that are gone.  See discover.h.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shm/beneath.h"
#include "shm/clock.h"
#include "core/index.h"
#include "shm/layout.h"
#include "shm/name.h"
#include "shm/owner.h"
#include "shm/procfs.h"
#include "shm/reader.h"
#include "core/sites.h"
#include "core/discover.h"
#include "core/tsan.h"

/* A refusal reported once, so that it is said once per segment. */
struct mstat_discover_refusal {
	char name[64];
	uint64_t ino;
	struct mstat_shmdir *dir; /* held */
	int rc;
	unsigned tries;           /* scans that refused it for `rc` */
	bool in_scan;
};

/* With -p: a process asked for, where its segments are made, as of this
 * scan. */
struct mstat_discover_want {
	const struct mstat_shmdir *dir; /* NULL: this process's /dev/shm */
	pid_t nspid;                    /* its pid in its own namespace */
	uint64_t start;                 /* if `running` */
	bool running;
};

/* A directory's lookups, during a scan. */
struct scan {
	struct mstat_index known, refusals;
	size_t nknown, nrefusals;
};

/* One line to whoever shows notes; they escape it (text.h): a note names
 * files anyone can plant in /dev/shm and quotes what segments say. */
__attribute__((format(printf, 2, 3))) static void
note(struct mstat_discover *d, const char *fmt, ...)
{
	char line[256];
	va_list ap;

	if (!d->note)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	d->note(d->note_arg, line);
}

static int
cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

int
mstat_discover_init(struct mstat_discover *d, const pid_t *pids, size_t npids,
		    const struct mstat_namespaces *which, unsigned wait_budget_us,
		    void (*fn)(void *arg, const char *line), void *arg)
{
	memset(d, 0, sizeof(*d));
	d->wait_budget_us = wait_budget_us;
	d->note = fn;
	d->note_arg = arg;
	if (npids) {
		d->pids = malloc(npids * sizeof(pid_t));
		d->want = malloc(npids * sizeof(*d->want));
		if (!d->pids || !d->want) {
			free(d->pids);
			free(d->want);
			return -ENOMEM;
		}
		memcpy(d->pids, pids, npids * sizeof(pid_t));
		qsort(d->pids, npids, sizeof(pid_t), cmp_pid);
		d->npids = npids;
	}
	(void)mstat_procfs_pid_ns(&d->pid_ns); /* 0 if unknown: pids mean nothing */
	d->boot_ns = mstat_procfs_boot_ns();
	return mstat_procs_init(&d->procs, which);
}

static void
refusal_free(struct mstat_discover *d, struct mstat_discover_refusal *f)
{
	mstat_procs_shmdir_unref(&d->procs, f->dir);
	free(f);
}

void
mstat_discover_fini(struct mstat_discover *d)
{
	for (size_t i = 0; i < d->nrefused; i++)
		refusal_free(d, d->refused[i]);
	free(d->refused);
	free(d->kept.v);
	free(d->pids);
	free(d->want);
	free(d->scratch);
	mstat_procs_fini(&d->procs);
	memset(d, 0, sizeof(*d));
}

static int
cmp_want(const void *a, const void *b)
{
	return cmp_pid(&((const struct mstat_discover_want *)a)->nspid,
		       &((const struct mstat_discover_want *)b)->nspid);
}

/* With -p: where each process asked for makes its segments, and under
 * which pid, as this scan's sweep found them.  A process that is not
 * running (any more), or could not be looked at, is looked for in this
 * process's /dev/shm under its pid, as it always was. */
static void
want_scan(struct mstat_discover *d)
{
	for (size_t i = 0; i < d->npids; i++) {
		struct mstat_discover_want *w = &d->want[i];
		struct mstat_proc *p = mstat_procs_find(&d->procs, d->pids[i]);
		struct mstat_shmdir *dir = p && p->inspectable
			? mstat_procs_dir_of(&d->procs, p) : NULL;

		w->dir = dir && !dir->own ? dir : NULL;
		w->nspid = dir ? p->nspid : d->pids[i];
		w->running = p != NULL;
		w->start = p ? p->start : 0;
	}
	qsort(d->want, d->npids, sizeof(*d->want), cmp_want);
}

/* With -p, whether the name `name` in `dir` is of a process asked for:
 * while it runs, only its own segment, not one an earlier process with
 * the same pid left behind; once it is gone, whatever it left.  Cheap,
 * for every name on every tick. */
static bool
wanted(const struct mstat_discover *d, const struct mstat_shmdir *dir,
       const char *name)
{
	pid_t pid;
	uint64_t start;

	if (d->npids == 0)
		return true;
	if (mstat_shm_parse_name(name, &pid, &start) < 0)
		return false;
	/* The first with this pid (sorted by it), then the others. */
	size_t lo = 0, hi = d->npids;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (d->want[mid].nspid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i < d->npids && d->want[i].nspid == pid; i++) {
		const struct mstat_discover_want *w = &d->want[i];
		if ((w->dir ? w->dir == dir : dir->own) &&
		    (!w->running || w->start == start))
			return true;
	}
	return false;
}

/* Reports a refusal once per segment (and again if the reason changes).
 * `f` is what was refused under this name and inode before, or NULL. */
static void
refuse(struct mstat_discover *d, struct mstat_discover_refusal *f,
       struct mstat_shmdir *dir, const char *name, uint64_t ino, int rc,
       const char *why)
{
	if (f && f->rc == rc) {
		f->tries++;
		f->in_scan = true;
		return;
	}
	if (!f) {
		if (d->nrefused == d->caprefused) {
			size_t cap = d->caprefused ? 2 * d->caprefused : 8;
			void *p = realloc(d->refused, cap * sizeof(*d->refused));
			if (!p)
				return;
			d->refused = p;
			d->caprefused = cap;
		}
		if (!(f = calloc(1, sizeof(*f))))
			return;
		d->refused[d->nrefused++] = f;
		memcpy(f->name, name, strlen(name) + 1); /* shorter: scan */
		f->ino = ino;
		f->dir = dir;
		mstat_procs_shmdir_ref(dir);
	}
	f->rc = rc;
	f->tries = 1;
	f->in_scan = true;
	/* A file empty or without its magic yet (what an older library's
	 * creator makes before it writes) is not worth a line: it is
	 * looked at again every scan, never removed (nothing shows the
	 * library made it: mstat-top --gc says what it is); nor one whose
	 * process is gone, which is removed (below) or said (`why` set). */
	if (rc != -EAGAIN && why) {
		d->refused_count++;
		note(d, "skipped %s", why);
	}
}

/* What checking a segment against the process it claims found. */
struct claim {
	pid_t pid;                  /* the process, in our pid namespace; 0
				     * none */
	char why[200];              /* if refused */
};

/*
 * Whether the segment a reader has open, `st` its file, is the process
 * its header claims (docs/design.md, "Namespaces"): a process of this
 * sweep with that pid in that pid namespace, started then, whose
 * /dev/shm is `dir`, running as the file's owner, whose uid in its own
 * user namespace is the header's.  0 it is; -ESRCH no such process here
 * (or not one to look at); -EPERM it is not (why in c->why).
 */
static int
check_claim(struct mstat_discover *d, const struct mstat_shmdir *dir,
	    const struct mstat_target_info *in, const struct stat *st,
	    struct claim *c)
{
	struct mstat_proc_status ps;
	uint64_t start;
	uid_t inside;
	char state;
	int rc;

	const struct mstat_proc *p =
		mstat_procs_find_ns(&d->procs, in->pid_ns, in->pid);

	/* One of our pid namespace that started after the sweep: its pid
	 * is its own. */
	c->pid = p ? p->pid
		   : d->pid_ns && in->pid_ns == d->pid_ns ? in->pid : 0;
	/* Asked again now, not as the sweep found it: that process, still
	 * there, not a zombie. */
	if (!c->pid || mstat_procfs_stat(c->pid, &start, &state) < 0 ||
	    start != in->start_time || state == 'Z' || state == 'X' ||
	    mstat_procfs_status(c->pid, &ps) < 0) {
		c->pid = 0;
		return -ESRCH;
	}
	rc = mstat_procs_dir_is(&d->procs, c->pid, dir);
	if (rc < 0) {
		c->pid = 0;
		return -ESRCH; /* gone meanwhile, or not ours to look at */
	}
	if (rc == 0) {
		snprintf(c->why, sizeof(c->why), "claims pid %d, whose /dev/shm "
			 "is another directory", (int)c->pid);
		return -EPERM;
	}
	if (st->st_uid != ps.euid) {
		snprintf(c->why, sizeof(c->why), "is owned by uid %u, but pid %d "
			 "runs as uid %u", (unsigned)st->st_uid, (int)c->pid,
			 (unsigned)ps.euid);
		return -EPERM;
	}
	/* The header's uid is the process's own, in its user namespace. */
	if (mstat_procfs_uid_inside(c->pid, ps.euid, &inside) < 0)
		inside = ps.euid;
	if (in->uid != inside) {
		snprintf(c->why, sizeof(c->why), "says uid %u, but pid %d runs "
			 "as uid %u there", (unsigned)in->uid, (int)c->pid,
			 (unsigned)inside);
		return -EPERM;
	}
	return 0;
}

/* The target for a segment checked; NULL if out of memory (the reader is
 * then closed). */
static struct mstat_core_target *
target_new(struct mstat_discover *d, struct mstat_reader *r,
	   struct mstat_shmdir *dir, const char *name, uint64_t ino,
	   pid_t pid)
{
	const struct mstat_target_info *in = mstat_reader_info(r);
	struct mstat_core_target *t = calloc(1, sizeof(*t));

	if (!t) {
		mstat_reader_close(r);
		return NULL;
	}
	t->reader = r;
	t->dir = dir;
	mstat_procs_shmdir_ref(dir);
	t->ino = ino;
	t->start_time = in->start_time;
	t->start_ns = mstat_procfs_start_ns(d->boot_ns, in->start_time);
	t->nspid = in->pid;
	t->verified = pid != 0;
	t->pid = pid ? pid : in->pid;
	t->pid_ours = pid || (d->pid_ns && in->pid_ns == d->pid_ns);
	t->writer_mode = in->writer_mode;
	t->layout_major = in->version_major;
	t->layout_minor = in->version_minor;
	t->attached_ns = in->attached_ns;
	memcpy(t->shm_name, name, strlen(name) + 1); /* shorter: scan */
	snprintf(t->name, sizeof(t->name), "%s", in->name);
	snprintf(t->key, sizeof(t->key), "%d.%llu@%llu", (int)in->pid,
		 (unsigned long long)t->start_time,
		 (unsigned long long)in->pid_ns);
	snprintf(t->image, sizeof(t->image), "%.40s:%llu", name,
		 (unsigned long long)t->ino);
	/* Its names and where it runs, as /proc has them: read once, as the
	 * image that made this segment runs (an exec() makes a new segment,
	 * and a new target). */
	uint64_t now;
	if (pid) {
		char cg[4096];
		mstat_procfs_identity(pid, &t->id);
		if (mstat_procfs_cgroup(pid, cg, sizeof(cg)) >= 0)
			mstat_where_parse(cg, &t->where);
		/* Its memory cgroup's OOM kills, while it lives. */
		mstat_killed_oom_watch_start(&t->oom, pid);
	} else if (t->pid_ours) {
		mstat_procfs_identity(t->pid, &t->id);
		/* The same, while the pid is still this process. */
		if (mstat_procfs_start_time(t->pid, &now) == 0 &&
		    now == t->start_time)
			mstat_killed_oom_watch_start(&t->oom, t->pid);
	}
	t->in_scan = true;
	mstat_reader_set_wait_budget(r, d->wait_budget_us);
	return t;
}

/*
 * Removes the segment `name` of `dir`, open at `fd`, whose process this
 * reader could not find and whose owner lock is free, by the rules of
 * every remover (owner.h): at once, or, a killed process's, once its
 * grace is over; until then it is kept, and remembered as kept (read no
 * more, removed by mstat_killed_kept_tick()).  Says what it did, of `what`
 * (the segment, and why it is not shown).  Returns enum mstat_reap, or
 * -errno.
 */
static int
reap_gone(struct mstat_discover *d, struct mstat_shmdir *dir,
	  const char *name, int fd, const char *what)
{
	struct mstat_reaped r;
	int rc = mstat_owner_reap_file(dir->fd, name, fd, d->procs.euid, NULL,
				       d->grace.seconds, &r);
	uint64_t now = mstat_clock_wall_ns();

	if (rc == MSTAT_REAP_REMOVED) {
		note(d, "removed %s", what);
	} else if (rc == MSTAT_REAP_KILLED) {
		/* Found killed ahead of the clock (set back since): 0 s. */
		note(d, "kept %s, killed %llu s ago (" MSTAT_ENV_KILLED_GRACE
		     " is %llu s)", what, (unsigned long long)
		     (now > r.killed_ns ? (now - r.killed_ns) / 1000000000u : 0),
		     (unsigned long long)d->grace.seconds);
		mstat_killed_kept_add(&d->kept, dir->fd, name, &r);
	}
	return rc;
}

/* Attaches the segment `name` of `dir`; false if the process is out of
 * file descriptors (nothing recorded: it is tried again next scan). */
static bool
attach(struct mstat_discover *d, struct cds_list_head *targets,
       struct mstat_discover_refusal *f, struct mstat_shmdir *dir,
       const char *name, uint64_t ino)
{
	struct mstat_reader *r;
	struct mstat_core_target *t;
	struct claim c = { 0, "" };
	struct stat st;
	char label[64], err[340], why[200];
	pid_t pid;
	uint64_t start;
	int fd, rc;

	snprintf(label, sizeof(label), "%s%s", name, dir->where);
	if (mstat_shm_parse_name(name, &pid, &start) < 0) {
		snprintf(err, sizeof(err), "%s: not an mstat segment name", label);
		refuse(d, f, dir, name, ino, -EINVAL, err);
		return true;
	}
	fd = mstat_beneath_open(dir->fd, dir->dev, name, why, sizeof(why));
	if (fd == -EMFILE || fd == -ENFILE)
		return false;
	if (fd < 0) {
		snprintf(err, sizeof(err), "%s: %s%s", label, why,
			 fd == -EACCES ? " (another user's: reading it needs "
					 "CAP_DAC_OVERRIDE)" : "");
		refuse(d, f, dir, name, ino, fd, err);
		return true;
	}
	rc = mstat_reader_open_claimed(&r, fd, label, err, sizeof(err));
	if (rc < 0) {
		refuse(d, f, dir, name, ino, rc, err);
		return true;
	}
	const struct mstat_target_info *in = mstat_reader_info(r);
	if (fstat(mstat_reader_fd(r), &st) < 0 || in->pid != pid ||
	    in->start_time != start) {
		snprintf(err, sizeof(err), "%s: says it belongs to pid %d "
			 "started at %llu", label, (int)in->pid,
			 (unsigned long long)in->start_time);
		mstat_reader_close(r);
		refuse(d, f, dir, name, ino, -EPROTO, err);
		return true;
	}
	rc = check_claim(d, dir, in, &st, &c);
	if (rc == -ESRCH && dir->own && st.st_uid == d->procs.euid &&
	    in->uid == d->procs.euid) {
		/* Ours, in our own /dev/shm, of a process not found (gone,
		 * or in a pid namespace we cannot see): read as it always
		 * was, under the pid its header gives. */
		c.pid = 0;
		rc = 0;
	}
	if (rc == -ESRCH && mstat_reader_alive(r) == 0) {
		/* Gone, and nothing here says whose it was: not shown.  Its
		 * lock says it is nobody's: removed if it is ours to remove,
		 * a killed process's once its grace is over, as anywhere: a
		 * reader of its own /dev/shm shows it (killed between two
		 * ticks of a host's reader, an OOM kill above all). */
		snprintf(err, sizeof(err), "%s: its process (pid %d of pid "
			 "namespace %llu) is gone", label, (int)in->pid,
			 (unsigned long long)in->pid_ns);
		rc = reap_gone(d, dir, name, mstat_reader_fd(r), err);
		mstat_reader_close(r);
		if (rc != MSTAT_REAP_REMOVED && rc != MSTAT_REAP_KILLED)
			refuse(d, f, dir, name, ino, -ESRCH, err);
		return true;
	}
	if (rc < 0) {
		if (rc == -ESRCH)
			snprintf(c.why, sizeof(c.why), "claims pid %d of pid "
				 "namespace %llu, which is no process this "
				 "reader can see", (int)in->pid,
				 (unsigned long long)in->pid_ns);
		snprintf(err, sizeof(err), "%s: %s", label, c.why);
		mstat_reader_close(r);
		refuse(d, f, dir, name, ino, rc, err);
		return true;
	}
	if (!(t = target_new(d, r, dir, name, ino, c.pid)))
		return true;
	MSTAT_PUBLISHING(t);
	cds_list_add_tail_rcu(&t->node, targets);
	return true;
}

static const char *
target_name(const void *item)
{
	return ((const struct mstat_core_target *)item)->shm_name;
}

static uint64_t
target_ino(const void *item)
{
	return ((const struct mstat_core_target *)item)->ino;
}

static const char *
refusal_name(const void *item)
{
	return ((const struct mstat_discover_refusal *)item)->name;
}

static uint64_t
refusal_ino(const void *item)
{
	return ((const struct mstat_discover_refusal *)item)->ino;
}

/* Whether a refusal is looked at again: a segment not made yet, and,
 * at the next scan, one whose process was not found (it may have
 * started after the sweep). */
static bool
retried(const struct mstat_discover_refusal *f)
{
	return f->rc == -EAGAIN || (f->rc == -ESRCH && f->tries < 2);
}

/* The names of directory `dir`, one getdents64 buffer at a time, to
 * fn(arg, name, ino); false if it could not be read. */
static bool
list_dir(struct mstat_discover *d, struct mstat_shmdir *dir,
	 void (*fn)(struct mstat_discover *, struct mstat_shmdir *, void *,
		    const char *, uint64_t),
	 void *arg)
{
	if (!d->scratch) {
		d->scratch_len = 32768;
		if (!(d->scratch = malloc(d->scratch_len)))
			return false;
	}
	if (lseek(dir->fd, 0, SEEK_SET) < 0)
		return false;
	for (;;) {
		ssize_t len = getdents64(dir->fd, d->scratch, d->scratch_len);
		if (len < 0)
			return false;
		if (len == 0)
			return true;
		for (ssize_t off = 0; off < len;) {
			const struct dirent64 *de =
				(const struct dirent64 *)((char *)d->scratch + off);
			off += de->d_reclen;
			/* A name longer than any segment's is not one (and
			 * would not fit the names kept). */
			if (strncmp(de->d_name, MSTAT_SHM_PREFIX,
				    strlen(MSTAT_SHM_PREFIX)) != 0 ||
			    strlen(de->d_name) >= MSTAT_SHM_NAME_MAX)
				continue;
			fn(d, dir, arg, de->d_name, (uint64_t)de->d_ino);
		}
	}
}

struct scan_arg {
	struct cds_list_head *targets;
	size_t no_fd;
	struct mstat_index kept;    /* the killed segments kept: not again */
};

static const char *
kept_name(const void *item)
{
	return ((const struct mstat_kept *)item)->name;
}

static uint64_t
kept_ino(const void *item)
{
	return ((const struct mstat_kept *)item)->ino;
}

/* The directory of the /dev/shm on device `dev`, as this sweep listed
 * it; -1 if none. */
static int
listed_dirfd(void *arg, uint64_t dev)
{
	struct mstat_procs *ps = &((struct mstat_discover *)arg)->procs;

	for (size_t i = 0; i < ps->nlisted; i++)
		if (ps->listed[i]->dev == dev)
			return ps->listed[i]->fd;
	return -1;
}

/* One name of a directory scanned. */
static void
scan_name(struct mstat_discover *d, struct mstat_shmdir *dir, void *arg,
	  const char *name, uint64_t ino)
{
	struct scan_arg *a = arg;
	struct scan *sc = dir->scan;
	struct mstat_core_target *t;

	if (!wanted(d, dir, name))
		return;
	/* A killed process's, kept: read already, not again. */
	struct mstat_kept *k = (struct mstat_kept *)
		mstat_index_find(&a->kept, name, ino);
	if (k && k->dev != dir->dev)
		k = NULL;
	if (k)
		k->seen = true;
	if ((t = (struct mstat_core_target *)mstat_index_find(&sc->known, name,
							       ino))) {
		t->in_scan = true;
		return;
	}
	if (k)
		return;
	struct mstat_discover_refusal *f = (struct mstat_discover_refusal *)
		mstat_index_find(&sc->refusals, name, ino);
	if (f && !retried(f)) {
		f->in_scan = true;
		return;
	}
	a->no_fd += !attach(d, a->targets, f, dir, name, ino);
}

/* Says how many namespaces could not be read, when that changes. */
static void
say_unreadable(struct mstat_discover *d)
{
	unsigned n = d->procs.unreadable;

	if (n == d->unreadable_said)
		return;
	d->unreadable_said = n;
	if (n)
		note(d, "%u namespace%s not read: %s", n, n == 1 ? "" : "s",
		     mstat_procs_unreadable_why(&d->procs));
	else
		note(d, "every namespace read");
}

/* Lookups by name and inode, one index per directory listed: one pass
 * over a directory is linear in its size, however many targets there
 * are.  False if an index could not be made. */
static bool
scans_index(struct mstat_discover *d, struct cds_list_head *targets,
	    struct scan *scans)
{
	struct mstat_procs *ps = &d->procs;
	struct mstat_core_target *t;
	bool ok = true;

	for (size_t i = 0; i < ps->nlisted; i++)
		ps->listed[i]->scan = &scans[i];
	cds_list_for_each_entry(t, targets, node) {
		t->in_scan = false;
		if (t->dir->listed == ps->sweep)
			((struct scan *)t->dir->scan)->nknown++;
	}
	for (size_t i = 0; i < d->nrefused; i++) {
		struct mstat_discover_refusal *f = d->refused[i];
		f->in_scan = false;
		if (f->dir->listed == ps->sweep)
			((struct scan *)f->dir->scan)->nrefusals++;
	}
	for (size_t i = 0; i < ps->nlisted; i++)
		if (mstat_index_init(&scans[i].known, scans[i].nknown,
				     target_name, target_ino) < 0 ||
		    mstat_index_init(&scans[i].refusals, scans[i].nrefusals,
				     refusal_name, refusal_ino) < 0)
			ok = false;
	if (!ok)
		return false;
	cds_list_for_each_entry(t, targets, node)
		if (t->dir->listed == ps->sweep)
			mstat_index_add(&((struct scan *)t->dir->scan)->known, t);
	for (size_t i = 0; i < d->nrefused; i++)
		if (d->refused[i]->dir->listed == ps->sweep)
			mstat_index_add(&((struct scan *)d->refused[i]->dir->scan)
						 ->refusals, d->refused[i]);
	return true;
}

/* A segment cut shorter than a header is removed once its owner is gone,
 * if what is left of it shows the library made it (its magic and
 * format): its lock says so whatever its size (docs/design.md, "Removing
 * dead segments"); and one whose process was not found, once its lock
 * says it has none.  Each through the directory it is in, opened as it
 * was found (beneath.h). */
static void
reap_refused(struct mstat_discover *d)
{
	for (size_t i = 0; i < d->nrefused; i++) {
		struct mstat_discover_refusal *f = d->refused[i];
		char why[200];
		int fd;

		if (!f->in_scan || (f->rc != -ENODATA && f->rc != -ESRCH))
			continue;
		fd = mstat_beneath_open(f->dir->fd, f->dir->dev, f->name, why,
					sizeof(why));
		if (fd < 0)
			continue;
		snprintf(why, sizeof(why), f->rc == -ENODATA
			 ? "%s%s: cut shorter than a header, and its owner "
			   "is gone"
			 : "%s%s: its process is gone", f->name, f->dir->where);
		int rc = reap_gone(d, f->dir, f->name, fd, why);
		if (rc == MSTAT_REAP_REMOVED || rc == MSTAT_REAP_KILLED)
			f->in_scan = false;
		close(fd);
	}
}

/* Forget refusals whose segment went away: a new one with the same
 * name is looked at afresh. */
static void
refusals_forget_gone(struct mstat_discover *d)
{
	size_t kept = 0;

	for (size_t i = 0; i < d->nrefused; i++) {
		if (d->refused[i]->in_scan)
			d->refused[kept++] = d->refused[i];
		else
			refusal_free(d, d->refused[i]);
	}
	d->nrefused = kept;
}

/* Says how many segments this scan could not read for want of a file
 * descriptor. */
static void
say_no_fd(struct mstat_discover *d, size_t no_fd)
{
	struct rlimit rl = { 0, 0 };

	if (!no_fd)
		return;
	d->no_fd_count += no_fd;
	getrlimit(RLIMIT_NOFILE, &rl);
	note(d, "%zu segments not read: out of file descriptors "
	     "(limit %llu; raise it with ulimit -n)", no_fd,
	     (unsigned long long)rl.rlim_cur);
}

void
mstat_discover_scan(struct mstat_discover *d, struct cds_list_head *targets)
{
	struct mstat_procs *ps = &d->procs;
	struct scan_arg a = { targets, 0, { 0 } };
	struct scan *scans;

	mstat_procs_sweep(ps);
	if (d->npids)
		want_scan(d);
	say_unreadable(d);
	if (mstat_index_init(&a.kept, d->kept.n, kept_name, kept_ino) < 0)
		return;
	for (size_t i = 0; i < d->kept.n; i++)
		mstat_index_add(&a.kept, &d->kept.v[i]);
	if (!(scans = calloc(ps->nlisted ? ps->nlisted : 1, sizeof(*scans)))) {
		mstat_index_fini(&a.kept);
		return;
	}
	if (scans_index(d, targets, scans)) {
		if (!ps->own)
			note(d, "%s: %s", MSTAT_SHM_DIR, strerror(errno));
		for (size_t i = 0; i < ps->nlisted; i++)
			if (!list_dir(d, ps->listed[i], scan_name, &a))
				note(d, "%s%s: %s", MSTAT_SHM_DIR,
				     ps->listed[i]->where, strerror(errno));
		reap_refused(d);
		mstat_killed_kept_tick(&d->kept, listed_dirfd, d, &d->grace, d->note,
				       d->note_arg);
		say_no_fd(d, a.no_fd);
		refusals_forget_gone(d);
	}
	for (size_t i = 0; i < ps->nlisted; i++) {
		mstat_index_fini(&scans[i].known);
		mstat_index_fini(&scans[i].refusals);
		ps->listed[i]->scan = NULL;
	}
	free(scans);
	mstat_index_fini(&a.kept);
}

static void
target_free(struct rcu_head *head)
{
	struct mstat_core_target *t =
		caa_container_of(head, struct mstat_core_target, rcu);

	mstat_reader_close(t->reader);
	/* Its last sample was reachable only through it. */
	free(t->sample);
	free(t->postmortem);
	mstat_sites_base_free(t->sites_base);
	mstat_sites_base_free(t->sites_last);
	free(t);
}

void
mstat_discover_detach(struct mstat_discover *d, struct mstat_core_target *t)
{
	cds_list_del_rcu(&t->node);
	/* Here, in the sampler's thread: the directories are its own. */
	mstat_procs_shmdir_unref(&d->procs, t->dir);
	t->dir = NULL;
	call_rcu(&t->rcu, target_free);
}

/* The state /proc gives the target's process, if its pid is ours to ask
 * about and still names that process; 0 if not. */
static char
proc_state(const struct mstat_core_target *t)
{
	uint64_t start;
	char state;

	if (!t->reader || !t->pid_ours ||
	    mstat_procfs_stat(t->pid, &start, &state) < 0 || start != t->start_time)
		return 0;
	return state;
}

bool
mstat_discover_execed(const struct mstat_discover *d,
		      const struct mstat_core_target *t)
{
	char state = proc_state(t);

	/* A zombie is a process that died, not waited for yet; one exiting
	 * is dying: its lock went with its descriptors, a moment before it
	 * becomes a zombie (an OOM kill found in that moment). */
	return state && state != 'Z' && state != 'X' &&
	       !mstat_procfs_exiting(t->pid);
}

bool
mstat_discover_stopped(const struct mstat_discover *d,
		       const struct mstat_core_target *t)
{
	return mstat_proc_state_stopped(proc_state(t));
}

uint64_t
mstat_discover_reap(struct mstat_discover *d, struct mstat_core_target *t,
		    bool grace)
{
	struct mstat_reaped r = { 0 };
	int rc;

	if (!t->in_scan || !t->reader)
		return 0; /* its name is gone already */
	/* Through the directory it was found in, by its name there (one
	 * component): nothing a container planted meanwhile leads
	 * elsewhere. */
	rc = mstat_owner_reap_fd(t->dir->fd, t->shm_name, mstat_reader_fd(t->reader),
				 grace ? d->grace.seconds : 0, &r);
	if (rc < 0)
		note(d, "%s%s: cannot remove: %s", t->shm_name, t->dir->where,
		     strerror(-rc));
	if (rc == MSTAT_REAP_KILLED)
		mstat_killed_kept_add(&d->kept, t->dir->fd, t->shm_name, &r);
	return rc >= 0 ? r.killed_ns : 0;
}

struct gc_arg {
	size_t removed;
};

/* What a file left was found to be (owner.h), as gc says it. */
static void
found_text(const struct mstat_reaped *r, char *buf, size_t len)
{
	switch (r->found) {
	case MSTAT_FOUND_NOT_FILE:
		snprintf(buf, len, "is not a regular file");
		break;
	case MSTAT_FOUND_OTHER_USER:
		snprintf(buf, len, "is owned by uid %u", (unsigned)r->uid);
		break;
	case MSTAT_FOUND_MODE:
		snprintf(buf, len, "has mode %04o, not 0600", (unsigned)r->mode);
		break;
	case MSTAT_FOUND_EMPTY:
		snprintf(buf, len, "is empty");
		break;
	case MSTAT_FOUND_NO_MAGIC:
		snprintf(buf, len, "is %llu bytes without a segment's magic",
			 (unsigned long long)r->size);
		break;
	case MSTAT_FOUND_FORMAT:
		if (r->version_major)
			snprintf(buf, len, "has format version %u, whose "
				 "liveness its owner lock does not tell",
				 (unsigned)r->version_major);
		else
			snprintf(buf, len, "is %llu bytes, cut before its "
				 "format version", (unsigned long long)r->size);
		break;
	case MSTAT_FOUND_MISNAMED:
		snprintf(buf, len, "its header says pid %d started at %llu",
			 (int)r->pid, (unsigned long long)r->start_time);
		break;
	case MSTAT_FOUND_MOUNT:
		snprintf(buf, len, "is a mount point: something is mounted "
			 "over it");
		break;
	case MSTAT_FOUND_REPLACED:
		snprintf(buf, len, "is another file than the one kept");
		break;
	case MSTAT_FOUND_SEGMENT:
		snprintf(buf, len, "is a segment");
		break;
	}
}

static void
gc_name(struct mstat_discover *d, struct mstat_shmdir *dir, void *arg,
	const char *name, uint64_t ino)
{
	static const char *const how[] = {
		[MSTAT_STATE_RUNNING] = "killed",
		[MSTAT_STATE_EXITING] = "exited",
		[MSTAT_STATE_EXECED] = "exec'd",
	};
	struct gc_arg *a = arg;
	struct mstat_reaped r;
	char why[200];
	pid_t pid;
	uint64_t start;
	int fd, rc;

	(void)ino;
	if (mstat_shm_parse_name(name, &pid, &start) < 0) {
		note(d, "left %s%s: not an mstat segment name", name, dir->where);
		return;
	}
	fd = mstat_beneath_open(dir->fd, dir->dev, name, why, sizeof(why));
	if (fd < 0) {
		/* Not a file to remove: not one the library made. */
		if (fd != -ENOENT)
			note(d, "left %s%s: %s", name, dir->where, why);
		return;
	}
	rc = mstat_owner_reap_file(dir->fd, name, fd, d->procs.euid, NULL,
				   d->grace.seconds, &r);
	close(fd);
	if (rc == MSTAT_REAP_KILLED) {
		note(d, "kept %s%s (pid %d, killed %llu s ago; "
		     MSTAT_ENV_KILLED_GRACE " is %llu s)", name, dir->where,
		     (int)pid, (unsigned long long)
		     ((mstat_clock_wall_ns() - r.killed_ns) / 1000000000u),
		     (unsigned long long)d->grace.seconds);
		mstat_killed_kept_add(&d->kept, dir->fd, name, &r);
	} else if (rc < 0) {
		note(d, "%s%s: cannot remove: %s", name, dir->where,
		     strerror(-rc));
	} else if (rc == MSTAT_REAP_LEFT) {
		found_text(&r, why, sizeof(why));
		note(d, "left %s%s: %s", name, dir->where, why);
	} else if (rc == MSTAT_REAP_REMOVED) {
		char format[40];
		snprintf(format, sizeof(format), "of format %u",
			 (unsigned)r.version_major);
		note(d, "removed %s%s (pid %d, %s)", name, dir->where, (int)pid,
		     r.cut ? "cut shorter than a header"
		     : !r.published ? format
		     : r.state < sizeof(how) / sizeof(how[0]) && how[r.state]
			     ? how[r.state]
			     : "gone");
		a->removed++;
	}
}

size_t
mstat_discover_gc(struct mstat_discover *d)
{
	struct gc_arg a = { 0 };

	mstat_procs_sweep(&d->procs);
	say_unreadable(d);
	if (!d->procs.own)
		note(d, "%s: %s", MSTAT_SHM_DIR, strerror(errno));
	for (size_t i = 0; i < d->procs.nlisted; i++)
		if (!list_dir(d, d->procs.listed[i], gc_name, &a))
			note(d, "%s%s: %s", MSTAT_SHM_DIR,
			     d->procs.listed[i]->where, strerror(errno));
	return a.removed + mstat_killed_kept_bound(&d->kept, &d->grace, d->note,
						   d->note_arg);
}

int
mstat_discover_open_pid(pid_t pid, const struct mstat_namespaces *which,
			struct mstat_reader **out, char *err, size_t errlen)
{
	struct mstat_discover d;
	struct mstat_core_target *t, *tmp;
	CDS_LIST_HEAD(list);

	*out = NULL;
	if (mstat_discover_init(&d, &pid, 1, which, MSTAT_WAIT_BUDGET_DEFAULT_US,
				NULL, NULL) < 0) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	mstat_discover_scan(&d, &list);
	/* Its live segment; failing that, the one it left. */
	for (int live = 1; live >= 0 && !*out; live--)
		cds_list_for_each_entry(t, &list, node)
			if (!*out && t->pid == pid && t->reader &&
			    (mstat_reader_alive(t->reader) == 1) == live) {
				*out = t->reader;
				t->reader = NULL;
			}
	/* Never published: freed at once. */
	cds_list_for_each_entry_safe(t, tmp, &list, node) {
		cds_list_del(&t->node);
		mstat_procs_shmdir_unref(&d.procs, t->dir);
		target_free(&t->rcu);
	}
	mstat_discover_fini(&d);
	return *out ? 0 : mstat_discover_why_none(pid, err, errlen);
}

int
mstat_discover_why_none(pid_t pid, char *err, size_t errlen)
{
	int rc = mstat_reader_why_none(pid, err, errlen);

	/* Root reads every user's segments. */
	if (rc == -EPERM && geteuid() == 0) {
		snprintf(err, errlen, "pid %d: no segment: it does not count "
			 "with libmstatshm (mstat-run starts a program that "
			 "does)", (int)pid);
		rc = -ENOENT;
	}
	return rc;
}
