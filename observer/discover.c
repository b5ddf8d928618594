/* SPDX-License-Identifier: MIT */
/*
 * discover.c - finding segments in /dev/shm, attaching, refusing, and
 * removing the segments of processes that are gone.
 *
 * Sampler only: these functions change the target list, which only the
 * sampler does, so they walk it without rcu_read_lock().
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

#include "index.h"
#include "layout.h"
#include "name.h"
#include "owner.h"
#include "reader.h"
#include "text.h"
#include "top.h"
#include "tsan.h"

void
mstat_top_note(struct mstat_top *top, const char *fmt, ...)
{
	char raw[256], line[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	/* The whole line, not its arguments: a note names files anyone can
	 * plant in /dev/shm and quotes what segments say, and it goes to a
	 * terminal (stderr, the status line). */
	mstat_text_escape(line, sizeof(line), raw, MSTAT_TEXT_PLAIN);
	if (top->opt.note) {
		top->opt.note(top->opt.note_arg, line);
		return;
	}
	struct mstat_top_status *s = malloc(sizeof(*s)), *old = top->status;
	if (!s)
		return;
	s->seq = ++top->status_seq;
	snprintf(s->line, sizeof(s->line), "%s", line);
	MSTAT_PUBLISHING(s);
	rcu_assign_pointer(top->status, s);
	if (old)
		call_rcu(&old->rcu, mstat_top_status_free);
}

/* With -p, whether a name in /dev/shm is of a pid asked for: cheap, for
 * every name on every tick (a binary search). */
static bool
pid_wanted(const struct mstat_top *top, const char *name)
{
	pid_t pid;
	uint64_t start;

	if (top->opt.npids == 0)
		return true;
	return mstat_shm_parse_name(name, &pid, &start) == 0 &&
	       bsearch(&pid, top->pids, top->opt.npids, sizeof(pid_t),
		       mstat_top_cmp_pid) != NULL;
}

/* With -p, before attaching: -p names processes.  While the pid runs, only
 * its own segment, not one an earlier process with the same pid left
 * behind; once it is gone, whatever it left. */
static bool
process_wanted(const struct mstat_top *top, const char *name)
{
	pid_t pid;
	uint64_t start, now;

	if (top->opt.npids == 0)
		return true;
	if (mstat_shm_parse_name(name, &pid, &start) < 0)
		return false;
	return mstat_proc_start_time(pid, &now) < 0 || now == start;
}

/* Reports a refusal once per segment (and again if the reason changes).
 * `f` is what was refused under this name and inode before, or NULL. */
static void
refuse(struct mstat_top *top, struct mstat_top_refusal *f, const char *name,
       uint64_t ino, int rc, const char *why)
{
	if (f && f->rc == rc) {
		f->in_scan = true;
		return;
	}
	if (!f) {
		if (top->nrefused == top->caprefused) {
			size_t cap = top->caprefused ? 2 * top->caprefused : 8;
			void *p = realloc(top->refused, cap * sizeof(*top->refused));
			if (!p)
				return;
			top->refused = p;
			top->caprefused = cap;
		}
		if (!(f = calloc(1, sizeof(*f))))
			return;
		top->refused[top->nrefused++] = f;
		memcpy(f->name, name, strlen(name) + 1); /* shorter: scan */
		f->ino = ino;
	}
	f->rc = rc;
	f->in_scan = true;
	/* A segment still being made is not worth a line: it is looked at
	 * again every scan, and removed if its creator dies (below). */
	if (rc != -EAGAIN) {
		top->errors[MSTAT_TOP_ERR_REFUSED]++;
		mstat_top_note(top, "skipped %s", why);
	}
}

/* Attaches the segment `name`; false if the process is out of file
 * descriptors (nothing recorded: it is tried again next scan). */
static bool
attach(struct mstat_top *top, struct mstat_top_refusal *f, const char *name,
       uint64_t dir_ino)
{
	struct mstat_reader *r;
	struct mstat_top_target *t;
	struct stat st;
	char err[256];
	int rc = mstat_reader_open_name(&r, name, err, sizeof(err));

	if (rc == -EMFILE || rc == -ENFILE)
		return false;
	if (rc < 0) {
		refuse(top, f, name, dir_ino, rc, err);
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
	t->pid = in->pid;
	t->writer_mode = in->writer_mode;
	t->layout_major = in->version_major;
	t->layout_minor = in->version_minor;
	memcpy(t->shm_name, name, strlen(name) + 1); /* shorter: scan */
	snprintf(t->name, sizeof(t->name), "%s", in->name);
	snprintf(t->key, sizeof(t->key), "%.40s:%llu", name,
		 (unsigned long long)t->ino);
	t->in_scan = true;
	mstat_reader_set_wait_budget(r, top->opt.wait_budget_us);
	MSTAT_PUBLISHING(t);
	cds_list_add_tail_rcu(&t->node, &top->targets);
	return true;
}

static const char *
target_name(const void *item)
{
	return ((const struct mstat_top_target *)item)->shm_name;
}

static uint64_t
target_ino(const void *item)
{
	return ((const struct mstat_top_target *)item)->ino;
}

static const char *
refusal_name(const void *item)
{
	return ((const struct mstat_top_refusal *)item)->name;
}

static uint64_t
refusal_ino(const void *item)
{
	return ((const struct mstat_top_refusal *)item)->ino;
}

void
mstat_discover_scan(struct mstat_top *top)
{
	struct mstat_index targets, refusals;
	struct mstat_top_target *t;
	struct dirent *de;
	size_t n = 0, no_fd = 0;
	DIR *d;

	/* Lookups by name and inode: one pass over the directory is linear
	 * in its size, however many targets there are. */
	cds_list_for_each_entry(t, &top->targets, node) {
		t->in_scan = false;
		n++;
	}
	if (mstat_index_init(&targets, n, target_name, target_ino) < 0 ||
	    mstat_index_init(&refusals, top->nrefused, refusal_name, refusal_ino) < 0) {
		mstat_index_fini(&targets);
		return;
	}
	cds_list_for_each_entry(t, &top->targets, node)
		mstat_index_add(&targets, t);
	for (size_t i = 0; i < top->nrefused; i++) {
		top->refused[i]->in_scan = false;
		mstat_index_add(&refusals, top->refused[i]);
	}

	d = opendir(MSTAT_SHM_DIR);
	if (!d) {
		mstat_top_note(top, "%s: %s", MSTAT_SHM_DIR, strerror(errno));
		goto out;
	}
	while ((de = readdir(d))) {
		const char *name = de->d_name;
		uint64_t ino = (uint64_t)de->d_ino;

		/* A name longer than any segment's is not one (and would not
		 * fit the names kept below). */
		if (strncmp(name, MSTAT_SHM_PREFIX, strlen(MSTAT_SHM_PREFIX)) != 0 ||
		    strlen(name) >= MSTAT_SHM_NAME_MAX)
			continue;
		if (!pid_wanted(top, name))
			continue;
		if ((t = (struct mstat_top_target *)mstat_index_find(&targets, name, ino))) {
			t->in_scan = true;
			continue;
		}
		if (!process_wanted(top, name))
			continue;
		struct mstat_top_refusal *f = (struct mstat_top_refusal *)
			mstat_index_find(&refusals, name, ino);
		if (f && f->rc != -EAGAIN) {
			f->in_scan = true;
			continue;
		}
		no_fd += !attach(top, f, name, ino);
	}

	/* A segment not initialised yet whose creator is gone (it died while
	 * making it) is removed; one still being made is left alone. */
	for (size_t i = 0; i < top->nrefused; i++) {
		struct mstat_top_refusal *f = top->refused[i];
		if (f->in_scan && f->rc == -EAGAIN &&
		    mstat_reap_at(dirfd(d), f->name, geteuid(), NULL, NULL) ==
			    MSTAT_REAP_REMOVED) {
			mstat_top_note(top, "removed %s: its creator died making it",
				       f->name);
			f->in_scan = false;
		}
	}
	closedir(d);
	if (no_fd) {
		struct rlimit rl = { 0, 0 };
		top->errors[MSTAT_TOP_ERR_DESCRIPTORS] += no_fd;
		getrlimit(RLIMIT_NOFILE, &rl);
		mstat_top_note(top, "%zu segments not read: out of file descriptors "
			       "(limit %llu; raise it with ulimit -n)", no_fd,
			       (unsigned long long)rl.rlim_cur);
	}

	/* Forget refusals whose segment went away: a new one with the same
	 * name is looked at afresh. */
	size_t kept = 0;
	for (size_t i = 0; i < top->nrefused; i++) {
		if (top->refused[i]->in_scan)
			top->refused[kept++] = top->refused[i];
		else
			free(top->refused[i]);
	}
	top->nrefused = kept;
out:
	mstat_index_fini(&targets);
	mstat_index_fini(&refusals);
}

void
mstat_discover_detach(struct mstat_top *top, struct mstat_top_target *t)
{
	(void)top;
	cds_list_del_rcu(&t->node);
	call_rcu(&t->rcu, mstat_top_target_free);
}

bool
mstat_discover_execed(const struct mstat_top *top,
		      const struct mstat_top_target *t)
{
	uint64_t start;
	char state;

	/* A zombie is a process that died, not waited for yet. */
	return top->pid_ns && mstat_reader_info(t->reader)->pid_ns == top->pid_ns &&
	       mstat_proc_stat(t->pid, &start, &state) == 0 &&
	       start == t->start_time && state != 'Z' && state != 'X';
}

void
mstat_discover_reap(struct mstat_top *top, struct mstat_top_target *t)
{
	int dirfd, rc;

	if (!t->in_scan)
		return; /* its name is gone already */
	dirfd = open(MSTAT_SHM_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return;
	rc = mstat_reap_fd(dirfd, t->shm_name, mstat_reader_fd(t->reader));
	close(dirfd);
	if (rc < 0)
		mstat_top_note(top, "%s: cannot remove: %s", t->shm_name,
			       strerror(-rc));
}

size_t
mstat_discover_gc(struct mstat_top *top)
{
	static const char *const how[] = {
		[MSTAT_STATE_RUNNING] = "killed",
		[MSTAT_STATE_EXITING] = "exited",
		[MSTAT_STATE_EXECED] = "exec'd",
	};
	struct dirent *de;
	size_t removed = 0;
	DIR *d = opendir(MSTAT_SHM_DIR);

	if (!d) {
		mstat_top_note(top, "%s: %s", MSTAT_SHM_DIR, strerror(errno));
		return 0;
	}
	while ((de = readdir(d))) {
		struct mstat_reaped r;
		pid_t pid;
		uint64_t start;

		if (mstat_shm_parse_name(de->d_name, &pid, &start) < 0)
			continue;
		int rc = mstat_reap_at(dirfd(d), de->d_name, geteuid(), NULL, &r);
		if (rc < 0) {
			mstat_top_note(top, "%s: cannot remove: %s", de->d_name,
				       strerror(-rc));
		} else if (rc == MSTAT_REAP_REMOVED) {
			mstat_top_note(top, "removed %s (pid %d, %s)", de->d_name,
				       (int)pid, !r.published ? "not a complete segment"
				       : r.state < sizeof(how) / sizeof(how[0]) &&
						       how[r.state] ? how[r.state]
				       : "gone");
			removed++;
		}
	}
	closedir(d);
	return removed;
}
