/* SPDX-License-Identifier: MIT */
/* procfs.c - what /proc says of a process; see procfs.h. */
#include "procfs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "name.h"

/* "/proc/<pid>/<file>", or "/proc/self/<file>" for pid 0, into `path`
 * (room for 64 bytes; `file` is one of ours, short). */
static void
proc_path(char *path, pid_t pid, const char *file)
{
	size_t n = sizeof("/proc/") - 1;

	memcpy(path, "/proc/", n);
	if (pid == 0) {
		memcpy(path + n, "self", 4);
		n += 4;
	} else {
		n += mstat_utoa(path + n, (uint64_t)pid);
	}
	path[n++] = '/';
	memcpy(path + n, file, strlen(file) + 1);
}

/* Reads a small /proc file into buf (NUL-terminated): its length, or
 * -errno. */
static ssize_t
slurp(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	do
		n = read(fd, buf, len - 1);
	while (n < 0 && errno == EINTR);
	int saved = errno;
	close(fd);
	if (n < 0)
		return -saved;
	buf[n] = '\0';
	return n;
}

ssize_t
mstat_read_small(const char *path, char *buf, size_t len)
{
	size_t have = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	/* Until its end: /proc/vmstat is larger than one read gives. */
	while (have < len - 1) {
		ssize_t n = read(fd, buf + have, len - 1 - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int saved = errno;
			close(fd);
			return -saved;
		}
		if (n == 0)
			break;
		have += (size_t)n;
	}
	close(fd);
	buf[have] = '\0';
	return (ssize_t)have;
}

int
mstat_keyed_count(const char *text, const char *key, uint64_t *out)
{
	size_t kl = strlen(key);

	for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : l) {
		if (strncmp(l, key, kl) != 0 || l[kl] != ' ')
			continue;
		const char *d = l + kl + 1;
		uint64_t v = 0;
		if (*d < '0' || *d > '9')
			return -ENOENT;
		for (; *d >= '0' && *d <= '9'; d++)
			v = v * 10 + (uint64_t)(*d - '0');
		*out = v;
		return 0;
	}
	return -ENOENT;
}

/* Whether the comma-separated `list` of `n` bytes names "memory". */
static bool
names_memory(const char *list, size_t n)
{
	for (size_t i = 0; i < n;) {
		size_t j = i;
		while (j < n && list[j] != ',')
			j++;
		if (j - i == 6 && memcmp(list + i, "memory", 6) == 0)
			return true;
		i = j + 1;
	}
	return false;
}

int
mstat_memcg_parse(const char *text, char *path, size_t len, bool *v2)
{
	int rc = -ENOENT;

	/* "hierarchy:controllers:path" lines; v2's is "0::path". */
	for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : l) {
		const char *c = strchr(l, ':'), *e = strchr(l, '\n');
		const char *p = c ? strchr(c + 1, ':') : NULL;
		if (!e)
			e = l + strlen(l);
		if (!p || p > e || p[1] != '/')
			continue;
		bool mem = names_memory(c + 1, (size_t)(p - c - 1));
		bool unified = c - l == 1 && l[0] == '0' && p == c + 1;
		if (!mem && !(unified && rc < 0))
			continue;
		size_t n = (size_t)(e - p - 1);
		if (n >= len)
			return -ENAMETOOLONG;
		memcpy(path, p + 1, n);
		path[n] = '\0';
		*v2 = !mem;
		rc = 0;
		if (mem)
			break; /* the memory controller's hierarchy: v1 */
	}
	return rc;
}

int
mstat_proc_memcg(pid_t pid, char *path, size_t len, bool *v2)
{
	char file[64], buf[4096];
	ssize_t n;

	proc_path(file, pid, "cgroup");
	if ((n = mstat_read_small(file, buf, sizeof(buf))) < 0)
		return (int)n;
	return mstat_memcg_parse(buf, path, len, v2);
}

int
mstat_proc_vmstat_oom(uint64_t *n)
{
	char buf[16384];
	ssize_t len = mstat_read_small("/proc/vmstat", buf, sizeof(buf));

	if (len < 0)
		return (int)len;
	return mstat_keyed_count(buf, "oom_kill", n);
}

int
mstat_proc_stat(pid_t pid, uint64_t *start_time, char *state)
{
	char path[64], buf[1024];
	ssize_t len;

	proc_path(path, pid, "stat");
	if ((len = slurp(path, buf, sizeof(buf))) < 0)
		return (int)len;

	/* "pid (comm) state ppid ...": comm may hold spaces and parentheses,
	 * so fields are counted from the last ')'.  starttime is field 22. */
	char *p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || !p[2])
		return -EPROTO;
	if (state)
		*state = p[2];
	for (int field = 2; field < 22; field++) {
		p = strchr(p + 1, ' ');
		if (!p)
			return -EPROTO;
	}
	p++;
	uint64_t v = 0;
	if (*p < '0' || *p > '9')
		return -EPROTO;
	for (; *p >= '0' && *p <= '9'; p++)
		v = v * 10 + (uint64_t)(*p - '0');
	*start_time = v;
	return 0;
}

int
mstat_proc_start_time(pid_t pid, uint64_t *start_time)
{
	return mstat_proc_stat(pid, start_time, NULL);
}

int
mstat_pid_ns(uint64_t *ino)
{
	struct stat st;

	if (stat("/proc/self/ns/pid", &st) < 0)
		return -errno;
	*ino = (uint64_t)st.st_ino;
	return 0;
}

/* The unsigned number at *p, moving *p past it; false if there is none. */
static bool
number(const char **p, uint64_t *v)
{
	const char *s = *p;
	uint64_t n = 0;

	if (*s < '0' || *s > '9')
		return false;
	for (; *s >= '0' && *s <= '9'; s++)
		n = n * 10 + (uint64_t)(*s - '0');
	*p = s;
	*v = n;
	return true;
}

bool
mstat_proc_exiting(pid_t pid)
{
	char path[64], buf[1024];

	proc_path(path, pid, "stat");
	if (slurp(path, buf, sizeof(buf)) < 0)
		return false;
	/* Counted from the last ')', as above: flags is field 9. */
	char *p = strrchr(buf, ')');
	for (int field = 2; p && field < 9; field++)
		p = strchr(p + 1, ' ');
	if (!p)
		return false;
	const char *f = p + 1;
	uint64_t flags;
	return number(&f, &flags) && (flags & 0x4) != 0; /* PF_EXITING */
}

static const char *
skip_blanks(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

int
mstat_proc_status(pid_t pid, struct mstat_proc_status *st)
{
	/* Large: a Groups line can be long, and NSpid comes after it. */
	char path[64], buf[16384];
	bool uid = false, nspid = false;
	ssize_t len;

	proc_path(path, pid, "status");
	if ((len = slurp(path, buf, sizeof(buf))) < 0)
		return (int)len;
	for (const char *line = buf; *line;) {
		const char *end = strchr(line, '\n');
		const char *p;
		uint64_t v;

		if (!end)
			break; /* cut: not a whole line */
		if (strncmp(line, "Uid:", 4) == 0) {
			/* real, effective, saved, file system */
			p = skip_blanks(line + 4);
			if (number(&p, &v) && (p = skip_blanks(p), number(&p, &v))) {
				st->euid = (uid_t)v;
				uid = true;
			}
		} else if (strncmp(line, "NSpid:", 6) == 0) {
			/* Ours first, then each namespace below, its own last. */
			unsigned n = 0;
			p = skip_blanks(line + 6);
			while (p < end && number(&p, &v)) {
				st->nspid = (pid_t)v;
				n++;
				p = skip_blanks(p);
			}
			if (n) {
				st->depth = n - 1;
				nspid = true;
			}
		}
		line = end + 1;
	}
	return uid && nspid ? 0 : -EPROTO;
}

int
mstat_proc_root_open(pid_t pid)
{
	char path[64];
	int fd;

	proc_path(path, pid, "root");
	fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

ssize_t
mstat_proc_cgroup(pid_t pid, char *buf, size_t len)
{
	char path[64];

	proc_path(path, pid, "cgroup");
	return slurp(path, buf, len);
}

int
mstat_proc_uid_inside(pid_t pid, uid_t outside, uid_t *inside)
{
	char path[64], buf[4096];
	ssize_t len;

	proc_path(path, pid, "uid_map");
	if ((len = slurp(path, buf, sizeof(buf))) < 0)
		return (int)len;
	/* "inside outside count", a line each (user_namespaces(7)): read
	 * by a process of a parent namespace, `outside` is its own uid. */
	for (const char *p = buf; *p;) {
		uint64_t in, out, count;
		p = skip_blanks(p);
		if (!number(&p, &in) || (p = skip_blanks(p), !number(&p, &out)) ||
		    (p = skip_blanks(p), !number(&p, &count)))
			break;
		if (outside >= out && outside - out < count) {
			*inside = (uid_t)(in + (outside - out));
			return 0;
		}
		while (*p && *p != '\n')
			p++;
		if (*p)
			p++;
	}
	return -ERANGE;
}

int
mstat_proc_mount_id(pid_t pid, uint64_t *id)
{
	char path[64], buf[64];
	const char *p = buf;
	ssize_t len;

	proc_path(path, pid, "mountinfo");
	if ((len = slurp(path, buf, sizeof(buf))) < 0)
		return (int)len;
	return number(&p, id) ? 0 : -EPROTO;
}

int
mstat_proc_place(pid_t pid, struct mstat_proc_place *pl)
{
	char path[64];
	struct stat mnt, pidns, root;
	int dir, rc = 0;

	/* Its /proc directory, once: the three are one process's, even if
	 * it dies and another takes its pid meanwhile (they fail then). */
	proc_path(path, pid, "");
	pl->mount_id = 0;
	if ((dir = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		return -errno;
	if (fstatat(dir, "ns/mnt", &mnt, 0) < 0 ||
	    fstatat(dir, "ns/pid", &pidns, 0) < 0 ||
	    fstatat(dir, "root", &root, 0) < 0)
		rc = -errno;
	close(dir);
	if (rc == -EACCES || rc == -EPERM)
		(void)mstat_proc_mount_id(pid, &pl->mount_id);
	if (rc == 0) {
		pl->mnt_ns = (uint64_t)mnt.st_ino;
		pl->pid_ns = (uint64_t)pidns.st_ino;
		pl->root_dev = (uint64_t)root.st_dev;
		pl->root_ino = (uint64_t)root.st_ino;
	}
	return rc;
}

int
mstat_proc_reopen(int fd, int flags)
{
	char path[64] = "/proc/self/fd/";
	int nfd;

	mstat_utoa(path + strlen(path), (uint64_t)fd);
	nfd = open(path, flags | O_CLOEXEC);
	return nfd < 0 ? -errno : nfd;
}

int
mstat_proc_iter_open(struct mstat_proc_iter *it)
{
	it->fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	it->len = it->off = 0;
	return it->fd < 0 ? -errno : 0;
}

long
mstat_proc_iter_next(struct mstat_proc_iter *it, struct mstat_proc_entry *e,
		     size_t max)
{
	size_t n = 0;

	while (n < max) {
		if (it->off >= it->len) {
			ssize_t got = getdents64(it->fd, it->buf, sizeof(it->buf));
			if (got < 0)
				return n ? (long)n : -errno;
			if (got == 0)
				break;
			it->len = got;
			it->off = 0;
		}
		const struct dirent64 *de =
			(const struct dirent64 *)(it->buf + it->off);
		const char *p = de->d_name;
		uint64_t v;

		it->off += de->d_reclen;
		/* A process: its pid, a number, alone. */
		if (number(&p, &v) && *p == '\0' && v > 0 && v <= 0x7fffffff)
			e[n++] = (struct mstat_proc_entry){
				.pid = (pid_t)v, .ino = (uint64_t)de->d_ino
			};
	}
	return (long)n;
}

void
mstat_proc_iter_close(struct mstat_proc_iter *it)
{
	if (it->fd >= 0)
		close(it->fd);
	it->fd = -1;
}

/* As much of src as fits dst with its NUL. */
static void
copy(char *dst, size_t len, const char *src)
{
	size_t n = strnlen(src, len - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
}

void
mstat_proc_identity(pid_t pid, struct mstat_proc_identity *id)
{
	char path[64], buf[4096];
	ssize_t n;

	memset(id, 0, sizeof(*id));
	proc_path(path, pid, "comm");
	if ((n = slurp(path, buf, sizeof(id->comm) + 1)) > 0) {
		if (buf[n - 1] == '\n')
			buf[n - 1] = '\0';
		copy(id->comm, sizeof(id->comm), buf);
	}
	proc_path(path, pid, "exe");
	n = readlink(path, buf, sizeof(buf) - 1);
	if (n > 0) {
		buf[n] = '\0';
		/* An executable replaced while it runs reads "... (deleted)":
		 * still the name the user knows it by. */
		const char *del = " (deleted)";
		size_t dl = strlen(del);
		if ((size_t)n > dl && strcmp(buf + n - dl, del) == 0)
			buf[n - dl] = '\0';
		const char *slash = strrchr(buf, '/');
		copy(id->exe, sizeof(id->exe), slash ? slash + 1 : buf);
	}
}

/* The number after "\nbtime " in `s` (NUL-terminated), if the line it is
 * on is whole there (or `s` is the end of the file): 1, 0 if the line
 * goes on past `s`, -1 if there is none.  Where it is, or where one could
 * begin, in *at. */
static int
btime_in(const char *s, size_t len, bool end, uint64_t *btime, size_t *at)
{
	static const char key[] = "\nbtime ";
	const char *p = strstr(s, key);

	if (!p) {
		/* A key cut at the end: keep what could begin it. */
		*at = len > sizeof(key) - 2 ? len - (sizeof(key) - 2) : 0;
		return -1;
	}
	*at = (size_t)(p - s);
	const char *d = p + sizeof(key) - 1, *e = d;
	uint64_t v = 0;
	for (; *e >= '0' && *e <= '9'; e++)
		v = v * 10 + (uint64_t)(*e - '0');
	if (*e != '\n' && !(end && *e == '\0'))
		return 0;
	*btime = e > d ? v : 0;
	return 1;
}

uint64_t
mstat_proc_boot_ns(void)
{
	int fd = open("/proc/stat", O_RDONLY | O_CLOEXEC);
	uint64_t ns;

	if (fd < 0)
		return 0;
	ns = mstat_proc_boot_ns_fd(fd);
	close(fd);
	return ns;
}

uint64_t
mstat_proc_boot_ns_fd(int fd)
{
	char buf[4096];
	size_t have = 1, at;
	uint64_t btime = 0;
	int found = -1;

	/* In pieces: the "intr" line before it can be long.  The first line
	 * follows a line feed too. */
	buf[0] = '\n';
	for (;;) {
		ssize_t n = read(fd, buf + have, sizeof(buf) - 1 - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (found == 0) /* its line ends the file */
				found = btime_in(buf, have, true, &btime, &at);
			break;
		}
		have += (size_t)n;
		buf[have] = '\0';
		if ((found = btime_in(buf, have, false, &btime, &at)) == 1 ||
		    (found == 0 && at == 0))
			break; /* found, or a line longer than the buffer */
		memmove(buf, buf + at, have - at);
		have -= at;
		buf[have] = '\0';
	}
	return found == 1 ? btime * 1000000000u : 0;
}

uint64_t
mstat_proc_start_ns(uint64_t boot_ns, uint64_t start_ticks)
{
	long hz = sysconf(_SC_CLK_TCK);

	if (!boot_ns || hz <= 0)
		return 0;
	return boot_ns + start_ticks / (uint64_t)hz * 1000000000u +
	       start_ticks % (uint64_t)hz * 1000000000u / (uint64_t)hz;
}
