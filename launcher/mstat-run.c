/* SPDX-License-Identifier: MIT */
/*
 * mstat-run - run a command with libmstatshm preloaded.
 *
 *   mstat-run [--name NAME] [--summary FILE] -- CMD [ARGS...]
 *
 * CMD runs with LD_PRELOAD naming libmstatshm first (in front of whatever
 * LD_PRELOAD already held, so `LD_PRELOAD=libjemalloc.so.2 mstat-run ...`
 * counts jemalloc's allocations), and its children inherit it.
 *
 * Final totals: the library unlinks its segment when CMD exits, and a
 * segment left by a CMD that was killed is removed by whoever finds it
 * first, so a reader that comes late finds nothing.  Instead, CMD hands its
 * segment over as it starts (shm/report.h): mstat-run listens on an
 * abstract unix socket named in MSTAT_REPORT, and the library of the
 * process whose pid is MSTAT_REPORT_PID (CMD, and each image it exec()s)
 * sends it a descriptor of its segment (SCM_RIGHTS).  The descriptor keeps the segment readable
 * after its name is gone.  Once CMD has ended, mstat-run takes the last
 * segment CMD sent, reads it (its owner is gone, so the counts are final),
 * writes them as JSON, and removes what CMD left in /dev/shm.  CMD counts
 * to its last instruction (its exiting thread runs the destructors and
 * atexit handlers after the library's own), so the totals are read once
 * it is gone, never before.  If
 * mstat-run is killed, the socket goes with it and CMD runs on as any
 * other process: nothing is left behind either way.
 *
 * mstat-run itself links only the reader, never libmstatshm: it does not
 * count itself.  Exit status: CMD's, 128 + N if a signal N ended it, 125
 * if mstat-run itself failed, 126/127 if CMD could not be run (not
 * executable / not found).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/cli.h"
#include "shm/clock.h"
#include "core/killed.h"
#include "shm/layout.h"
#include "core/model.h"
#include <mstatshm.h>
#include "shm/name.h"
#include "core/outfile.h"
#include "core/output.h"
#include "shm/owner.h"
#include "shm/procfs.h"
#include "shm/reader.h"
#include "shm/report.h"
#include "core/text.h"

#define LIB_NAME "libmstatshm.so.0"
#define EXIT_OWN 125

/* Where the library is, relative to this executable's directory: the
 * build tree first, then the installed layout (set by meson). */
static const char *const lib_dirs[] = {
	"../lib",
	MSTAT_RUN_LIBDIR_REL,
};

static volatile pid_t child; /* 0 once reaped */

struct options {
	const char *name;    /* --name: MSTAT_NAME */
	const char *summary; /* --summary: a file, or "-" */
};

#define say(...) mstat_text_say("mstat-run", __VA_ARGS__)

/* --summary: "-", or a file that can be written, checked before the
 * command runs, not after. */
static int
summary_file(const char *v, void *dst, char *why, size_t len)
{
	if (strcmp(v, "-") != 0 && mstat_outfile_check(v, why, len) < 0)
		return -1;
	*(const char **)dst = v;
	return 0;
}

static const struct mstat_cli_option options[] = {
	{ .name = "name", .letter = 'n', .arg = "NAME",
	  MSTAT_CLI_TEXT(struct options, name, 63), .want = "a name",
	  .help = "the name readers show for CMD: sets MSTAT_NAME" },
	{ .name = "summary", .letter = 's', .arg = "FILE",
	  MSTAT_CLI_PARSE(struct options, summary, summary_file),
	  .want = "a file name, or - for standard output",
	  .help = "when CMD exits, write its final heap totals as JSON to "
		  "FILE (- for standard output)" },
	{ .name = "help", .letter = 'h', .kind = MSTAT_CLI_KIND_HELP,
	  .help = "this text" },
};

static const struct mstat_cli cli = {
	.program = "mstat-run",
	.synopsis = "mstat-run [options] -- CMD [ARGS...]",
	.about = "Runs CMD with libmstatshm preloaded (children inherit it).",
	.options = options,
	.n = sizeof(options) / sizeof(options[0]),
	.column = 22,
	.operands = true,
};

/* The absolute path of libmstatshm next to this executable, or NULL. */
static char *
find_library(void)
{
	char self[PATH_MAX], path[PATH_MAX + 64];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n <= 0)
		return NULL;
	self[n] = '\0';
	char *slash = strrchr(self, '/');
	if (!slash)
		return NULL;
	*slash = '\0';
	for (size_t i = 0; i < sizeof(lib_dirs) / sizeof(lib_dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s/%s", self, lib_dirs[i], LIB_NAME);
		char *real = realpath(path, NULL);
		if (real)
			return real;
	}
	return NULL;
}

/* LD_PRELOAD splits on spaces and colons: such a path cannot be preloaded. */
static int
set_preload(const char *lib)
{
	const char *old = getenv("LD_PRELOAD");
	char *v;

	if (strpbrk(lib, " :\t\n")) {
		say("%s: a path with spaces or colons cannot go into LD_PRELOAD",
		    lib);
		return -1;
	}
	if (asprintf(&v, "%s%s%s", lib, old && *old ? " " : "",
		     old ? old : "") < 0 || setenv("LD_PRELOAD", v, 1) < 0) {
		perror("mstat-run: LD_PRELOAD");
		return -1;
	}
	free(v);
	return 0;
}

static void
forward(int sig)
{
	if (child > 0)
		kill(child, sig);
}

/* The command line, the name and the reason, as mstat-top writes names:
 * control characters and bytes that are not UTF-8 become '?' (text.h),
 * so the summary is valid JSON and its strings are safe to print. */
static void
json_string(FILE *f, const char *s)
{
	fputc('"', f);
	mstat_text_put(f, s, MSTAT_TEXT_QUOTED);
	fputc('"', f);
}

/* What the command's process was, as mstat-top describes a process. */
struct ended {
	pid_t pid;
	const char *name;
	const struct mstat_snapshot *snap; /* NULL: not counted */
	uint64_t start_ns, end_ns;         /* CLOCK_REALTIME; 0 unknown */
	bool killed;
};

/* The process as a JSON object: the one emitter and schema mstat-top
 * uses (output.h), growth counted from nothing, since the summary covers
 * the whole run. */
static int
json_process(FILE *f, const struct ended *e)
{
	struct mstat_model m;
	struct mstat_model_input in = {
		.key = "command",
		.pid = e->pid,
		.name = e->name,
		.live = e->killed ? MSTAT_LIVE_KILLED : MSTAT_LIVE_EXITED,
		.err = "",
		.t_ns = 1,
		.end_ns = e->end_ns,
		.snap = e->snap,
		.start_ns = e->start_ns,
	};

	mstat_model_init(&m, UINT64_MAX);
	if (mstat_model_update(&m, &in, 1, 1) < 0 || m.n != 1) {
		mstat_model_fini(&m);
		return -1;
	}
	mstat_model_rebase(&m, NULL, true);
	mstat_output_json_process(f, m.rows[0]);
	mstat_model_fini(&m);
	return 0;
}

/* Writes the summary; e->snap is NULL when nothing was counted (`why`);
 * `library` is the status the command reported, or NULL. */
static int
write_summary(const char *file, char **cmd, int status, const struct ended *e,
	      const char *why, const char *library)
{
	struct mstat_outfile out;
	char err[512];
	FILE *f = stdout;
	const struct mstat_snapshot *s = e->snap;

	if (strcmp(file, "-") != 0) {
		if (mstat_outfile_open(&out, file, MSTAT_OUTFILE_WHOLE, err,
				       sizeof(err)) < 0) {
			say("%s", err);
			return -1;
		}
		f = out.f;
	}
	fprintf(f, "{\n  \"version\": 2,\n  \"command\": [");
	for (int i = 0; cmd[i]; i++) {
		fputs(i ? ", " : "", f);
		json_string(f, cmd[i]);
	}
	fputs("]", f);
	if (WIFSIGNALED(status))
		fprintf(f, ",\n  \"exit\": {\"signal\": %d}", WTERMSIG(status));
	else
		fprintf(f, ",\n  \"exit\": {\"code\": %d}", WEXITSTATUS(status));
	fprintf(f, ",\n  \"counted\": %s", s ? "true" : "false");
	if (library) {
		fprintf(f, ",\n  \"library\": ");
		json_string(f, library);
	}
	if (!s) {
		fprintf(f, ",\n  \"reason\": ");
		json_string(f, why);
	} else {
		fprintf(f, ",\n  \"cut\": %u,\n  \"slots_used\": %u,\n"
			   "  \"threads_overflowed\": %u",
			s->cut, s->slots_used, s->overflowed);
	}
	fputs(",\n  \"process\": ", f);
	if (json_process(f, e) < 0)
		fputs("null", f);
	fprintf(f, "\n}\n");
	if (f == stdout) {
		if (fflush(f) != 0) {
			say("%s: %s", file, strerror(errno));
			return -1;
		}
	} else if (mstat_outfile_close(&out, err, sizeof(err)) < 0) {
		say("%s", err);
		return -1;
	}
	return 0;
}

/* How long a killed command's segment is kept for other readers
 * (MSTAT_KILLED_GRACE, owner.h). */
static struct mstat_grace grace;

/* Removes whatever segments CMD left under its names (it was killed, or
 * exec()ed): the one it reported, and those of the names it tried first;
 * killed, once its grace is over (by whoever looks then).  Their owner
 * is gone now; files of other users are left alone. */
static void
remove_left(const struct mstat_target_info *in)
{
	char name[MSTAT_SHM_NAME_MAX];
	int dirfd = open(MSTAT_SHM_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (dirfd < 0)
		return;
	(void)mstat_owner_reap_at(dirfd, in->shm_name, geteuid(), NULL,
				  grace.seconds, NULL);
	for (unsigned i = 0; i < MSTAT_SHM_SUFFIXES; i++)
		if (mstat_shm_name(name, sizeof(name), in->pid, in->start_time, i) > 0)
			(void)mstat_owner_reap_at(dirfd, name, geteuid(), NULL,
						  grace.seconds, NULL);
	close(dirfd);
}

/*
 * CMD (pid) has ended, and reported `rep` last (NULL: nothing).  Takes its
 * final snapshot from the segment reported.  0, or -1 with the reason in
 * `why`.
 */
static int
collect(const struct mstat_report *rep, pid_t pid, struct mstat_snapshot *s,
	char *name, size_t namelen, struct ended *e, char *why, size_t whylen)
{
	struct mstat_reader *r;
	char label[64];
	int rc;

	if (!rep) {
		snprintf(why, whylen, "the command reported nothing: it was not "
			 "counted (statically linked, set-user-ID, or in another "
			 "network namespace)");
		return -1;
	}
	if (rep->fd < 0) {
		snprintf(why, whylen, "%s", rep->status); /* the library's why */
		return -1;
	}
	snprintf(label, sizeof(label), "segment of pid %d", (int)pid);
	rc = mstat_reader_open_fd(&r, rep->fd, label, why, whylen);
	if (rc < 0)
		return -1;
	/* Its owner is gone: a final read, no waiting. */
	rc = mstat_reader_snapshot(r, s);
	snprintf(name, namelen, "%s", mstat_reader_info(r)->name);
	e->start_ns = mstat_procfs_start_ns(mstat_procfs_boot_ns(),
					    mstat_reader_info(r)->start_time);
	if (rc == 0 && s->state == MSTAT_EXITED && mstat_reader_exit_ns(r))
		e->end_ns = mstat_reader_exit_ns(r);
	if (rc < 0)
		snprintf(why, whylen, "%s", mstat_reader_error(r));
	remove_left(mstat_reader_info(r));
	mstat_reader_close(r);
	return rc < 0 ? -1 : 0;
}

/* What a run holds between its steps. */
struct run {
	char **cmd;
	int listener;     /* the report socket */
	int exec_pipe[2]; /* CMD's exec() failing, told apart from its exit */
};

/* The library preloaded, the name set, the report socket listening and
 * the exec pipe made: 0, or -1 having said why. */
static int
prepare(const struct options *o, struct run *r)
{
	char *lib = find_library();

	if (!lib) {
		say("%s not found next to this program (looked in ../lib and "
		    "%s)", LIB_NAME, MSTAT_RUN_LIBDIR_REL);
		return -1;
	}
	if (set_preload(lib) < 0 ||
	    (o->name && setenv(MSTAT_ENV_NAME, o->name, 1) < 0)) {
		free(lib);
		return -1;
	}
	free(lib);

	char report[MSTAT_REPORT_NAME_MAX];
	r->listener = mstat_report_listen(report, sizeof(report));
	if (r->listener < 0 || setenv(MSTAT_ENV_REPORT, report, 1) < 0) {
		say("report socket: %s",
		    strerror(r->listener < 0 ? -r->listener : errno));
		return -1;
	}
	/* CMD's exec() failing is told apart from CMD exiting 126 or 127:
	 * the errno comes through this pipe, which a successful exec()
	 * closes. */
	if (pipe2(r->exec_pipe, O_CLOEXEC) < 0) {
		say("pipe: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* Forks and execs CMD; in the parent, returns exec()'s errno, 0 if CMD
 * runs, or -1 if the fork failed (said). */
static int
start(struct run *r)
{
	/* As system() does: the terminal's SIGINT and SIGQUIT reach CMD, which
	 * shares our process group; a signal sent to us alone is passed on. */
	signal(SIGINT, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	struct sigaction sa = { .sa_handler = forward };
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);

	fflush(NULL);
	child = fork();
	if (child < 0) {
		say("fork: %s", strerror(errno));
		return -1;
	}
	if (child == 0) {
		char pid[24];
		signal(SIGINT, SIG_DFL);
		signal(SIGQUIT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		snprintf(pid, sizeof(pid), "%d", (int)getpid());
		setenv(MSTAT_ENV_REPORT_PID, pid, 1);
		execvp(r->cmd[0], r->cmd);
		int err = errno;
		(void)!write(r->exec_pipe[1], &err, sizeof(err));
		_exit(err == ENOENT ? 127 : 126);
	}
	close(r->exec_pipe[1]);
	int exec_err = 0;
	ssize_t got;
	while ((got = read(r->exec_pipe[0], &exec_err, sizeof(exec_err))) < 0 &&
	       errno == EINTR)
		;
	close(r->exec_pipe[0]);
	return got == sizeof(exec_err) ? exec_err : 0;
}

/* CMD has been started (`exec_err`: or could not be run): waits for its
 * end, takes its totals, reaps it, says what was not counted and writes
 * the summary.  Returns the exit status. */
static int
finish(const struct options *o, struct run *r, int exec_err)
{
	/* Wait for CMD's end without reaping it: its pid stays ours. */
	siginfo_t si;
	int rc;
	do
		rc = waitid(P_PID, (id_t)child, &si, WEXITED | WNOWAIT);
	while (rc < 0 && errno == EINTR);
	if (rc < 0) {
		say("waitid: %s", strerror(errno));
		return EXIT_OWN;
	}

	struct mstat_snapshot *snap = malloc(sizeof(*snap));
	struct mstat_report rep;
	bool reported = !exec_err && mstat_report_take(r->listener, child, &rep);
	char seg_name[64], why[500];
	bool counted = false;
	struct ended e = { .pid = si.si_pid,
			   .end_ns = mstat_clock_ns(CLOCK_REALTIME) };
	if (exec_err)
		snprintf(why, sizeof(why), "cannot run %s: %s", r->cmd[0],
			 strerror(exec_err));
	else if (!snap)
		snprintf(why, sizeof(why), "out of memory");
	else
		counted = collect(reported ? &rep : NULL, child, snap, seg_name,
				  sizeof(seg_name), &e, why, sizeof(why)) == 0;
	close(r->listener);

	int status;
	while (waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
	child = 0;

	int result = WIFSIGNALED(status) ? 128 + WTERMSIG(status)
					 : WEXITSTATUS(status);
	/* Run to be counted and not counted: said whether or not a summary
	 * was asked for (the library itself says nothing unasked). */
	if (exec_err)
		say("%s", why);
	else if (!counted)
		say("%s was not counted: %s", r->cmd[0], why);
	e.name = counted ? seg_name : o->name ? o->name : r->cmd[0];
	e.snap = counted ? snap : NULL;
	/* A signal ended it, whatever the segment says: one that came after
	 * the end of its exit (its last count) is not in there. */
	e.killed = WIFSIGNALED(status) || (counted && snap->state == MSTAT_KILLED);
	if (o->summary && write_summary(o->summary, r->cmd, status, &e, why,
					reported ? rep.status : NULL) < 0)
		result = EXIT_OWN;
	free(snap);
	return result;
}

int
main(int argc, char **argv)
{
	struct options o = { 0 };
	struct run r = { 0 };
	char why[512];
	int next;

	switch (mstat_cli_parse(&cli, &o, argc, argv, &next)) {
	case MSTAT_CLI_DONE:
		return 0;
	case MSTAT_CLI_REFUSED:
		return EXIT_OWN;
	case MSTAT_CLI_OK:
		break;
	}
	if (next >= argc) {
		say("no command given: %s", cli.synopsis);
		return EXIT_OWN;
	}
	if (mstat_killed_env(&grace, why, sizeof(why)) < 0) {
		say("%s", why);
		return EXIT_OWN;
	}
	r.cmd = argv + next;
	if (prepare(&o, &r) < 0)
		return EXIT_OWN;
	int exec_err = start(&r);
	if (exec_err < 0)
		return EXIT_OWN;
	return finish(&o, &r, exec_err);
}
