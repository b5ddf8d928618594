/* SPDX-License-Identifier: MIT */
/* harness.c - drive mstat-test-writer processes; see harness.h. */
#include "tests/protocol/harness.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "shm/sizeclass.h"

const char *const harness_modes[2] = { "fenced", "membarrier" };

static void
read_line(int fd, char *buf, size_t len)
{
	size_t n = 0;

	while (n + 1 < len) {
		ssize_t k = read(fd, buf + n, 1);
		if (k <= 0)
			fail_msg("writer closed its output (%s)", k ? strerror(errno) : "EOF");
		if (buf[n] == '\n')
			break;
		n++;
	}
	buf[n] = '\0';
}

void
writer_start(struct writer *w, const char *mode, unsigned slots,
	     const char *const *args)
{
	const char *exe = getenv("MSTAT_TEST_WRITER");
	int in[2], out[2];
	char line[64], err[256];

	assert_non_null(exe);
	memset(w, 0, sizeof(*w));
	assert_int_equal(pipe2(in, O_CLOEXEC), 0);
	assert_int_equal(pipe2(out, O_CLOEXEC), 0);
	w->pid = fork();
	assert_true(w->pid >= 0);
	if (w->pid == 0) {
		char *argv[8] = { (char *)exe };
		char slots_env[32];
		int i = 0;
		while (args[i] && i < 6) {
			argv[i + 1] = (char *)args[i];
			i++;
		}
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		/* Gone with the test, even stopped, should an assertion end
		 * the test before it lets the writer go. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		setenv("MSTAT_MODE", mode, 1);
		if (slots) {
			snprintf(slots_env, sizeof(slots_env), "%u", slots);
			setenv("MSTAT_SLOTS", slots_env, 1);
		}
		execv(exe, argv);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	w->to = in[1];
	w->from = out[0];
	read_line(w->from, line, sizeof(line));
	assert_string_equal(line, "ready");
	if (mstat_reader_open_pid(&w->r, w->pid, err, sizeof(err)) < 0)
		fail_msg("attach to writer: %s", err);
	const struct mstat_target_info *in_ = mstat_reader_info(w->r);
	assert_string_equal(in_->name, "mstat-test-writer");
	assert_int_equal(in_->writer_mode, strcmp(mode, "fenced") == 0 ?
					   MSTAT_MODE_FENCED : MSTAT_MODE_MEMBARRIER);
}

void
writer_go(struct writer *w)
{
	assert_int_equal(write(w->to, "g", 1), 1);
}

void
writer_expect(struct writer *w, const char *line)
{
	char got[64];

	read_line(w->from, got, sizeof(got));
	assert_string_equal(got, line);
}

void
writer_stop(struct writer *w)
{
	assert_int_equal(write(w->to, "s", 1), 1);
}

static void
read_truth(struct writer *w)
{
	char line[256];

	for (;;) {
		unsigned c;
		unsigned long long v[4];

		read_line(w->from, line, sizeof(line));
		if (strcmp(line, "end") == 0)
			break;
		if (sscanf(line, "class %u %llu %llu %llu %llu", &c, &v[0], &v[1],
			   &v[2], &v[3]) == 5 && c < MSTAT_CLASS_COUNT) {
			for (int k = 0; k < 4; k++)
				w->truth[c][k] = v[k];
		} else if (sscanf(line, "requested %llu", &v[0]) == 1) {
			w->requested = v[0];
		} else {
			fail_msg("writer said: %s", line);
		}
	}
	w->done = true;
}

bool
writer_poll_done(struct writer *w)
{
	struct pollfd p = { .fd = w->from, .events = POLLIN };
	char line[64];

	if (w->done)
		return true;
	if (poll(&p, 1, 0) <= 0)
		return false;
	read_line(w->from, line, sizeof(line));
	assert_string_equal(line, "done");
	read_truth(w);
	return true;
}

void
writer_wait_done(struct writer *w)
{
	struct pollfd p = { .fd = w->from, .events = POLLIN };

	while (!writer_poll_done(w))
		poll(&p, 1, 100);
}

void
writer_finish(struct writer *w)
{
	int status;

	close(w->to);
	assert_int_equal(waitpid(w->pid, &status, 0), w->pid);
	if (WIFSIGNALED(status))
		assert_true(WTERMSIG(status) == SIGKILL);
	else
		assert_int_equal(WEXITSTATUS(status), 0);
	close(w->from);
	mstat_reader_close(w->r);
	w->r = NULL;
}

void
expect_truth(const struct mstat_snapshot *s, const struct writer *w)
{
	assert_true(w->done);
	for (unsigned c = TEST_FIRST_CLASS; c < MSTAT_CLASS_COUNT; c++) {
		const struct mstat_counts *k = &s->classes[c];
		if (k->alloc_count != w->truth[c][0] ||
		    k->alloc_bytes != w->truth[c][1] ||
		    k->free_count != w->truth[c][2] ||
		    k->free_bytes != w->truth[c][3])
			fail_msg("class %u: snapshot %llu %llu %llu %llu, truth "
				 "%llu %llu %llu %llu", c,
				 (unsigned long long)k->alloc_count,
				 (unsigned long long)k->alloc_bytes,
				 (unsigned long long)k->free_count,
				 (unsigned long long)k->free_bytes,
				 (unsigned long long)w->truth[c][0],
				 (unsigned long long)w->truth[c][1],
				 (unsigned long long)w->truth[c][2],
				 (unsigned long long)w->truth[c][3]);
	}
	/* Requested bytes are per process, not per class: the writers'
	 * requests dwarf any real allocation's, so compare above 2^36. */
	assert_true(s->requested_bytes >= w->requested);
	assert_true(s->requested_bytes - w->requested < (UINT64_C(1) << 36));
}

void
snapshot_ok(struct mstat_reader *r, struct mstat_snapshot *s)
{
	for (int i = 0; i < 1000; i++) {
		int rc = mstat_reader_snapshot(r, s);
		if (rc == 0)
			return;
		/* Stalled, or another reader (an observer the user runs)
		 * held the lock past the wait: both pass. */
		if (rc != -EAGAIN && rc != -EBUSY)
			fail_msg("snapshot: %s", mstat_reader_error(r));
	}
	fail_msg("snapshot stalled 1000 times: %s", mstat_reader_error(r));
}

void
check_pairs(const struct mstat_snapshot *s)
{
	const struct mstat_counts *f = &s->classes[MSTAT_HUGE_CLASS];
	const struct mstat_counts *a = &s->classes[MSTAT_HUGE_CLASS - 1];

	if (f->free_count != a->alloc_count ||
	    f->free_bytes != a->alloc_bytes + a->alloc_count)
		fail_msg("torn snapshot at epoch %llu: %llu frees, %llu allocs",
			 (unsigned long long)s->epoch,
			 (unsigned long long)f->free_count,
			 (unsigned long long)a->alloc_count);
}
