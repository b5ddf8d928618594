// SPDX-License-Identifier: MIT
// cxx_work.cc - mstat-test-attach-cxx: a multithreaded C++ workload for
// mstat-attach's tests (e2e.py programs).  Eight threads build maps,
// vectors, strings and shared pointers, and throw and catch, in rounds;
// "ready" after the first round; each round's digest the same in every
// run, attached or not.  At its stdin's first line, once attached, the
// main thread holds blocks of a size nothing else has ("held N"); at the
// second it frees them ("freed"); at the third the threads stop.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

static std::atomic<bool> stop{false};

static unsigned long
round_digest(unsigned seed)
{
	std::map<int, std::string> m;
	std::vector<std::shared_ptr<std::vector<int>>> v;
	unsigned long h = seed;
	for (int i = 0; i < 3000; i++) {
		m[(i * 131 + seed) % 1000] += std::to_string(i);
		auto p = std::make_shared<std::vector<int>>(i % 50, i);
		v.push_back(p);
		try {
			if (i % 97 == 0)
				throw std::runtime_error("e" + std::to_string(i));
		} catch (const std::exception &e) {
			h = h * 31 + e.what()[1];
		}
	}
	for (auto &kv : m)
		for (char c : kv.second)
			h = h * 131 + (unsigned char)c;
	for (auto &p : v)
		h = h * 7 + p->size();
	return h;
}

int
main()
{
	const unsigned n = 8;
	std::vector<unsigned long> first(n), digest(n);
	std::vector<std::thread> t;
	for (unsigned i = 0; i < n; i++)
		first[i] = round_digest(i);
	std::cout << "ready" << std::endl;
	for (unsigned i = 0; i < n; i++)
		t.emplace_back([i, &digest] {
			unsigned long d = 0;
			while (!stop.load()) {
				/* A pause between rounds: eight threads that never
				 * sleep, on a machine of two CPUs, are preempted
				 * inside updates too often for any read to wait
				 * them out (docs/design.md, "Readers"). */
				std::this_thread::sleep_for(std::chrono::milliseconds(2));
				unsigned long r = round_digest(i);
				if (d && r != d)
					d = 1; // a round computed otherwise: changed
				else
					d = r;
			}
			digest[i] = d;
		});
	std::string line;
	std::getline(std::cin, line);
	std::vector<char *> held;
	for (int i = 0; i < 5; i++)
		held.push_back(new char[777777]);
	std::cout << "held " << held.size() << std::endl;
	std::getline(std::cin, line);
	for (char *p : held)
		delete[] p;
	std::cout << "freed" << std::endl;
	std::getline(std::cin, line);
	stop = true;
	for (auto &th : t)
		th.join();
	/* Each thread's rounds all gave the first round's digest (or it
	 * made none): "1". */
	for (unsigned i = 0; i < n; i++)
		std::cout << first[i] << " " << (digest[i] == 0 || digest[i] == first[i])
			  << "\n";
	return 0;
}
