/* SPDX-License-Identifier: MIT */
/* where.c - where a process runs, from its cgroups; see where.h. */
#include "core/where.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define MAX_PARTS 64

/* A piece of the text: not NUL-terminated. */
struct span {
	const char *p;
	size_t n;
};

static bool
ends_with(struct span s, const char *suffix)
{
	size_t k = strlen(suffix);

	return s.n >= k && memcmp(s.p + s.n - k, suffix, k) == 0;
}

static bool
starts_with(struct span s, const char *prefix)
{
	size_t k = strlen(prefix);

	return s.n >= k && memcmp(s.p, prefix, k) == 0;
}

static bool
equals(struct span s, const char *word)
{
	return s.n == strlen(word) && memcmp(s.p, word, s.n) == 0;
}

static bool
contains(struct span s, const char *word)
{
	size_t k = strlen(word);

	for (size_t i = 0; i + k <= s.n; i++)
		if (memcmp(s.p + i, word, k) == 0)
			return true;
	return false;
}

/* The part of `s` after the last `c`, or all of it; what is before it in
 * *before. */
static struct span
after_last(struct span s, char c, struct span *before)
{
	for (size_t i = s.n; i-- > 0;)
		if (s.p[i] == c) {
			*before = (struct span){ s.p, i };
			return (struct span){ s.p + i + 1, s.n - i - 1 };
		}
	*before = (struct span){ s.p, 0 };
	return s;
}

static bool
is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

static void
copy(char *dst, size_t len, struct span s)
{
	size_t n = s.n < len - 1 ? s.n : len - 1;

	memcpy(dst, s.p, n);
	dst[n] = '\0';
}

/* The container id a cgroup's name holds, if it does (where.h). */
static bool
container_of(struct span c, char *id)
{
	struct span before, s = c;

	if (ends_with(s, ".mount"))
		return false;
	if (ends_with(s, ".scope"))
		s.n -= strlen(".scope");
	/* "<slice>:<runtime>:<id>", or "[<runtime>-]<id>" */
	s = memchr(s.p, ':', s.n) ? after_last(s, ':', &before)
				  : after_last(s, '-', &before);
	if (s.n != MSTAT_CONTAINER_ID_LEN || contains(before, "conmon") ||
	    (before.n && memchr(before.p, '.', before.n) &&
	     !memchr(before.p, ':', before.n)))
		return false;
	for (size_t i = 0; i < s.n; i++)
		if (!is_hex(s.p[i]))
			return false;
	copy(id, MSTAT_CONTAINER_ID_LEN + 1, s);
	return true;
}

/* A pod uid as Kubernetes writes it in a cgroup: 32 to 36 hex digits and
 * dashes ('_' for '-' in a slice's name).  Into `uid`, dashes. */
static bool
pod_uid(struct span s, char *uid)
{
	if (s.n < 32 || s.n > MSTAT_POD_UID_MAX)
		return false;
	for (size_t i = 0; i < s.n; i++) {
		char c = s.p[i] == '_' ? '-' : s.p[i];
		if (!is_hex(c) && c != '-')
			return false;
		uid[i] = c;
	}
	uid[s.n] = '\0';
	return true;
}

/* 8-4-4-4-12 hex digits. */
static bool
uuid(struct span s)
{
	if (s.n != 36)
		return false;
	for (size_t i = 0; i < s.n; i++)
		if ((i == 8 || i == 13 || i == 18 || i == 23) ? s.p[i] != '-'
							      : !is_hex(s.p[i]))
			return false;
	return true;
}

static const char *
qos_word(struct span s)
{
	return equals(s, "burstable") ? "Burstable"
	       : equals(s, "besteffort") ? "BestEffort"
					 : NULL;
}

/* The pod and its QoS class, from the components of a path. */
static bool
pod_of(const struct span *part, size_t n, struct mstat_where *w)
{
	for (size_t i = 0; i < n; i++) {
		struct span c = part[i], before;

		/* containerd's v1 form names the pod's slice, then a colon. */
		if (memchr(c.p, ':', c.n))
			c.n = (size_t)((const char *)memchr(c.p, ':', c.n) - c.p);
		if (starts_with(c, "kubepods") && ends_with(c, ".slice") &&
		    contains(c, "-pod")) {
			/* kubepods[-<qos>]-pod<uid>.slice */
			struct span s = { c.p, c.n - strlen(".slice") };
			size_t at = 0;
			for (size_t k = 0; k + 4 <= s.n; k++)
				if (memcmp(s.p + k, "-pod", 4) == 0)
					at = k;
			struct span uid = { s.p + at + 4, s.n - at - 4 };
			if (!pod_uid(uid, w->pod_uid))
				continue;
			struct span head = { s.p, at }, qos;
			qos = after_last(head, '-', &before);
			const char *q = qos_word(qos);
			snprintf(w->qos_class, sizeof(w->qos_class), "%s",
				 q ? q : equals(head, "kubepods") ? "Guaranteed" : "");
			return true;
		}
		if (starts_with(c, "pod")) {
			/* cgroupfs: .../kubepods[/<qos>]/pod<uid>; where the
			 * path does not show kubepods (relative to a cgroup
			 * namespace), a UUID only. */
			struct span uid = { c.p + 3, c.n - 3 };
			bool under = false;
			for (size_t k = 0; k < i; k++)
				under |= starts_with(part[k], "kubepods");
			if (!pod_uid(uid, w->pod_uid) || (!under && !uuid(uid)))
				continue;
			struct span up = i ? part[i - 1] : (struct span){ "", 0 };
			const char *q = qos_word(up);
			snprintf(w->qos_class, sizeof(w->qos_class), "%s",
				 q ? q : equals(up, "kubepods") ? "Guaranteed" : "");
			return true;
		}
	}
	return false;
}

/* A systemd unit's name: letters, digits and ":-_.\@". */
static bool
unit_name(struct span s)
{
	if (s.n == 0 || s.n >= MSTAT_UNIT_NAME_MAX)
		return false;
	for (size_t i = 0; i < s.n; i++) {
		char c = s.p[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || strchr(":-_.\\@", c)))
			return false;
	}
	return true;
}

/* What one path says, and how much (where.h: 4 a container, 2 a pod, 1
 * a unit). */
static int
parse_path(struct span path, struct mstat_where *w)
{
	struct span part[MAX_PARTS];
	size_t n = 0;
	int score = 0;

	memset(w, 0, sizeof(*w));
	for (size_t i = 0; i < path.n && n < MAX_PARTS;) {
		size_t j = i;
		while (j < path.n && path.p[j] != '/')
			j++;
		struct span c = { path.p + i, j - i };
		if (c.n && !equals(c, ".") && !equals(c, ".."))
			part[n++] = c;
		i = j + 1;
	}
	for (size_t i = n; i-- > 0;)
		if (container_of(part[i], w->container_id)) {
			memcpy(w->container_short, w->container_id,
			       MSTAT_CONTAINER_SHORT_LEN);
			w->container_short[MSTAT_CONTAINER_SHORT_LEN] = '\0';
			score += 4;
			break;
		}
	if (pod_of(part, n, w))
		score += 2;
	/* The innermost service under a slice, if no unit of another kind
	 * (a scope, a slice) is below it: the cgroups a service makes of
	 * its own are still the service. */
	for (size_t i = n; !w->container_id[0] && i-- > 1;) {
		if (ends_with(part[i], ".scope") || ends_with(part[i], ".slice"))
			break;
		if (ends_with(part[i], ".service") &&
		    ends_with(part[i - 1], ".slice") && unit_name(part[i])) {
			copy(w->systemd_unit, sizeof(w->systemd_unit), part[i]);
			score += 1;
			break;
		}
	}
	return score;
}

void
mstat_where_parse(const char *text, struct mstat_where *w)
{
	int best = 0, best_rank = 0;

	memset(w, 0, sizeof(*w));
	for (const char *line = text ? text : ""; *line;) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		struct span l = { line, len }, ctl, path;
		const char *c1 = memchr(line, ':', len);
		const char *c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - line))
				    : NULL;

		line += len + (end != NULL);
		if (!c2)
			continue;
		ctl = (struct span){ c1 + 1, (size_t)(c2 - c1 - 1) };
		path = (struct span){ c2 + 1, (size_t)(l.p + l.n - c2 - 1) };
		struct mstat_where here;
		int score = parse_path(path, &here);
		/* Among equals: v2's line, then name=systemd's, then the
		 * first. */
		int rank = ctl.n == 0 && c1 - l.p == 1 && l.p[0] == '0' ? 3
			   : equals(ctl, "name=systemd")             ? 2
								     : 1;
		if (score > best || (score == best && score && rank > best_rank)) {
			*w = here;
			best = score;
			best_rank = rank;
		}
	}
}

const char *
mstat_where_short(const struct mstat_where *w)
{
	return w->container_short[0] ? w->container_short : w->systemd_unit;
}
