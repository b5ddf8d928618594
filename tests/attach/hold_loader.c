/* SPDX-License-Identifier: MIT */
/*
 * hold_loader.c - libmstat-test-hold.so, an LD_AUDIT module that holds a
 * starting process inside its dynamic loader: when the loader begins to
 * add the program's objects (r_debug's r_state RT_ADD, the program and
 * the loader alone in its list), it says "held" on stderr and waits for
 * a byte on stdin, then lets the loader go on.  A process held so looks,
 * to a reader of its memory, like one that has just exec()ed.
 */
#include <link.h>
#include <unistd.h>

unsigned int
la_version(unsigned int version)
{
	(void)version;
	return LAV_CURRENT;
}

void
la_activity(uintptr_t *cookie, unsigned int flag)
{
	static int held;
	char c;

	(void)cookie;
	if (flag != LA_ACT_ADD || held++)
		return;
	if (write(2, "held\n", 5) != 5 || read(0, &c, 1) != 1)
		_exit(3);
}
