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
 * Final totals: the library unlinks its segment at exit, so a reader that
 * arrives late finds nothing.  mstat-run sets MSTAT_KEEP_PID to CMD's pid:
 * that one process marks its segment exiting but leaves it in /dev/shm.
 * Once CMD has ended, mstat-run (still holding it as a zombie, so its pid
 * and start time cannot be reused) opens the segment by its exact name,
 * takes the snapshot, writes it as JSON and unlinks the segment.  Nothing
 * of CMD can still write by then: the totals are exact and final.
 *
 * mstat-run itself links only the reader, never libmstatshm: it does not
 * count itself.  Exit status: CMD's, 128 + N if a signal N ended it, 125
 * if mstat-run itself failed, 126/127 if CMD could not be run.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mstatshm.h"
#include "name.h"

#define LIB_NAME "libmstatshm.so.0"
#define EXIT_OWN 125

/* Where the library is, relative to this executable's directory: the
 * build tree first, then the installed layout (set by meson). */
static const char *const lib_dirs[] = {
	"../lib",
	MSTAT_RUN_LIBDIR_REL,
};

static volatile pid_t child; /* 0 once reaped */

static void
usage(FILE *f)
{
	fputs("usage: mstat-run [--name NAME] [--summary FILE] -- CMD [ARGS...]\n"
	      "  Runs CMD with libmstatshm preloaded (children inherit it).\n"
	      "  --name NAME     the name readers show (MSTAT_NAME)\n"
	      "  --summary FILE  write CMD's final heap totals as JSON to FILE\n"
	      "                  (- for standard output) when it exits\n",
	      f);
}

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
		fprintf(stderr, "mstat-run: %s: a path with spaces or colons cannot "
				"go into LD_PRELOAD\n", lib);
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

static void
json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void
json_counts(FILE *f, const struct mstat_counts *c)
{
#define MSTAT_X(e, field, h) fprintf(f, "\"" #field "\": %llu, ", \
				     (unsigned long long)c->field);
	MSTAT_CLASS_COUNTERS(MSTAT_X)
#undef MSTAT_X
	fprintf(f, "\"live_objects\": %llu, \"live_bytes\": %llu",
		(unsigned long long)mstat_live_objects(c),
		(unsigned long long)mstat_live_bytes(c));
}

/* Writes the summary; `s` is NULL when nothing was counted (`why`). */
static int
write_summary(const char *file, char **cmd, pid_t pid, int status,
	      const char *name, const struct mstat_snapshot *s, const char *why)
{
	FILE *f = strcmp(file, "-") == 0 ? stdout : fopen(file, "w");

	if (!f) {
		fprintf(stderr, "mstat-run: %s: %s\n", file, strerror(errno));
		return -1;
	}
	fprintf(f, "{\n  \"version\": 1,\n  \"command\": [");
	for (int i = 0; cmd[i]; i++) {
		fputs(i ? ", " : "", f);
		json_string(f, cmd[i]);
	}
	fprintf(f, "],\n  \"pid\": %d,\n  \"name\": ", (int)pid);
	json_string(f, name);
	if (WIFSIGNALED(status))
		fprintf(f, ",\n  \"exit\": {\"signal\": %d}", WTERMSIG(status));
	else
		fprintf(f, ",\n  \"exit\": {\"code\": %d}", WEXITSTATUS(status));
	fprintf(f, ",\n  \"counted\": %s", s ? "true" : "false");
	if (!s) {
		fprintf(f, ",\n  \"reason\": ");
		json_string(f, why);
	} else {
		fprintf(f, ",\n  \"slots_used\": %u,\n  \"threads_overflowed\": %u",
			s->slots_used, s->overflowed);
#define MSTAT_X(e, field, h) fprintf(f, ",\n  \"" #field "\": %llu", \
				     (unsigned long long)s->field);
		MSTAT_TOTAL_COUNTERS(MSTAT_X)
#undef MSTAT_X
		fprintf(f, ",\n  \"total\": {");
		json_counts(f, &s->total);
		fprintf(f, "},\n  \"classes\": [");
		bool first = true;
		for (uint32_t c = 0; c < s->class_count; c++) {
			if (!s->classes[c].alloc_count && !s->classes[c].free_count)
				continue;
			fprintf(f, "%s\n    {\"class\": %u, \"max_size\": ",
				first ? "" : ",", c);
			if (s->class_max_size[c] == UINT64_MAX)
				fputs("null", f); /* unbounded */
			else
				fprintf(f, "%llu",
					(unsigned long long)s->class_max_size[c]);
			fputs(", ", f);
			json_counts(f, &s->classes[c]);
			fputc('}', f);
			first = false;
		}
		fprintf(f, "\n  ]");
	}
	fprintf(f, "\n}\n");
	if (f == stdout ? fflush(f) != 0 : fclose(f) != 0) {
		fprintf(stderr, "mstat-run: %s: %s\n", file, strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * CMD (pid) has ended and is not reaped yet.  Takes its final snapshot from
 * the segment it left and unlinks it.  0, or -1 with the reason in `why`.
 */
static int
collect(pid_t pid, struct mstat_snapshot *s, char *name, size_t namelen,
	char *why, size_t whylen)
{
	char shm_name[MSTAT_SHM_NAME_MAX];
	struct mstat_reader *r;
	uint64_t start;
	int rc;

	/* A zombie keeps its /proc/<pid>/stat, start time included. */
	rc = mstat_proc_start_time(pid, &start);
	if (rc < 0) {
		snprintf(why, whylen, "/proc/%d/stat: %s", (int)pid, strerror(-rc));
		return -1;
	}
	mstat_shm_name(shm_name, sizeof(shm_name), pid, start);
	rc = mstat_reader_open_name(&r, shm_name, why, whylen);
	if (rc == -ENOENT) {
		snprintf(why, whylen, "no segment /dev/shm/%s: the command was not "
			 "counted (statically linked, setuid, MSTAT_DISABLE, or "
			 "no usable /dev/shm)", shm_name);
		return -1;
	}
	if (rc < 0)
		return -1;
	/* The writer is gone: a slot still odd was killed inside a section
	 * and will stay so; do not wait long for it. */
	mstat_reader_set_wait_budget(r, 1000);
	/* Another reader (a mstat-top) may hold it for a moment. */
	for (int i = 0; (rc = mstat_reader_snapshot(r, s)) == -EBUSY && i < 10; i++)
		;
	snprintf(name, namelen, "%s", mstat_reader_info(r)->name);
	if (rc < 0)
		snprintf(why, whylen, "%s", mstat_reader_error(r));
	mstat_reader_close(r);
	shm_unlink(shm_name);
	return rc < 0 ? -1 : 0;
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "name", required_argument, NULL, 'n' },
		{ "summary", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *name = NULL, *summary = NULL;
	int c;

	while ((c = getopt_long(argc, argv, "+n:s:h", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			name = optarg;
			break;
		case 's':
			summary = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return EXIT_OWN;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "mstat-run: no command given\n");
		usage(stderr);
		return EXIT_OWN;
	}
	if (name && (!*name || strlen(name) >= 64)) {
		fprintf(stderr, "mstat-run: --name: 1 to 63 bytes\n");
		return EXIT_OWN;
	}
	char **cmd = argv + optind;

	char *lib = find_library();
	if (!lib) {
		fprintf(stderr, "mstat-run: %s not found next to this program "
				"(looked in ../lib and %s)\n", LIB_NAME,
			MSTAT_RUN_LIBDIR_REL);
		return EXIT_OWN;
	}
	if (set_preload(lib) < 0 || (name && setenv("MSTAT_NAME", name, 1) < 0))
		return EXIT_OWN;
	free(lib);

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
		perror("mstat-run: fork");
		return EXIT_OWN;
	}
	if (child == 0) {
		char pid[24];
		signal(SIGINT, SIG_DFL);
		signal(SIGQUIT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		snprintf(pid, sizeof(pid), "%d", (int)getpid());
		setenv("MSTAT_KEEP_PID", pid, 1);
		execvp(cmd[0], cmd);
		int err = errno;
		fprintf(stderr, "mstat-run: %s: %s\n", cmd[0], strerror(err));
		_exit(err == ENOENT ? 127 : 126);
	}

	/* Wait for CMD's end without reaping it: its pid stays ours. */
	siginfo_t si;
	int rc;
	do
		rc = waitid(P_PID, (id_t)child, &si, WEXITED | WNOWAIT);
	while (rc < 0 && errno == EINTR);
	if (rc < 0) {
		perror("mstat-run: waitid");
		return EXIT_OWN;
	}

	struct mstat_snapshot *snap = malloc(sizeof(*snap));
	char seg_name[64], why[300];
	bool counted = snap && collect(child, snap, seg_name, sizeof(seg_name),
				       why, sizeof(why)) == 0;
	if (!snap)
		snprintf(why, sizeof(why), "out of memory");

	int status;
	while (waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
	child = 0;

	int result = WIFSIGNALED(status) ? 128 + WTERMSIG(status)
					 : WEXITSTATUS(status);
	if (summary) {
		if (!counted)
			fprintf(stderr, "mstat-run: %s\n", why);
		if (write_summary(summary, cmd, si.si_pid, status,
				  counted ? seg_name : name ? name : cmd[0],
				  counted ? snap : NULL,
				  why) < 0)
			result = EXIT_OWN;
	}
	free(snap);
	return result;
}
