/* SPDX-License-Identifier: MIT */
/*
 * plugin_slow.c - libmstat-test-slow.so: an object whose load stops half
 * way, for test_library.c to look at it then.  Its relocation resolves
 * slow_answer(), an IFUNC, after the slot holding malloc's address (its
 * relocations of data come before those of its PLT): the resolver says
 * so on descriptor SLOW_FD_SAID and waits for a byte on SLOW_FD_GO.  Both
 * by system calls of its own, which need no relocation; linked with
 * -z now, so that the loader's last writes go to pages it makes
 * read-only after.
 */
#include <stddef.h>
#include <stdlib.h>
#include <sys/syscall.h>

#include "tests/attach/plugin.h"

void *(*const slow_malloc_ptr)(size_t) = malloc;

static long
sys3(long nr, long a, long b, long c)
{
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a), "S"(b), "d"(c)
			 : "rcx", "r11", "memory");
	return ret;
}

static int
answer(void)
{
	return SLOW_ANSWER;
}

static int (*resolve_answer(void))(void)
{
	char c = 'r';

	sys3(SYS_write, SLOW_FD_SAID, (long)&c, 1);
	sys3(SYS_read, SLOW_FD_GO, (long)&c, 1);
	return answer;
}

int slow_answer(void) __attribute__((ifunc("resolve_answer")));

int
slow_call(void)
{
	return slow_answer(); /* through its PLT: a JUMP_SLOT of the IFUNC */
}
