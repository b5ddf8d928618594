/* SPDX-License-Identifier: MIT */
/*
 * mstat-attach - make running processes count with libmstatshm, from
 * now on, without restarting them (docs/attach.md, mstat-attach(1)).
 *
 *   mstat-attach [--name NAME] [--timeout SECONDS] PID...
 *
 * Each process is attached in turn: one line on stdout says what was
 * done, one on stderr why nothing was.  Exit status: 0 if every process
 * was attached, 1 if any was not (left as it was, or counting without a
 * segment), 2 for a bad command line.  SIGINT, SIGTERM, SIGHUP and
 * SIGQUIT wait for the process being attached to be given back, and stop
 * before the next one: a thread cannot be left half-way through a call.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attach.h"
#include "payload.h"
#include "text.h"
#include "tracee.h"

#define TIMEOUT_DEFAULT 5.0

static void
usage(FILE *f)
{
	fputs("usage: mstat-attach [--name NAME] [--timeout SECONDS] PID...\n"
	      "  Makes each running process count its heap into a segment that\n"
	      "  mstat-top and mstat-exporter read, from now on; no restart, no\n"
	      "  debugger, every thread but one left running (docs/attach.md).\n"
	      "  --name NAME        the name readers show (default: the program's)\n"
	      "  --timeout SECONDS  how long to look for a thread that may run the\n"
	      "                     attach before giving up (default 5)\n",
	      f);
}

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
	static const struct option opts[] = {
		{ "name", required_argument, NULL, 'n' },
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct inject_options o = { NULL, (uint64_t)(TIMEOUT_DEFAULT * 1e9) };
	int c, status = 0;
	char *end;

	while ((c = getopt_long(argc, argv, "n:t:hV", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			if (!*optarg || strlen(optarg) >= 64) {
				say("--name: 1 to 63 bytes");
				return 2;
			}
			o.name = optarg;
			break;
		case 't': {
			double t = strtod(optarg, &end);
			if (end == optarg || *end || !(t > 0 && t <= 3600)) {
				say("--timeout: seconds, above 0, at most 3600");
				return 2;
			}
			o.timeout_ns = (uint64_t)(t * 1e9);
			break;
		}
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("mstat-attach %s\n", MSTAT_VERSION);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	pid_t *pids = calloc((size_t)(argc - optind), sizeof(pid_t));
	for (int i = optind; pids && i < argc; i++)
		if (parse_pid(argv[i], &pids[i - optind]) < 0) {
			say("%s: not a process id", argv[i]);
			return 2;
		}

	struct payload p;
	char err[4200];
	if (!pids || payload_load(&p, err, sizeof(err)) < 0) {
		say("%s", pids ? err : "out of memory");
		return 1;
	}
	sigset_t held, pending;
	hold_signals(&held);
	tracee_setup();
	for (int i = 0; i < argc - optind; i++) {
		struct inject_result r;
		int rc = inject(pids[i], &p, &o, &r);
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
			if (i + 1 < argc - optind)
				say("interrupted: %d process(es) not attached",
				    argc - optind - i - 1);
			status = status ? status : 1;
			break;
		}
	}
	payload_free(&p);
	free(pids);
	return status;
}
