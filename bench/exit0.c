/* SPDX-License-Identifier: MIT */
/* exit0.c - a program that only exits 0, linked statically: exec()ing it
 * loads no library, preloaded or not (bench/start.c's forks that exec). */
int
main(void)
{
	return 0;
}
