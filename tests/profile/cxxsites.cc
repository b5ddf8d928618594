// SPDX-License-Identifier: MIT
//
// cxxsites.cc - a C++ program with one leaking call site and one
// churning one, through operator new, for the heap profile's tests over
// HTTP (e2e.py http).  Plain: it is run with libmstatshm preloaded.
//
//   cxxsites   shop::Cart::keep() keeps 65536 blocks of 1 KiB (64 MiB
//              live); shop::Ledger::churn() allocates and deletes 65536
//              blocks of 8 KiB (512 MiB allocated, none live); then prints
//              "ready", the usable sizes of a block of each (what the
//              counters and the profile count them with), and waits for
//              stdin to close; each "g" read before then makes
//              shop::Cart::grow() keep 16384 blocks of 1 KiB more (16 MiB),
//              and prints "grown".
#include <cstdio>
#include <cstdlib>
#include <malloc.h>
#include <new>

namespace shop {

struct Item {
	char bytes[1024];
};

struct Page {
	char bytes[8192];
};

class Cart {
public:
	// One block kept: the leaking site.
	__attribute__((noinline)) static Item *keep()
	{
		Item *p = new Item;
		__asm__ volatile("" : : "r"(p) : "memory"); // a frame of its own
		return p;
	}
	// One block kept later, at a site of its own.
	__attribute__((noinline)) static Item *grow()
	{
		Item *p = new Item;
		__asm__ volatile("" : : "r"(p) : "memory");
		return p;
	}
};

class Ledger {
public:
	// One block made and deleted: the churning site.  Returns the
	// usable size of the block.
	__attribute__((noinline)) static std::size_t churn()
	{
		Page *p = new Page;
		std::size_t usable = malloc_usable_size(p);
		p->bytes[0] = 1;
		__asm__ volatile("" : : "r"(p) : "memory");
		delete p;
		return usable;
	}
};

} // namespace shop

enum { KEEPS = 65536, CHURNS = 65536, GROWS = 16384 };

static shop::Item *kept[KEEPS];

int
main()
{
	for (int i = 0; i < KEEPS; i++)
		kept[i] = shop::Cart::keep();
	std::size_t churn_usable = 0;
	for (int i = 0; i < CHURNS; i++)
		churn_usable = shop::Ledger::churn();
	std::printf("ready %zu %zu\n", malloc_usable_size(kept[0]), churn_usable);
	std::fflush(stdout);
	int c;
	while ((c = std::getchar()) != EOF) {
		if (c != 'g')
			continue;
		for (int i = 0; i < GROWS; i++)
			(void)shop::Cart::grow();
		std::printf("grown\n");
		std::fflush(stdout);
	}
	return 0;
}
