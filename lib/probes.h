/* SPDX-License-Identifier: MIT */
/*
 * probes.h - the USDT probes of sampled allocations and their frees, for
 * eBPF profilers that take the library's samples rather than sample on
 * their own: in provider otel_memory,
 *
 *	alloc(ptr, size, weighted_bytes)  a block just sampled: its address,
 *	                                  the size the counters count it
 *	                                  with, the bytes it stands for
 *	free(ptr)                         a sampled block being freed (or
 *	                                  reallocated), while still live
 *
 * as the OpenTelemetry eBPF profiler's memory profiling design names them
 * (design-docs/00003-memory-profiling of open-telemetry/opentelemetry-
 * ebpf-profiler, at 79ab4b94 of 2026-08-19; docs/profiles.md).  Its
 * `weighted_bytes` is S / (1 - exp(-S / R)), summing to the bytes
 * allocated: the sample's weight here (countdown.h), so weighted_bytes /
 * size, what it counts objects with, is the number of blocks the sample
 * stands for.
 *
 * Each is fired behind its semaphore, which a tracer increments while it
 * is attached: without one, a sampled allocation pays one load, and an
 * unsampled one nothing (neither is on its path).  The arguments are in
 * the first argument registers at the probe (%rdi, %rsi, %rdx; x0 to x2
 * on aarch64), as the note's descriptors say: the profiler's first
 * version reads them from there, not from the descriptors.  Built
 * without sys/sdt.h (systemtap-sdt-dev), there are no probes.  The
 * library mstat-attach injects has them too, in a memfd, which a tracer
 * names by /proc/PID/map_files (docs/profiles.md).
 */
#ifndef MSTAT_LIB_PROBES_H
#define MSTAT_LIB_PROBES_H

#include <stdint.h>

#include "lib/writer.h"

#if defined(MSTAT_USDT) && (defined(__x86_64__) || defined(__aarch64__))
#define _SDT_HAS_SEMAPHORES 1
/* Registers only: the operands below are bound to the argument ones. */
#define STAP_SDT_ARG_CONSTRAINT r
#include <sys/sdt.h>

#if defined(__x86_64__)
#define MSTAT_PROBE_REG0 "rdi"
#define MSTAT_PROBE_REG1 "rsi"
#define MSTAT_PROBE_REG2 "rdx"
#else
#define MSTAT_PROBE_REG0 "x0"
#define MSTAT_PROBE_REG1 "x1"
#define MSTAT_PROBE_REG2 "x2"
#endif

/* Nonzero while a tracer is attached to the probe: the kernel counts its
 * uprobes in it (lib/profile.c defines them, in section .probes). */
extern unsigned short otel_memory_alloc_semaphore MSTAT_HIDDEN;
extern unsigned short otel_memory_free_semaphore MSTAT_HIDDEN;

/* Relaxed: a flag another party sets, which orders nothing. */
#define MSTAT_PROBE_ON(sem) \
	__builtin_expect(__atomic_load_n(&(sem), __ATOMIC_RELAXED) != 0, 0)

static inline __attribute__((always_inline)) void
mstat_probe_alloc(uintptr_t p, uint64_t size, uint64_t weighted_bytes)
{
	if (MSTAT_PROBE_ON(otel_memory_alloc_semaphore)) {
		register uint64_t a0 __asm__(MSTAT_PROBE_REG0) = p;
		register uint64_t a1 __asm__(MSTAT_PROBE_REG1) = size;
		register uint64_t a2 __asm__(MSTAT_PROBE_REG2) = weighted_bytes;
		STAP_PROBE3(otel_memory, alloc, a0, a1, a2);
	}
}

static inline __attribute__((always_inline)) void
mstat_probe_free(uintptr_t p)
{
	if (MSTAT_PROBE_ON(otel_memory_free_semaphore)) {
		register uint64_t a0 __asm__(MSTAT_PROBE_REG0) = p;
		STAP_PROBE1(otel_memory, free, a0);
	}
}
#else
static inline void
mstat_probe_alloc(uintptr_t p, uint64_t size, uint64_t weighted_bytes)
{
	(void)p;
	(void)size;
	(void)weighted_bytes;
}

static inline void
mstat_probe_free(uintptr_t p)
{
	(void)p;
}
#endif

#endif /* MSTAT_LIB_PROBES_H */
