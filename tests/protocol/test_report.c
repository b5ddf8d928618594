/* SPDX-License-Identifier: MIT */
/*
 * test_report.c - the report protocol between the launcher and the
 * library (shm/report.h), both ends, in two processes: a report's status
 * and descriptor arrive whole, the last report of the pid asked for is
 * the one taken, another process's is dropped with its descriptor, and
 * what the format cannot hold is refused before anything is sent.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "shm/report.h"

static char name[MSTAT_REPORT_NAME_MAX];

static int
setup(void **state)
{
	int listener = mstat_report_listen(name, sizeof(name));

	if (listener < 0)
		return -1;
	*state = (void *)(intptr_t)listener;
	return 0;
}

static int
teardown(void **state)
{
	close((int)(intptr_t)*state);
	return 0;
}

/* A file of the test's own, to hand over. */
static int
scratch_file(void)
{
	char path[] = "/tmp/mstat-test-report.XXXXXX";
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	unlink(path);
	return fd;
}

static ino_t
inode(int fd)
{
	struct stat st;

	assert_int_equal(fstat(fd, &st), 0);
	return st.st_ino;
}

static int
open_fds(void)
{
	int n = 0;

	for (int fd = 0; fd < 1024; fd++)
		n += fcntl(fd, F_GETFD) >= 0;
	return n;
}

/* Runs `send` in a child and waits for it to end: its pid. */
static pid_t
child_sends(void (*send)(int), int fd)
{
	int status;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		send(fd);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	return pid;
}

static void
send_one(int fd)
{
	if (mstat_report_send(name, "counting into /dev/shm/x (membarrier)", fd) != 0)
		_exit(1);
}

static void
send_two(int fd)
{
	if (mstat_report_send(name, "first", fd) != 0 ||
	    mstat_report_send(name, "not counting: why", -1) != 0)
		_exit(1);
}

static void
a_report_arrives_whole(void **state)
{
	int listener = (int)(intptr_t)*state, fd = scratch_file();
	struct mstat_report rep;
	pid_t pid = child_sends(send_one, fd);

	assert_true(mstat_report_take(listener, pid, &rep));
	assert_string_equal(rep.status, "counting into /dev/shm/x (membarrier)");
	assert_true(rep.fd >= 0 && rep.fd != fd);
	assert_int_equal(inode(rep.fd), inode(fd));
	assert_true(fcntl(rep.fd, F_GETFD) & FD_CLOEXEC);
	close(rep.fd);
	close(fd);
}

static void
the_last_report_of_the_pid_is_taken(void **state)
{
	int listener = (int)(intptr_t)*state, fd = scratch_file();
	struct mstat_report rep;
	int before = open_fds();

	pid_t pid = child_sends(send_two, fd);
	/* This very process reports last: not the pid asked for. */
	assert_int_equal(mstat_report_send(name, "another process", fd), 0);
	assert_true(mstat_report_take(listener, pid, &rep));
	assert_string_equal(rep.status, "not counting: why");
	assert_int_equal(rep.fd, -1);
	/* The descriptors of the reports not taken were closed. */
	assert_int_equal(open_fds(), before);
	close(fd);
}

static void
no_report_is_none(void **state)
{
	struct mstat_report rep;

	assert_false(mstat_report_take((int)(intptr_t)*state, getpid(), &rep));
	assert_int_equal(rep.fd, -1);
}

static void
what_the_format_cannot_hold_is_refused(void **state)
{
	char long_name[MSTAT_REPORT_NAME_MAX + 1];
	char long_status[MSTAT_REPORT_STATUS_MAX + 1];
	struct mstat_report rep;

	memset(long_name, 'n', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	memset(long_status, 's', sizeof(long_status) - 1);
	long_status[sizeof(long_status) - 1] = '\0';
	assert_int_equal(mstat_report_send(name, "", -1), -EINVAL);
	assert_int_equal(mstat_report_send("", "status", -1), -EINVAL);
	assert_int_equal(mstat_report_send(long_name, "status", -1), -EINVAL);
	assert_int_equal(mstat_report_send(name, long_status, -1), -EINVAL);
	/* The longest status the format holds arrives whole. */
	long_status[sizeof(long_status) - 2] = '\0';
	assert_int_equal(mstat_report_send(name, long_status, -1), 0);
	assert_true(mstat_report_take((int)(intptr_t)*state, getpid(), &rep));
	assert_string_equal(rep.status, long_status);
	/* Nobody listening. */
	assert_int_equal(mstat_report_send("mstat-test-report.nobody", "status", -1),
			 -ECONNREFUSED);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(a_report_arrives_whole, setup, teardown),
		cmocka_unit_test_setup_teardown(the_last_report_of_the_pid_is_taken,
						setup, teardown),
		cmocka_unit_test_setup_teardown(no_report_is_none, setup, teardown),
		cmocka_unit_test_setup_teardown(what_the_format_cannot_hold_is_refused,
						setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
