/* SPDX-License-Identifier: MIT */
/* profiles.c - a process's heap profile, handed out; see profiles.h. */
#include "core/profiles.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/sampler.h"

struct mstat_core_profile {
	struct mstat_reader *reader; /* its own, on the target's segment */
	char name[64];
};

/* A handle of target t's, into *out. */
static int
handle(const struct mstat_core_target *t, struct mstat_core_profile **out,
       char *err, size_t errlen)
{
	struct mstat_core_profile *h = calloc(1, sizeof(*h));

	if (!h) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	snprintf(h->name, sizeof(h->name), "%s", t->name);
	int fd = fcntl(mstat_reader_fd(t->reader), F_DUPFD_CLOEXEC, 0);
	if (fd < 0) {
		int rc = -errno;
		snprintf(err, errlen, "%s: %s", t->shm_name, strerror(errno));
		free(h);
		return rc;
	}
	/* The reader owns fd from here on, whatever it returns.  The same
	 * file discovery checked against the process it claims (another
	 * user's, read as root, too): every other check is made again. */
	int rc = mstat_reader_open_claimed(&h->reader, fd, t->shm_name, err,
					   errlen);
	if (rc < 0) {
		free(h);
		return rc;
	}
	*out = h;
	return 0;
}

int
mstat_core_profile_open(struct mstat_core *core, pid_t pid,
			struct mstat_core_profile **out, char *err, size_t errlen)
{
	struct mstat_core_target *t, *killed = NULL;

	*out = NULL;
	/* The sampler's own list: walked without RCU (discover.h).  A
	 * process that lives is the pid's; failing that, a killed one the
	 * core still holds (its mapping lingers with it, sampler.c). */
	cds_list_for_each_entry(t, &core->targets, node) {
		if (t->pid != pid || !t->reader)
			continue;
		if (t->final) {
			killed = t;
			continue;
		}
		/* Gone since the last tick (the next finds it so): what the
		 * core makes of it then is the answer, not this. */
		if (mstat_reader_alive(t->reader) == 0) {
			snprintf(err, errlen, "process %d ended since the last "
				 "read", (int)pid);
			return -ESTALE;
		}
		return handle(t, out, err, errlen);
	}
	if (killed)
		return handle(killed, out, err, errlen);
	snprintf(err, errlen, "no process %d counts with libmstatshm here",
		 (int)pid);
	return -ENOENT;
}

int
mstat_core_profile_read(struct mstat_core_profile *h, struct mstat_profile *p,
			char *err, size_t errlen)
{
	int rc = mstat_reader_profile(h->reader, p);

	if (rc < 0)
		snprintf(err, errlen, "%s", mstat_reader_error(h->reader));
	return rc;
}

const char *
mstat_core_profile_name(const struct mstat_core_profile *h)
{
	return h->name;
}

void
mstat_core_profile_close(struct mstat_core_profile *h)
{
	if (!h)
		return;
	mstat_reader_close(h->reader);
	free(h);
}
