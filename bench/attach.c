/* SPDX-License-Identifier: MIT */
/*
 * attach.c - mstat-bench-attach: how long an attach takes, and how long
 * it stops the threads of the process it attaches.
 *
 *   mstat-bench-attach --target PATH --object PATH
 *                      [--attaches N] [--threads T] [--objects K]
 *
 * Makes K copies of the object (each an object of its own once loaded),
 * then N times: starts the target (bench/attach_target.c: T threads
 * allocating through the K objects, a quarter of them busy), attaches
 * it as mstat-attach does (attach/attach.h, the same code), and ends it,
 * checking that it computed what it would have.  Per attach: the whole
 * attach (from the first look at the process to its segment published),
 * the time the taken thread was held (stopped, running the attach's
 * calls), and the longest stop of a thread looked at and let go.
 * Summary lines:
 *
 *   BENCH attach threads=T objects=K attaches=N attached=A
 *   BENCH attach-time p50_ms=.. p99_ms=.. max_ms=..
 *   BENCH attach-held p50_ms=.. p99_ms=.. max_ms=..
 *   BENCH attach-let-go p50_ms=.. p99_ms=.. max_ms=.. tries=..
 *
 * As root, or as the target's user with ptrace allowed.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attach/attach.h"
#include "bench/common.h"
#include "attach/payload.h"
#include "attach/tracee.h"

#define ATTACHES_MAX 10000

static struct {
	const char *target, *object;
	unsigned attaches, threads, objects;
	char dir[64];
} opt = { .attaches = 100, .threads = 16, .objects = 100 };

static double took[ATTACHES_MAX], held[ATTACHES_MAX], let_go[ATTACHES_MAX];

static int
copy(const char *from, const char *to)
{
	char buf[65536];
	int in = open(from, O_RDONLY | O_CLOEXEC), out = -1;
	ssize_t n = 0;

	if (in >= 0)
		out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	while (out >= 0 && (n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n) {
			n = -1;
			break;
		}
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return in < 0 || out < 0 || n < 0 ? -1 : 0;
}

/* The objects' directory: K copies. */
static int
objects(void)
{
	char path[128];

	snprintf(opt.dir, sizeof(opt.dir), "/tmp/mstat-bench-attach.XXXXXX");
	if (!mkdtemp(opt.dir))
		return -1;
	for (unsigned i = 0; i < opt.objects; i++) {
		snprintf(path, sizeof(path), "%s/obj%03u.so", opt.dir, i);
		if (copy(opt.object, path) < 0)
			return -1;
	}
	return 0;
}

static void
remove_objects(void)
{
	char path[128];

	for (unsigned i = 0; i < opt.objects; i++) {
		snprintf(path, sizeof(path), "%s/obj%03u.so", opt.dir, i);
		unlink(path);
	}
	rmdir(opt.dir);
}

struct target {
	pid_t pid;
	FILE *in, *out;
};

static int
start(struct target *t)
{
	int to[2], from[2];
	char threads[16], line[64];

	if (pipe2(to, O_CLOEXEC) < 0 || pipe2(from, O_CLOEXEC) < 0)
		return -1;
	snprintf(threads, sizeof(threads), "%u", opt.threads);
	t->pid = fork();
	if (t->pid < 0)
		return -1;
	if (t->pid == 0) {
		dup2(to[0], 0);
		dup2(from[1], 1);
		char *const argv[] = { (char *)opt.target, threads, opt.dir, NULL };
		char **env = mbench_env(NULL);
		execve(opt.target, argv, env);
		_exit(127);
	}
	close(to[0]);
	close(from[1]);
	t->in = fdopen(to[1], "w");
	t->out = fdopen(from[0], "r");
	if (!t->in || !t->out || !fgets(line, sizeof(line), t->out) ||
	    strtoul(line + 6, NULL, 10) != opt.objects || strncmp(line, "ready ", 6) != 0) {
		fprintf(stderr, "mstat-bench-attach: the target did not start\n");
		return -1;
	}
	return 0;
}

/* Ends the target: 0 if it said "ok" and exited 0. */
static int
finish(struct target *t)
{
	char line[64] = "";
	int st;

	fputs("end\n", t->in);
	fclose(t->in);
	if (!fgets(line, sizeof(line), t->out))
		line[0] = '\0';
	fclose(t->out);
	if (waitpid(t->pid, &st, 0) != t->pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0 ||
	    strcmp(line, "ok\n") != 0) {
		fprintf(stderr, "mstat-bench-attach: the target ended badly: %s (status %#x)\n",
			line, st);
		return -1;
	}
	return 0;
}

static void
summary(const char *what, double *v, unsigned n, const char *more)
{
	mbench_sort(v, n);
	printf("BENCH %s p50_ms=%.2f p99_ms=%.2f max_ms=%.2f%s\n", what,
	       mbench_quantile(v, n, 0.5), mbench_quantile(v, n, 0.99), n ? v[n - 1] : 0.0,
	       more);
}

int
main(int argc, char **argv)
{
	struct payload p;
	char err[4200], more[64];
	unsigned attached = 0, tries = 0, bad = 0;

	for (int i = 1; i + 1 < argc; i += 2) {
		const char *k = argv[i], *v = argv[i + 1];
		if (strcmp(k, "--target") == 0)
			opt.target = v;
		else if (strcmp(k, "--object") == 0)
			opt.object = v;
		else if (strcmp(k, "--attaches") == 0)
			opt.attaches = (unsigned)strtoul(v, NULL, 10);
		else if (strcmp(k, "--threads") == 0)
			opt.threads = (unsigned)strtoul(v, NULL, 10);
		else if (strcmp(k, "--objects") == 0)
			opt.objects = (unsigned)strtoul(v, NULL, 10);
	}
	if (!opt.target || !opt.object || opt.attaches < 1 || opt.attaches > ATTACHES_MAX ||
	    opt.threads < 1 || opt.threads > 256 || opt.objects < 1 || opt.objects > 500) {
		fprintf(stderr, "usage: mstat-bench-attach --target PATH --object PATH "
				"[--attaches 1..10000] [--threads 1..256] [--objects 1..500]\n");
		return 2;
	}
	if (mstat_payload_load(&p, err, sizeof(err)) < 0) {
		fprintf(stderr, "mstat-bench-attach: %s\n", err);
		return 1;
	}
	if (objects() < 0) {
		fprintf(stderr, "mstat-bench-attach: cannot copy the object: %s\n",
			strerror(errno));
		remove_objects();
		return 1;
	}
	mstat_tracee_setup();
	signal(SIGPIPE, SIG_IGN);
	for (unsigned i = 0; i < opt.attaches; i++) {
		struct inject_options o = { NULL, 5000000000u };
		struct inject_result r;
		struct target t;
		if (start(&t) < 0)
			break;
		mbench_sleep_ns(50 * 1000 * 1000); /* its threads at their work */
		if (mstat_attach_inject(t.pid, &p, &o, &r) == 0) {
			took[attached] = (double)r.took_ns / 1e6;
			held[attached] = (double)r.held_ns / 1e6;
			let_go[attached] = (double)r.let_go_ns / 1e6;
			tries += r.tries;
			attached++;
		} else {
			fprintf(stderr, "mstat-bench-attach: %s\n", r.what);
		}
		bad += finish(&t) < 0;
	}
	remove_objects();
	mstat_payload_free(&p);
	printf("BENCH attach threads=%u objects=%u attaches=%u attached=%u ended_badly=%u\n",
	       opt.threads, opt.objects, opt.attaches, attached, bad);
	summary("attach-time", took, attached, "");
	summary("attach-held", held, attached, "");
	snprintf(more, sizeof(more), " stopped_per_attach=%.2f", attached ? (double)tries / attached : 0.0);
	summary("attach-let-go", let_go, attached, more);
	return attached == opt.attaches && !bad ? 0 : 1;
}
