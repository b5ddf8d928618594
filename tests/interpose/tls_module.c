/* SPDX-License-Identifier: MIT */
/*
 * tls_module.c - a module with thread-local storage, for test_tls.c:
 * loaded under many names, each a module of its own.
 */
static __thread int counter[8];

int mstat_test_tls_touch(void);

int
mstat_test_tls_touch(void)
{
	return ++counter[0];
}
