// SPDX-License-Identifier: MIT
//
// test_cxx.cc - C++ new and delete are counted, exactly.
//
// Every form of operator new and delete, between two snapshots of the
// process's own counters; the difference must be exactly what was done,
// per size class.  On glibc, libstdc++'s operators call malloc and free;
// stacked on jemalloc or tcmalloc (LD_PRELOAD, MSTAT_TEST_NEXT), their own
// operators run and the library counts them in its operator wrappers.
// A std::bad_alloc thrown by the next operator new must reach the caller
// through the library, and count nothing.  With every block sampled
// (MSTAT_SAMPLE_BYTES=1), a sampled block's stack starts in the function
// that called new, not in the library's operator.
#include <malloc.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include <mstatshm.h>
#include "shm/sizeclass.h"

namespace {

struct tally {
	uint64_t c[MSTAT_CLASS_COUNT][4];
};

tally want;
mstat_snapshot s0, s1;

void
did_alloc(void *p)
{
	size_t u = malloc_usable_size(p);
	unsigned c = mstat_size_class(u);
	want.c[c][0]++;
	want.c[c][1] += u;
}

void
will_free(void *p)
{
	size_t u = malloc_usable_size(p);
	unsigned c = mstat_size_class(u);
	want.c[c][2]++;
	want.c[c][3] += u;
}

struct alignas(256) wide {
	char bytes[300];
};

struct small {
	int a, b, c;
};

volatile size_t huge = SIZE_MAX / 4;

// The call site, alone in a section whose bounds the linker gives.
#define SITE __attribute__((noinline, noclone, section("mstat_cxx_site")))

SITE char *
site_new()
{
	char *p = new char[100];
	__asm__ volatile("" : : "r"(p) : "memory"); // no tail call
	return p;
}

SITE char *
site_new_nothrow()
{
	char *p = new (std::nothrow) char[200];
	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}

// Retried while another reader (a mstat-top on this machine) holds it.
int
self_snapshot(mstat_snapshot *s)
{
	int rc;
	for (int i = 0; (rc = mstat_self_snapshot(s)) == -EBUSY && i < 30; i++)
		;
	return rc;
}

} // namespace

extern "C" {
extern const char __start_mstat_cxx_site[], __stop_mstat_cxx_site[];
long long cxx_sampled_in(uintptr_t lo, uintptr_t hi); // cxx_sites.c
}

namespace {

// 0, or 1 if the sampled stacks of site_new() do not start there.
int
check_sites()
{
	const char *e = std::getenv("MSTAT_SAMPLE_BYTES");
	if (!e || std::strcmp(e, "1") != 0)
		return 0;
	char *kept[20];
	for (int i = 0; i < 10; i++) {
		kept[i] = site_new();
		kept[10 + i] = site_new_nothrow();
	}
	long long n = cxx_sampled_in((uintptr_t)__start_mstat_cxx_site,
				     (uintptr_t)__stop_mstat_cxx_site);
	for (char *p : kept)
		delete[] p;
	if (n == 20)
		return 0;
	std::fprintf(stderr, "sampled at the call sites of new: %lld of 20\n", n);
	return 1;
}

} // namespace

int
main()
{
	const char *preload = std::getenv("LD_PRELOAD");
	if (preload && std::strstr(preload, "vgpreload")) {
		std::fprintf(stderr, "SKIP: valgrind replaces operator new everywhere\n");
		return 77;
	}
	if (self_snapshot(&s0) != 0 || self_snapshot(&s0) != 0) {
		std::fprintf(stderr, "not counting: %s\n", mstat_self_status());
		return 1;
	}
	std::memset(&want, 0, sizeof(want));

	small *a = new small{1, 2, 3};
	did_alloc(a);
	char *b = new char[5000];
	did_alloc(b);
	small *c = new (std::nothrow) small;
	did_alloc(c);
	char *d = new (std::nothrow) char[70000];
	did_alloc(d);
	wide *e = new wide;
	did_alloc(e);
	wide *f = new wide[3];
	did_alloc(f);
	wide *g = new (std::nothrow) wide;
	did_alloc(g);
	void *h = ::operator new(12345);
	did_alloc(h);
	void *i = ::operator new[](333, std::align_val_t(64), std::nothrow);
	did_alloc(i);
	will_free(a);
	delete a;
	will_free(b);
	delete[] b;
	will_free(c);
	::operator delete(c, sizeof(small)); // sized
	will_free(d);
	::operator delete[](d, std::nothrow);
	will_free(e);
	delete e; // aligned, sized
	will_free(f);
	delete[] f;
	will_free(g);
	::operator delete(g, std::align_val_t(alignof(wide)), std::nothrow);
	will_free(h);
	::operator delete(h);
	will_free(i);
	::operator delete[](i, std::align_val_t(64));

	if (self_snapshot(&s1) != 0)
		return 1;

	// The failed new counts nothing; the exception object it throws is
	// allocated and freed (libstdc++ mallocs it), so live bytes stay.
	mstat_snapshot t0, t1;
	bool threw = false;
	self_snapshot(&t0);
	try {
		char *never = new char[huge];
		std::printf("%p\n", static_cast<void *>(never));
	} catch (const std::bad_alloc &) {
		threw = true;
	}
	self_snapshot(&t1);
	int bad = !threw || mstat_live_bytes(&t1.total) != mstat_live_bytes(&t0.total) ||
		  t1.total.alloc_bytes - t0.total.alloc_bytes > 4096;
	if (bad)
		std::fprintf(stderr, "new char[huge]: %s, %llu bytes counted\n",
			     threw ? "threw" : "did not throw std::bad_alloc",
			     (unsigned long long)(t1.total.alloc_bytes - t0.total.alloc_bytes));
	// A failed new runs the new-handler before it throws: once here, as
	// the handler takes itself out.
	static int handled;
	std::set_new_handler([] {
		handled++;
		std::set_new_handler(nullptr);
	});
	threw = false;
	try {
		char *never = new char[huge];
		std::printf("%p\n", static_cast<void *>(never));
	} catch (const std::bad_alloc &) {
		threw = true;
	}
	if (!threw || handled != 1) {
		std::fprintf(stderr, "new-handler ran %d times, %s\n", handled,
			     threw ? "then threw" : "no std::bad_alloc");
		bad = 1;
	}
	for (unsigned k = 0; k < MSTAT_CLASS_COUNT; k++) {
		const mstat_counts &x = s0.classes[k], &y = s1.classes[k];
		const uint64_t got[4] = {y.alloc_count - x.alloc_count,
					 y.alloc_bytes - x.alloc_bytes,
					 y.free_count - x.free_count,
					 y.free_bytes - x.free_bytes};
		for (int n = 0; n < 4; n++) {
			if (got[n] == want.c[k][n])
				continue;
			std::fprintf(stderr, "class %u counter %d: counted %llu, did %llu\n",
				     k, n, (unsigned long long)got[n],
				     (unsigned long long)want.c[k][n]);
			bad = 1;
		}
	}
	bad |= check_sites();
	std::printf("%s\n", bad ? "FAIL" : "ok");
	return bad;
}
