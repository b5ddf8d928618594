/* SPDX-License-Identifier: MIT */
/*
 * exit0.c - a program that only exits 0: linked statically, without libc
 * (-nostdlib), its entry point the exit system call.  exec()ing it loads
 * no library, preloaded or not, and runs no libc start-up (whose queries
 * of the CPU's caches cost hundreds of microseconds in a VM): what a fork
 * whose child exec()s at once costs is the fork's (bench/start.c).
 */
void _start(void) __attribute__((noreturn));

void
_start(void)
{
#if defined(__x86_64__)
	__asm__ volatile("mov $60, %eax\n\txor %edi, %edi\n\tsyscall");
#elif defined(__aarch64__)
	__asm__ volatile("mov x8, #93\n\tmov x0, #0\n\tsvc #0");
#else
#error "exit0.c: no exit system call for this architecture"
#endif
	__builtin_unreachable();
}
