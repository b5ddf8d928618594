/* SPDX-License-Identifier: MIT */
/* procfs.c - what /proc says of a process; see procfs.h. */
#include "shm/procfs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shm/name.h"

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
mstat_procfs_read_small(const char *path, char *buf, size_t len)
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
mstat_procfs_keyed_count(const char *text, const char *key, uint64_t *out)
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
mstat_procfs_memcg_parse(const char *text, char *path, size_t len, bool *v2)
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
mstat_procfs_memcg(pid_t pid, char *path, size_t len, bool *v2)
{
	char file[64], buf[4096];
	ssize_t n;

	proc_path(file, pid, "cgroup");
	if ((n = mstat_procfs_read_small(file, buf, sizeof(buf))) < 0)
		return (int)n;
	return mstat_procfs_memcg_parse(buf, path, len, v2);
}

int
mstat_procfs_vmstat_oom(uint64_t *n)
{
	char buf[16384];
	ssize_t len = mstat_procfs_read_small("/proc/vmstat", buf, sizeof(buf));

	if (len < 0)
		return (int)len;
	return mstat_procfs_keyed_count(buf, "oom_kill", n);
}

int
mstat_procfs_stat(pid_t pid, uint64_t *start_time, char *state)
{
	struct mstat_proc_life l;
	int rc = mstat_procfs_life(pid, 0, &l);

	if (rc < 0)
		return rc;
	if (state)
		*state = l.state;
	*start_time = l.start_time;
	return 0;
}

int
mstat_procfs_start_time(pid_t pid, uint64_t *start_time)
{
	return mstat_procfs_stat(pid, start_time, NULL);
}

int
mstat_procfs_pid_ns(uint64_t *ino)
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
mstat_procfs_exiting(pid_t pid)
{
	struct mstat_proc_life l;

	return mstat_procfs_life(pid, 0, &l) == 0 && (l.flags & MSTAT_PF_EXITING);
}

int
mstat_procfs_life(pid_t pid, pid_t tid, struct mstat_proc_life *l)
{
	char path[64], file[40] = "stat", buf[1024];
	ssize_t len;

	if (tid) {
		size_t n = sizeof("task/") - 1;
		memcpy(file, "task/", n);
		n += mstat_utoa(file + n, (uint64_t)tid);
		memcpy(file + n, "/stat", sizeof("/stat"));
	}
	proc_path(path, pid, file);
	if ((len = slurp(path, buf, sizeof(buf))) < 0)
		return (int)len;
	/* "pid (comm) state ppid ...": comm may hold spaces and parentheses,
	 * so fields are counted from the last ')'. */
	const char *p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || !p[2])
		return -EPROTO;
	l->state = p[2];
	uint64_t *want[23] = { [9] = &l->flags, [20] = &l->threads, [22] = &l->start_time };
	for (int field = 3; field <= 22; field++) {
		p = strchr(p + 1, ' ');
		const char *v = p ? p + 1 : NULL;
		if (!p || (want[field] && !number(&v, want[field])))
			return -EPROTO;
	}
	return 0;
}

static const char *
skip_blanks(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

int
mstat_procfs_status(pid_t pid, struct mstat_proc_status *st)
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
mstat_procfs_root_open(pid_t pid)
{
	char path[64];
	int fd;

	proc_path(path, pid, "root");
	fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

ssize_t
mstat_procfs_cgroup(pid_t pid, char *buf, size_t len)
{
	char path[64];

	proc_path(path, pid, "cgroup");
	return slurp(path, buf, len);
}

int
mstat_procfs_uid_inside(pid_t pid, uid_t outside, uid_t *inside)
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
mstat_procfs_mount_id(pid_t pid, uint64_t *id)
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
mstat_procfs_place(pid_t pid, struct mstat_proc_place *pl)
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
		(void)mstat_procfs_mount_id(pid, &pl->mount_id);
	if (rc == 0) {
		pl->mnt_ns = (uint64_t)mnt.st_ino;
		pl->pid_ns = (uint64_t)pidns.st_ino;
		pl->root_dev = (uint64_t)root.st_dev;
		pl->root_ino = (uint64_t)root.st_ino;
	}
	return rc;
}

int
mstat_procfs_reopen(int fd, int flags)
{
	char path[64] = "/proc/self/fd/";
	int nfd;

	mstat_utoa(path + strlen(path), (uint64_t)fd);
	nfd = open(path, flags | O_CLOEXEC);
	return nfd < 0 ? -errno : nfd;
}

int
mstat_procfs_iter_open(struct mstat_proc_iter *it)
{
	it->fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	it->len = it->off = 0;
	return it->fd < 0 ? -errno : 0;
}

long
mstat_procfs_iter_next(struct mstat_proc_iter *it, struct mstat_proc_entry *e,
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
mstat_procfs_iter_close(struct mstat_proc_iter *it)
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
mstat_procfs_identity(pid_t pid, struct mstat_proc_identity *id)
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
mstat_procfs_boot_ns(void)
{
	int fd = open("/proc/stat", O_RDONLY | O_CLOEXEC);
	uint64_t ns;

	if (fd < 0)
		return 0;
	ns = mstat_procfs_boot_ns_fd(fd);
	close(fd);
	return ns;
}

uint64_t
mstat_procfs_boot_ns_fd(int fd)
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
mstat_procfs_start_ns(uint64_t boot_ns, uint64_t start_ticks)
{
	long hz = sysconf(_SC_CLK_TCK);

	if (!boot_ns || hz <= 0)
		return 0;
	return boot_ns + start_ticks / (uint64_t)hz * 1000000000u +
	       start_ticks % (uint64_t)hz * 1000000000u / (uint64_t)hz;
}

/* ---- resident memory ---- */

/* The number of kB on the line "<key>:" of status text, in bytes. */
static bool
status_kb(const char *text, const char *key, uint64_t *bytes)
{
	size_t kl = strlen(key);

	for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : l) {
		if (strncmp(l, key, kl) != 0 || l[kl] != ':')
			continue;
		const char *p = skip_blanks(l + kl + 1);
		uint64_t v;
		if (!number(&p, &v) || strncmp(p, " kB", 3) != 0 || v > UINT64_MAX / 1024)
			return false;
		*bytes = v * 1024;
		return true;
	}
	return false;
}

int
mstat_procfs_rss_parse(const char *text, struct mstat_proc_rss *out)
{
	if (!status_kb(text, "VmRSS", &out->rss) ||
	    !status_kb(text, "RssAnon", &out->anon) ||
	    !status_kb(text, "RssFile", &out->file) ||
	    !status_kb(text, "RssShmem", &out->shmem))
		return -EPROTO;
	return 0;
}

int
mstat_procfs_rss(pid_t pid, struct mstat_proc_rss *out)
{
	char path[64], buf[16384];
	ssize_t len;

	proc_path(path, pid, "status");
	if ((len = slurp(path, buf, sizeof(buf))) < 0)
		return (int)len;
	return mstat_procfs_rss_parse(buf, out);
}

int
mstat_procfs_statm(pid_t pid, uint64_t *resident, uint64_t *shared)
{
	char path[64], buf[256];
	const char *p = buf;
	uint64_t size;
	ssize_t len;

	proc_path(path, pid, "statm");
	if ((len = slurp(path, buf, sizeof(buf))) < 0)
		return (int)len;
	/* "size resident shared text lib data dt", in pages */
	if (!number(&p, &size) || *p++ != ' ' || !number(&p, resident) ||
	    *p++ != ' ' || !number(&p, shared))
		return -EPROTO;
	return 0;
}

/* ---- mappings ---- */

/* The hexadecimal number at *p, moving *p past it. */
static bool
hex(const char **p, uint64_t *v)
{
	const char *s = *p;
	uint64_t n = 0;
	int digits = 0;

	for (;; s++, digits++) {
		unsigned d;
		if (*s >= '0' && *s <= '9')
			d = (unsigned)(*s - '0');
		else if (*s >= 'a' && *s <= 'f')
			d = (unsigned)(*s - 'a' + 10);
		else
			break;
		if (digits == 16)
			return false;
		n = n << 4 | d;
	}
	*p = s;
	*v = n;
	return digits > 0;
}

int
mstat_procfs_map_parse(char *line, struct mstat_proc_map *m)
{
	const char *p = line;
	uint64_t maj, min;

	/* "start-end perms offset major:minor inode   name" */
	if (!hex(&p, &m->start) || *p++ != '-' || !hex(&p, &m->end) ||
	    *p++ != ' ' || m->end < m->start)
		return -EPROTO;
	for (int i = 0; i < 4; i++) {
		if (!*p || *p == ' ')
			return -EPROTO;
		m->perms[i] = *p++;
	}
	m->perms[4] = '\0';
	if (*p++ != ' ' || !hex(&p, &m->offset) || *p++ != ' ' ||
	    !hex(&p, &maj) || *p++ != ':' || !hex(&p, &min) || *p++ != ' ' ||
	    !number(&p, &m->ino) || maj > UINT32_MAX || min > UINT32_MAX)
		return -EPROTO;
	m->dev_major = (uint32_t)maj;
	m->dev_minor = (uint32_t)min;
	m->name = skip_blanks(p);
	return 0;
}

int
mstat_procfs_maps_open(struct mstat_proc_maps *m, pid_t pid)
{
	char path[64];

	proc_path(path, pid, "maps");
	m->len = m->off = 0;
	m->eof = m->cut = false;
	m->fd = open(path, O_RDONLY | O_CLOEXEC);
	return m->fd < 0 ? -errno : 0;
}

/* More of the file after what is left in the buffer: false at its end
 * (or on an error: -errno in *rc). */
static bool
maps_fill(struct mstat_proc_maps *m, int *rc)
{
	ssize_t n;

	memmove(m->buf, m->buf + m->off, m->len - m->off);
	m->len -= m->off;
	m->off = 0;
	if (m->eof || m->len == sizeof(m->buf) - 1)
		return false;
	do
		n = read(m->fd, m->buf + m->len, sizeof(m->buf) - 1 - m->len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		*rc = -errno;
	if (n <= 0) {
		m->eof = true;
		return false;
	}
	m->len += (size_t)n;
	return true;
}

/* Passes over the rest of a line cut at the buffer's end: false at the
 * file's end (or on an error: -errno in *rc). */
static bool
maps_skip_cut(struct mstat_proc_maps *m, int *rc)
{
	while (m->cut) {
		char *nl = memchr(m->buf + m->off, '\n', m->len - m->off);
		if (nl) {
			m->off = (size_t)(nl - m->buf) + 1;
			m->cut = false;
		} else {
			m->off = m->len;
			if (!maps_fill(m, rc))
				return false;
		}
	}
	return true;
}

int
mstat_procfs_maps_next(struct mstat_proc_maps *m, struct mstat_proc_map *out)
{
	int rc = 0;
	char *nl;

	if (!maps_skip_cut(m, &rc))
		return rc;
	while (!(nl = memchr(m->buf + m->off, '\n', m->len - m->off)) &&
	       maps_fill(m, &rc))
		;
	if (rc < 0)
		return rc;
	if (m->off == m->len)
		return 0;
	char *line = m->buf + m->off;
	/* A line longer than the buffer (a path deeper than PATH_MAX, a
	 * name's line feeds written \012) is taken as far as it goes, its
	 * name cut; its rest is passed over at the next call. */
	m->cut = !nl && !m->eof;
	if (!nl)
		nl = m->buf + m->len; /* the last line, or a cut one */
	*nl = '\0';
	m->off = nl == m->buf + m->len ? m->len : (size_t)(nl - m->buf) + 1;
	return mstat_procfs_map_parse(line, out) < 0 ? -EPROTO : 1;
}

void
mstat_procfs_maps_close(struct mstat_proc_maps *m)
{
	if (m->fd >= 0)
		close(m->fd);
	m->fd = -1;
}

/* ---- pages in memory ---- */

int
mstat_procfs_pagemap_open(pid_t pid)
{
	char path[64];
	int fd;

	proc_path(path, pid, "pagemap");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* PAGEMAP_SCAN (Linux 6.7, linux/fs.h), spelled out for older headers. */
struct pm_region {
	uint64_t start, end, categories;
};
struct pm_scan {
	uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages;
	uint64_t category_inverted, category_mask, category_anyof_mask;
	uint64_t return_mask;
};
#define PM_SCAN _IOWR('f', 16, struct pm_scan)
#define PM_PRESENT (UINT64_C(1) << 3)
#define PM_PFNZERO (UINT64_C(1) << 5)
#define PAGEMAP_PRESENT (UINT64_C(1) << 63)

/* What the kernel's PAGEMAP_SCAN takes: 0 not tried yet, 1 present pages
 * but the zero page, 2 present pages, 3 nothing (an older kernel).
 * Relaxed: every thread finds out the same. */
static _Atomic int scan_kind;

/* The runs by PAGEMAP_SCAN: their bytes, or -errno (-ENOTTY: the kernel
 * has none). */
static int64_t
resident_scan(int fd, uint64_t start, uint64_t end,
	      void (*run)(void *, uint64_t, uint64_t), void *arg)
{
	struct pm_region r[64];
	int64_t bytes = 0;
	int kind = atomic_load_explicit(&scan_kind, memory_order_relaxed);

	while (start < end) {
		struct pm_scan q = {
			.size = sizeof(q), .start = start, .end = end,
			.vec = (uint64_t)(uintptr_t)r, .vec_len = 64,
			.category_inverted = kind == 2 ? 0 : PM_PFNZERO,
			.category_mask = PM_PRESENT | (kind == 2 ? 0 : PM_PFNZERO),
			.return_mask = PM_PRESENT,
		};
		/* Written by the kernel, through a pointer in q: zeros first,
		 * for tools that cannot follow it (valgrind). */
		memset(r, 0, sizeof(r));
		int n = ioctl(fd, PM_SCAN, &q);
		if (n < 0 && errno == EINVAL && kind != 2) {
			/* A kernel that has no PAGE_IS_PFNZERO. */
			atomic_store_explicit(&scan_kind, kind = 2, memory_order_relaxed);
			continue;
		}
		if (n < 0)
			return -errno;
		for (int i = 0; i < n; i++) {
			bytes += (int64_t)(r[i].end - r[i].start);
			if (run)
				run(arg, r[i].start, r[i].end);
		}
		if (q.walk_end <= start)
			break; /* no progress: cannot be */
		start = q.walk_end;
	}
	if (kind == 0)
		atomic_store_explicit(&scan_kind, 1, memory_order_relaxed);
	return bytes;
}

/* The same from pagemap's entries, a page at a time. */
static int64_t
resident_read(int fd, uint64_t start, uint64_t end,
	      void (*run)(void *, uint64_t, uint64_t), void *arg)
{
	uint64_t e[512], from = 0;
	int64_t bytes = 0;
	bool in = false;

	for (uint64_t a = start; a < end;) {
		uint64_t pages = (end - a) / 4096;
		if (pages > 512)
			pages = 512;
		ssize_t n = pread(fd, e, pages * 8, (off_t)(a / 4096 * 8));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || n % 8)
			return n < 0 ? -errno : -EIO;
		for (ssize_t i = 0; i < n / 8; i++, a += 4096) {
			bool present = e[i] & PAGEMAP_PRESENT;
			if (present && !in)
				from = a;
			if (!present && in && run)
				run(arg, from, a);
			bytes += present ? 4096 : 0;
			in = present;
		}
	}
	if (in && run)
		run(arg, from, end);
	return bytes;
}

int64_t
mstat_procfs_resident(int fd, uint64_t start, uint64_t end,
		      void (*run)(void *arg, uint64_t start, uint64_t end), void *arg)
{
	if (start >= end || start % 4096 || end % 4096)
		return start == end ? 0 : -EINVAL;
	if (atomic_load_explicit(&scan_kind, memory_order_relaxed) != 3) {
		int64_t b = resident_scan(fd, start, end, run, arg);
		if (b != -ENOTTY && b != -EINVAL)
			return b;
		atomic_store_explicit(&scan_kind, 3, memory_order_relaxed);
	}
	return resident_read(fd, start, end, run, arg);
}
