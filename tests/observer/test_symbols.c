/* SPDX-License-Identifier: MIT */
/*
 * test_symbols.c - naming frames from a module list the target wrote
 * (symbols.h).  The list is the target's, so a path may name anything: a
 * FIFO, which a plain open() would wait on for ever, is skipped, and the
 * modules that are ELF files are still used.
 */
#include <limits.h>
#include <link.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "symbols.h"

__attribute__((noinline)) static int
mstat_test_named_function(int x)
{
	__asm__ volatile("" : "+r"(x));
	return x + 1;
}

/* The load address of this program (the first object listed). */
static int
first_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	*(uint64_t *)arg = info->dlpi_addr;
	return 1;
}

static void
on_alarm(int sig)
{
	(void)sig;
	static const char msg[] = "FAIL: reading the module list hangs\n";
	(void)!write(2, msg, sizeof(msg) - 1);
	_exit(1);
}

static void
test_fifo_in_module_list(void **state)
{
	char dir[] = "/tmp/mstat-test-symbols.XXXXXX", fifo[64], exe[PATH_MAX];
	struct mstat_profile_module mods[2];
	struct mstat_profile p = { .nmodules = 2, .modules = mods };
	uint64_t bias = 0;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	memset(mods, 0, sizeof(mods));
	memcpy(mods[0].path, fifo, strlen(fifo) + 1);
	mods[0].start = 0x1000;
	mods[0].end = 0x2000;
	dl_iterate_phdr(first_object, &bias);
	assert_non_null(realpath("/proc/self/exe", exe));
	assert_true(strlen(exe) < sizeof(mods[1].path));
	memcpy(mods[1].path, exe, strlen(exe) + 1);
	mods[1].bias = bias;
	mods[1].start = (uint64_t)(uintptr_t)mstat_test_named_function - 4096;
	mods[1].end = (uint64_t)(uintptr_t)mstat_test_named_function + 4096;

	signal(SIGALRM, on_alarm);
	alarm(10);
	struct mstat_symbols *s = mstat_symbols_new(&p);
	alarm(0);
	assert_non_null(s);
	struct mstat_frame f;
	mstat_symbols_lookup(s, (uint64_t)(uintptr_t)mstat_test_named_function + 4, &f);
	assert_ptr_equal(f.module, &mods[1]);
	assert_non_null(f.function);
	assert_string_equal(f.function, "mstat_test_named_function");
	mstat_symbols_free(s);
	unlink(fifo);
	rmdir(dir);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fifo_in_module_list),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
