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

#include "clock.h"
#include "index.h"
#include "layout.h"
#include "name.h"
#include "owner.h"
#include "procfs.h"
#include "reader.h"
#include "sites.h"
#include "discover.h"
#include "tsan.h"

/* A refusal reported once, so that it is said once per segment. */
struct mstat_discover_refusal {
	char name[64];
	uint64_t ino;
	int rc;
	bool in_scan;
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
		    unsigned wait_budget_us,
		    void (*fn)(void *arg, const char *line), void *arg)
{
	memset(d, 0, sizeof(*d));
	d->wait_budget_us = wait_budget_us;
	d->note = fn;
	d->note_arg = arg;
	if (npids) {
		d->pids = malloc(npids * sizeof(pid_t));
		if (!d->pids)
			return -ENOMEM;
		memcpy(d->pids, pids, npids * sizeof(pid_t));
		qsort(d->pids, npids, sizeof(pid_t), cmp_pid);
		d->npids = npids;
	}
	(void)mstat_pid_ns(&d->pid_ns); /* 0 if unknown: pids mean nothing */
	d->boot_ns = mstat_proc_boot_ns();
	return 0;
}

void
mstat_discover_fini(struct mstat_discover *d)
{
	for (size_t i = 0; i < d->nrefused; i++)
		free(d->refused[i]);
	free(d->refused);
	free(d->kept.v);
	free(d->pids);
	memset(d, 0, sizeof(*d));
}

/* With -p, whether a name in /dev/shm is of a pid asked for: cheap, for
 * every name on every tick (a binary search). */
static bool
pid_wanted(const struct mstat_discover *d, const char *name)
{
	pid_t pid;
	uint64_t start;

	if (d->npids == 0)
		return true;
	return mstat_shm_parse_name(name, &pid, &start) == 0 &&
	       bsearch(&pid, d->pids, d->npids, sizeof(pid_t), cmp_pid) != NULL;
}

/* With -p, before attaching: -p names processes.  While the pid runs, only
 * its own segment, not one an earlier process with the same pid left
 * behind; once it is gone, whatever it left. */
static bool
process_wanted(const struct mstat_discover *d, const char *name)
{
	pid_t pid;
	uint64_t start, now;

	if (d->npids == 0)
		return true;
	if (mstat_shm_parse_name(name, &pid, &start) < 0)
		return false;
	return mstat_proc_start_time(pid, &now) < 0 || now == start;
}

/* Reports a refusal once per segment (and again if the reason changes).
 * `f` is what was refused under this name and inode before, or NULL. */
static void
refuse(struct mstat_discover *d, struct mstat_discover_refusal *f, const char *name,
       uint64_t ino, int rc, const char *why)
{
	if (f && f->rc == rc) {
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
	}
	f->rc = rc;
	f->in_scan = true;
	/* A segment still being made is not worth a line: it is looked at
	 * again every scan, and removed if its creator dies (below). */
	if (rc != -EAGAIN) {
		d->refused_count++;
		note(d, "skipped %s", why);
	}
}

/* Attaches the segment `name`; false if the process is out of file
 * descriptors (nothing recorded: it is tried again next scan). */
static bool
attach(struct mstat_discover *d, struct cds_list_head *targets,
       struct mstat_discover_refusal *f, const char *name, uint64_t dir_ino)
{
	struct mstat_reader *r;
	struct mstat_core_target *t;
	struct stat st;
	char err[256];
	int rc = mstat_reader_open_name(&r, name, err, sizeof(err));

	if (rc == -EMFILE || rc == -ENFILE)
		return false;
	if (rc < 0) {
		refuse(d, f, name, dir_ino, rc, err);
		return true;
	}
	t = calloc(1, sizeof(*t));
	if (!t || fstat(mstat_reader_fd(r), &st) < 0) {
		free(t);
		mstat_reader_close(r);
		return true;
	}
	const struct mstat_target_info *in = mstat_reader_info(r);
	t->reader = r;
	t->ino = (uint64_t)st.st_ino;
	t->start_time = in->start_time;
	t->start_ns = mstat_proc_start_ns(d->boot_ns, in->start_time);
	t->pid = in->pid;
	t->writer_mode = in->writer_mode;
	t->layout_major = in->version_major;
	t->layout_minor = in->version_minor;
	memcpy(t->shm_name, name, strlen(name) + 1); /* shorter: scan */
	snprintf(t->name, sizeof(t->name), "%s", in->name);
	snprintf(t->key, sizeof(t->key), "%d.%llu@%llu", (int)t->pid,
		 (unsigned long long)t->start_time,
		 (unsigned long long)in->pid_ns);
	snprintf(t->image, sizeof(t->image), "%.40s:%llu", name,
		 (unsigned long long)t->ino);
	/* Its names as /proc has them: read once, as the image that made
	 * this segment runs (an exec() makes a new segment, and a new
	 * target). */
	uint64_t now;
	if (d->pid_ns && in->pid_ns == d->pid_ns) {
		mstat_proc_identity(t->pid, &t->id);
		/* Its cgroup, while the pid is still this process. */
		if (mstat_proc_start_time(t->pid, &now) == 0 &&
		    now == t->start_time)
			mstat_oom_watch_start(&t->oom, t->pid);
	}
	t->in_scan = true;
	mstat_reader_set_wait_budget(r, d->wait_budget_us);
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

void
mstat_discover_scan(struct mstat_discover *d, struct cds_list_head *targets)
{
	struct mstat_index known, refusals, kept;
	struct mstat_core_target *t;
	struct dirent *de;
	size_t n = 0, no_fd = 0;
	DIR *dir;

	/* Lookups by name and inode: one pass over the directory is linear
	 * in its size, however many targets there are. */
	cds_list_for_each_entry(t, targets, node) {
		t->in_scan = false;
		n++;
	}
	if (mstat_index_init(&known, n, target_name, target_ino) < 0 ||
	    mstat_index_init(&refusals, d->nrefused, refusal_name, refusal_ino) < 0 ||
	    mstat_index_init(&kept, d->kept.n, kept_name, kept_ino) < 0) {
		mstat_index_fini(&known);
		mstat_index_fini(&refusals);
		return;
	}
	for (size_t i = 0; i < d->kept.n; i++)
		mstat_index_add(&kept, &d->kept.v[i]);
	cds_list_for_each_entry(t, targets, node)
		mstat_index_add(&known, t);
	for (size_t i = 0; i < d->nrefused; i++) {
		d->refused[i]->in_scan = false;
		mstat_index_add(&refusals, d->refused[i]);
	}

	dir = opendir(MSTAT_SHM_DIR);
	if (!dir) {
		note(d, "%s: %s", MSTAT_SHM_DIR, strerror(errno));
		goto out;
	}
	while ((de = readdir(dir))) {
		const char *name = de->d_name;
		uint64_t ino = (uint64_t)de->d_ino;

		/* A name longer than any segment's is not one (and would not
		 * fit the names kept below). */
		if (strncmp(name, MSTAT_SHM_PREFIX, strlen(MSTAT_SHM_PREFIX)) != 0 ||
		    strlen(name) >= MSTAT_SHM_NAME_MAX)
			continue;
		if (!pid_wanted(d, name))
			continue;
		/* A killed process's, kept: read already, not again. */
		struct mstat_kept *k = (struct mstat_kept *)
			mstat_index_find(&kept, name, ino);
		if (k)
			k->seen = true;
		if ((t = (struct mstat_core_target *)mstat_index_find(&known, name, ino))) {
			t->in_scan = true;
			continue;
		}
		if (k)
			continue;
		if (!process_wanted(d, name))
			continue;
		struct mstat_discover_refusal *f = (struct mstat_discover_refusal *)
			mstat_index_find(&refusals, name, ino);
		if (f && f->rc != -EAGAIN) {
			f->in_scan = true;
			continue;
		}
		no_fd += !attach(d, targets, f, name, ino);
	}

	/* A segment not initialised yet whose creator is gone (it died while
	 * making it) is removed; one still being made is left alone.  So is
	 * one cut shorter than a header, once its owner is gone: its lock
	 * says so whatever its size (docs/design.md, "Removing dead
	 * segments"). */
	for (size_t i = 0; i < d->nrefused; i++) {
		struct mstat_discover_refusal *f = d->refused[i];
		if (f->in_scan && (f->rc == -EAGAIN || f->rc == -ENODATA) &&
		    mstat_reap_at(dirfd(dir), f->name, geteuid(), NULL,
				  d->grace.seconds, NULL) == MSTAT_REAP_REMOVED) {
			note(d, f->rc == -EAGAIN
				? "removed %s: its creator died making it"
				: "removed %s: cut shorter than a header, and "
				  "its owner is gone", f->name);
			f->in_scan = false;
		}
	}
	mstat_kept_tick(&d->kept, dirfd(dir), &d->grace, d->note, d->note_arg);
	closedir(dir);
	if (no_fd) {
		struct rlimit rl = { 0, 0 };
		d->no_fd_count += no_fd;
		getrlimit(RLIMIT_NOFILE, &rl);
		note(d, "%zu segments not read: out of file descriptors "
		     "(limit %llu; raise it with ulimit -n)", no_fd,
		     (unsigned long long)rl.rlim_cur);
	}

	/* Forget refusals whose segment went away: a new one with the same
	 * name is looked at afresh. */
	size_t left = 0;
	for (size_t i = 0; i < d->nrefused; i++) {
		if (d->refused[i]->in_scan)
			d->refused[left++] = d->refused[i];
		else
			free(d->refused[i]);
	}
	d->nrefused = left;
out:
	mstat_index_fini(&known);
	mstat_index_fini(&refusals);
	mstat_index_fini(&kept);
}

static void
target_free(struct rcu_head *head)
{
	struct mstat_core_target *t =
		caa_container_of(head, struct mstat_core_target, rcu);

	mstat_reader_close(t->reader);
	/* Its last sample was reachable only through it. */
	free(t->sample);
	mstat_sites_base_free(t->sites_base);
	mstat_sites_base_free(t->sites_last);
	free(t);
}

void
mstat_discover_detach(struct mstat_core_target *t)
{
	cds_list_del_rcu(&t->node);
	call_rcu(&t->rcu, target_free);
}

/* The state /proc gives the target's process, if its pid is ours to ask
 * about and still names that process; 0 if not. */
static char
proc_state(const struct mstat_discover *d, const struct mstat_core_target *t)
{
	uint64_t start;
	char state;

	if (!d->pid_ns || !t->reader ||
	    mstat_reader_info(t->reader)->pid_ns != d->pid_ns ||
	    mstat_proc_stat(t->pid, &start, &state) < 0 || start != t->start_time)
		return 0;
	return state;
}

bool
mstat_discover_execed(const struct mstat_discover *d,
		      const struct mstat_core_target *t)
{
	char state = proc_state(d, t);

	/* A zombie is a process that died, not waited for yet. */
	return state && state != 'Z' && state != 'X';
}

bool
mstat_discover_stopped(const struct mstat_discover *d,
		       const struct mstat_core_target *t)
{
	return mstat_proc_state_stopped(proc_state(d, t));
}

uint64_t
mstat_discover_reap(struct mstat_discover *d, struct mstat_core_target *t,
		    bool grace)
{
	struct mstat_reaped r = { 0 };
	int dirfd, rc;

	if (!t->in_scan || !t->reader)
		return 0; /* its name is gone already */
	dirfd = open(MSTAT_SHM_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return 0;
	rc = mstat_reap_fd(dirfd, t->shm_name, mstat_reader_fd(t->reader),
			   grace ? d->grace.seconds : 0, &r);
	close(dirfd);
	if (rc < 0)
		note(d, "%s: cannot remove: %s", t->shm_name, strerror(-rc));
	if (rc == MSTAT_REAP_KILLED)
		mstat_kept_add(&d->kept, t->shm_name, &r);
	return rc >= 0 ? r.killed_ns : 0;
}

size_t
mstat_discover_gc(struct mstat_discover *d)
{
	static const char *const how[] = {
		[MSTAT_STATE_RUNNING] = "killed",
		[MSTAT_STATE_EXITING] = "exited",
		[MSTAT_STATE_EXECED] = "exec'd",
	};
	struct dirent *de;
	size_t removed = 0;
	DIR *dir = opendir(MSTAT_SHM_DIR);

	if (!dir) {
		note(d, "%s: %s", MSTAT_SHM_DIR, strerror(errno));
		return 0;
	}
	while ((de = readdir(dir))) {
		struct mstat_reaped r;
		pid_t pid;
		uint64_t start;

		if (mstat_shm_parse_name(de->d_name, &pid, &start) < 0)
			continue;
		int rc = mstat_reap_at(dirfd(dir), de->d_name, geteuid(), NULL,
				       d->grace.seconds, &r);
		if (rc == MSTAT_REAP_KILLED) {
			note(d, "kept %s (pid %d, killed %llu s ago; "
			     MSTAT_ENV_KILLED_GRACE " is %llu s)", de->d_name,
			     (int)pid, (unsigned long long)
			     ((mstat_clock_wall_ns() - r.killed_ns) / 1000000000u),
			     (unsigned long long)d->grace.seconds);
			mstat_kept_add(&d->kept, de->d_name, &r);
		} else if (rc < 0) {
			note(d, "%s: cannot remove: %s", de->d_name, strerror(-rc));
		} else if (rc == MSTAT_REAP_REMOVED) {
			note(d, "removed %s (pid %d, %s)", de->d_name,
				       (int)pid, r.cut ? "cut shorter than a header"
				       : !r.published ? "not a complete segment"
				       : r.state < sizeof(how) / sizeof(how[0]) &&
						       how[r.state] ? how[r.state]
				       : "gone");
			removed++;
		}
	}
	removed += mstat_kept_bound(&d->kept, dirfd(dir), &d->grace, d->note,
				    d->note_arg);
	closedir(dir);
	return removed;
}
