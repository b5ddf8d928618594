/* SPDX-License-Identifier: MIT */
/*
 * mstat-attach - make running processes count with libmstatshm, from
 * now on, without restarting them (docs/attach.md, mstat-attach(1)).
 *
 *   mstat-attach [-n NAME] [-t SECONDS] PID...
 *
 * Its options are the list `options` (core/cli.h), which makes --help
 * and the refusals; docs/mstat-attach.1 says the same (suite docs).
 *
 * Each process is attached in turn: one line on stdout says what was
 * done, one on stderr why nothing was.  Exit status: 0 if every process
 * was attached, 1 if any was not (left as it was, or counting without a
 * segment), 2 for a bad command line.  SIGINT, SIGTERM, SIGHUP and
 * SIGQUIT wait for the process being attached to be given back, and stop
 * before the next one: a thread cannot be left half-way through a call.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attach/attach.h"
#include "core/cli.h"
#include "attach/payload.h"
#include "core/text.h"
#include "attach/tracee.h"

struct options {
	const char *name; /* --name */
	double timeout_s; /* --timeout */
};

static const struct mstat_cli_option options[] = {
	{ .name = "name", .letter = 'n', .arg = "NAME",
	  MSTAT_CLI_TEXT(struct options, name, 63), .want = "a name",
	  .dflt_text = "the program's",
	  .help = "the name readers show for the processes" },
	{ .name = "timeout", .letter = 't', .arg = "SECONDS",
	  MSTAT_CLI_REAL(struct options, timeout_s, 0.001, 3600),
	  .want = "seconds", .dflt = "5",
	  .help = "how long to look for a thread that may run the attach "
		  "before giving up" },
	{ .name = "help", .letter = 'h', .kind = MSTAT_CLI_KIND_HELP,
	  .help = "this text" },
	{ .name = "version", .letter = 'V', .kind = MSTAT_CLI_KIND_VERSION,
	  .help = "the version" },
};

static const struct mstat_cli cli = {
	.program = "mstat-attach",
	.version = MSTAT_VERSION,
	.synopsis = "mstat-attach [options] PID...",
	.about = "Makes each running process count its heap from now on, into "
		 "a segment\nmstat-top and mstat-exporter read: no restart, no "
		 "debugger, every thread\nbut one left running (docs/attach.md).",
	.options = options,
	.n = sizeof(options) / sizeof(options[0]),
	.column = 25,
	.operands = true,
};

#define say(...) mstat_text_say("mstat-attach", __VA_ARGS__)

static int
parse_pid(const char *s, pid_t *pid)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);

	if (errno || end == s || *end || v <= 0 || v > INT_MAX)
		return -1;
	*pid = (pid_t)v;
	return 0;
}

/* The signals that end this program wait until a process is given back. */
static void
hold_signals(sigset_t *held)
{
	sigemptyset(held);
	sigaddset(held, SIGINT);
	sigaddset(held, SIGTERM);
	sigaddset(held, SIGHUP);
	sigaddset(held, SIGQUIT);
	sigprocmask(SIG_BLOCK, held, NULL);
}

int
main(int argc, char **argv)
{
	struct options opt = { 0 };
	int status = 0, next;

	switch (mstat_cli_parse(&cli, &opt, argc, argv, &next)) {
	case MSTAT_CLI_DONE:
		return 0;
	case MSTAT_CLI_REFUSED:
		return 2;
	case MSTAT_CLI_OK:
		break;
	}
	if (next >= argc) {
		say("no process id given: %s", cli.synopsis);
		return 2;
	}
	struct inject_options o = { opt.name, (uint64_t)(opt.timeout_s * 1e9) };
	const int first = next;
	pid_t *pids = calloc((size_t)(argc - first), sizeof(pid_t));
	for (int i = first; pids && i < argc; i++)
		if (parse_pid(argv[i], &pids[i - first]) < 0) {
			say("%s: not a process id", argv[i]);
			free(pids);
			return 2;
		}

	struct payload p;
	char err[4200];
	if (!pids || mstat_payload_load(&p, err, sizeof(err)) < 0) {
		say("%s", pids ? err : "out of memory");
		free(pids);
		return 1;
	}
	sigset_t held, pending;
	hold_signals(&held);
	mstat_tracee_setup();
	for (int i = 0; i < argc - first; i++) {
		struct inject_result r;
		int rc = mstat_attach_inject(pids[i], &p, &o, &r);
		if (rc == 0) {
			printf("%d: %s (thread %d taken for %.1f ms)\n", (int)pids[i],
			       r.what, (int)r.tid, (double)r.held_ns / 1e6);
			fflush(stdout);
		} else {
			say("pid %d: %s", (int)pids[i], r.what);
			status = 1;
		}
		if (sigpending(&pending) == 0 &&
		    (sigismember(&pending, SIGINT) || sigismember(&pending, SIGTERM) ||
		     sigismember(&pending, SIGHUP) || sigismember(&pending, SIGQUIT))) {
			if (i + 1 < argc - first)
				say("interrupted: %d process(es) not attached",
				    argc - first - i - 1);
			status = status ? status : 1;
			break;
		}
	}
	mstat_payload_free(&p);
	free(pids);
	return status;
}
