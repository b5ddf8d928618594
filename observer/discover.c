/* SPDX-License-Identifier: MIT */
/*
 * discover.c - finding segments in /dev/shm, attaching, refusing, telling
 * live processes from exited and dead ones, removing stale segments.
 *
 * Sampler only: these functions change the target list, which only the
 * sampler does, so they walk it without rcu_read_lock().
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "layout.h"
#include "name.h"
#include "reader.h"
#include "top.h"
#include "tsan.h"

#define SHM_DIR "/dev/shm"

void
mstat_top_note(struct mstat_top *top, const char *fmt, ...)
{
	char line[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
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

static struct mstat_top_refusal *
find_refusal(struct mstat_top *top, const char *name, uint64_t ino)
{
	for (size_t i = 0; i < top->nrefused; i++)
		if (top->refused[i].ino == ino &&
		    strcmp(top->refused[i].name, name) == 0)
			return &top->refused[i];
	return NULL;
}

/* Reports a refusal once per segment (and again if the reason changes). */
static void
refuse(struct mstat_top *top, const char *name, uint64_t ino, int rc,
       const char *why)
{
	struct mstat_top_refusal *f = find_refusal(top, name, ino);

	if (f && f->rc == rc) {
		f->in_scan = true;
		/* Still not initialised a tick later: its creator died while
		 * making it, or made it wrong.  Say so, once. */
		if (rc == -EAGAIN && ++f->sightings == 2)
			mstat_top_note(top, "skipped %s", why);
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
		f = &top->refused[top->nrefused++];
		snprintf(f->name, sizeof(f->name), "%s", name);
		f->ino = ino;
	}
	f->rc = rc;
	f->in_scan = true;
	f->sightings = 1;
	/* A segment still being created is not worth a line. */
	if (rc != -EAGAIN)
		mstat_top_note(top, "skipped %s", why);
}

/* Whether the process that made the segment is still this pid: a pidfd
 * taken before the start-time check pins the process that passed it. */
static bool
pin_process(struct mstat_top_target *t, uint64_t start_time)
{
	uint64_t now_start;

	t->pidfd = (int)syscall(SYS_pidfd_open, t->pid, 0);
	if (mstat_proc_start_time(t->pid, &now_start) == 0 &&
	    now_start == start_time)
		return true;
	if (t->pidfd >= 0)
		close(t->pidfd);
	t->pidfd = -1;
	return false;
}

static void
attach(struct mstat_top *top, const char *name, uint64_t dir_ino)
{
	struct mstat_reader *r;
	struct mstat_top_target *t;
	struct stat st;
	char err[256];
	int rc = mstat_reader_open_name(&r, name, err, sizeof(err));

	if (rc < 0) {
		refuse(top, name, dir_ino, rc, err);
		return;
	}
	t = calloc(1, sizeof(*t));
	if (!t || fstat(r->fd, &st) < 0) {
		free(t);
		mstat_reader_close(r);
		return;
	}
	const struct mstat_target_info *in = mstat_reader_info(r);
	t->reader = r;
	t->ino = (uint64_t)st.st_ino;
	t->start_time = in->start_time;
	t->pid = in->pid;
	snprintf(t->shm_name, sizeof(t->shm_name), "%s", name);
	snprintf(t->name, sizeof(t->name), "%s", in->name);
	snprintf(t->key, sizeof(t->key), "%.40s:%llu", name,
		 (unsigned long long)t->ino);
	t->in_scan = true;
	if (!pin_process(t, in->start_time)) {
		/* Its process is gone: read it once, then it shows as stale,
		 * even if it got as far as exiting: nobody will unlink it. */
		t->gone = true;
		t->final_read = true;
		t->dead_at_attach = true;
		t->gone_ns = mstat_top_now_ns();
	}
	mstat_reader_set_wait_budget(r, top->opt.wait_budget_us);
	MSTAT_PUBLISHING(t);
	cds_list_add_tail_rcu(&t->node, &top->targets);
}

static struct mstat_top_target *
find_target(struct mstat_top *top, const char *name, uint64_t ino)
{
	struct mstat_top_target *t;

	cds_list_for_each_entry(t, &top->targets, node)
		if (t->ino == ino && strcmp(t->shm_name, name) == 0)
			return t;
	return NULL;
}

void
mstat_discover_scan(struct mstat_top *top)
{
	struct mstat_top_target *t;
	struct dirent *de;
	DIR *d;

	cds_list_for_each_entry(t, &top->targets, node)
		t->in_scan = false;
	for (size_t i = 0; i < top->nrefused; i++)
		top->refused[i].in_scan = false;

	d = opendir(SHM_DIR);
	if (!d) {
		mstat_top_note(top, "%s: %s", SHM_DIR, strerror(errno));
		return;
	}
	while ((de = readdir(d))) {
		const char *name = de->d_name;
		uint64_t ino = (uint64_t)de->d_ino;

		if (strncmp(name, MSTAT_SHM_PREFIX, strlen(MSTAT_SHM_PREFIX)) != 0)
			continue;
		if (!pid_wanted(top, name))
			continue;
		if ((t = find_target(top, name, ino))) {
			t->in_scan = true;
			continue;
		}
		if (!process_wanted(top, name))
			continue;
		struct mstat_top_refusal *f = find_refusal(top, name, ino);
		if (f && f->rc != -EAGAIN) {
			f->in_scan = true;
			continue;
		}
		attach(top, name, ino);
	}
	closedir(d);

	/* A process that exec()s replaces its segment under the same name:
	 * the old one will never change again and its row would show the
	 * same pid twice.  Drop it; the new one is attached already. */
	struct mstat_top_target *old, *tmp;
	cds_list_for_each_entry_safe(old, tmp, &top->targets, node) {
		if (old->in_scan)
			continue;
		cds_list_for_each_entry(t, &top->targets, node)
			if (t != old && t->in_scan &&
			    strcmp(t->shm_name, old->shm_name) == 0) {
				mstat_discover_detach(top, old);
				break;
			}
	}

	/* Forget refusals whose segment went away: a new one with the same
	 * name is looked at afresh. */
	size_t kept = 0;
	for (size_t i = 0; i < top->nrefused; i++)
		if (top->refused[i].in_scan)
			top->refused[kept++] = top->refused[i];
	top->nrefused = kept;
}

/* Without a pidfd (a kernel before 5.3, or valgrind): the process is gone
 * if /proc no longer has it, if it is a zombie (it has exited: a pidfd
 * would say so too), or if its pid now names a later process. */
static bool
proc_gone(const struct mstat_top_target *t)
{
	char path[32], buf[512];
	uint64_t start;
	ssize_t len;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)t->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return false;
	buf[len] = '\0';
	const char *p = strrchr(buf, ')'); /* the name may hold anything */
	if (p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X'))
		return true;
	return mstat_proc_start_time(t->pid, &start) == 0 &&
	       start != t->start_time;
}

void
mstat_discover_liveness(struct mstat_top *top, uint64_t now_ns)
{
	struct mstat_top_target *t;
	struct pollfd *fds;
	size_t n = 0, i = 0;

	cds_list_for_each_entry(t, &top->targets, node)
		n += !t->gone;
	fds = n ? calloc(n, sizeof(*fds)) : NULL;
	if (n && !fds)
		return;
	/* One poll() for every pidfd: a pidfd is readable once its process
	 * has exited. */
	cds_list_for_each_entry(t, &top->targets, node) {
		if (t->gone)
			continue;
		fds[i].fd = t->pidfd; /* -1 is ignored by poll() */
		fds[i].events = POLLIN;
		i++;
	}
	if (n && poll(fds, n, 0) < 0)
		memset(fds, 0, n * sizeof(*fds));
	i = 0;
	cds_list_for_each_entry(t, &top->targets, node) {
		if (t->gone)
			continue;
		bool dead = t->pidfd >= 0
				    ? (fds[i].revents & (POLLIN | POLLHUP)) != 0
				    : proc_gone(t);
		i++;
		if (!dead)
			continue;
		t->gone = true;
		t->final_read = true;
		t->gone_ns = now_ns;
	}
	free(fds);
}

void
mstat_discover_detach(struct mstat_top *top, struct mstat_top_target *t)
{
	(void)top;
	cds_list_del_rcu(&t->node);
	call_rcu(&t->rcu, mstat_top_target_free);
}

size_t
mstat_discover_gc(struct mstat_top *top)
{
	struct mstat_top_target *t, *tmp;
	size_t removed = 0;

	cds_list_for_each_entry_safe(t, tmp, &top->targets, node) {
		const struct mstat_top_sample *s = t->sample;
		if (!t->gone || !s || s->live != MSTAT_LIVE_STALE)
			continue;
		/* Only the segment we validated: its name must still lead to
		 * the inode we mapped. */
		if (t->in_scan && shm_unlink(t->shm_name) < 0) {
			mstat_top_note(top, "%s: cannot remove: %s", t->shm_name,
				       strerror(errno));
			continue;
		}
		mstat_top_note(top, "removed stale segment %s (pid %d, %s)",
			       t->shm_name, (int)t->pid, t->name);
		mstat_discover_detach(top, t);
		removed++;
	}
	/* Segments never published (their creator died while making them)
	 * are refused as not initialised and never attached: removed once
	 * the process their name gives is gone, if they are this user's. */
	for (size_t i = 0; i < top->nrefused; i++) {
		const struct mstat_top_refusal *f = &top->refused[i];
		char path[sizeof(SHM_DIR) + sizeof(f->name)];
		uint64_t start, now;
		struct stat st;
		pid_t pid;

		if (f->rc != -EAGAIN || !f->in_scan ||
		    mstat_shm_parse_name(f->name, &pid, &start) < 0)
			continue;
		if (mstat_proc_start_time(pid, &now) == 0 && now == start)
			continue; /* still being made */
		snprintf(path, sizeof(path), "%s/%s", SHM_DIR, f->name);
		if (lstat(path, &st) < 0 || !S_ISREG(st.st_mode) ||
		    st.st_uid != geteuid() || (uint64_t)st.st_ino != f->ino)
			continue;
		if (shm_unlink(f->name) < 0) {
			mstat_top_note(top, "%s: cannot remove: %s", f->name,
				       strerror(errno));
			continue;
		}
		mstat_top_note(top, "removed unpublished segment %s (pid %d gone)",
			       f->name, (int)pid);
		removed++;
	}
	return removed;
}
