// SPDX-License-Identifier: MIT
/*
 * service.cc - a multi-threaded C++ program for the `programs` benchmark
 * (bench/programs.py): what a small service does with its heap.
 *
 *   mstat-bench-service [THREADS [REQUESTS]]
 *
 * Each of THREADS threads parses "requests" (lines of text) into messages
 * (std::string fields, a std::vector of tokens, held by std::shared_ptr)
 * and hands them, in batches, to the next thread through a queue; each
 * thread serves the messages it is handed: it looks the key up in its own
 * std::unordered_map of std::string to a small record, appends to it,
 * formats a reply with std::ostringstream, and every so often sorts and
 * trims its table.  So most blocks are small, made by one thread and freed
 * by another, in many size classes: the allocation pattern the library
 * counts in real services.  Batches keep the threads from waiting on each
 * other (on a shared 2-CPU machine a wait per message would make the wall
 * time measure the scheduler).  Prints the count of requests and a
 * checksum of the replies, the same in every run.
 */
#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace {

struct Message {
	std::string key;
	std::string body;
	std::vector<std::string> tokens;
};

using Batch = std::vector<std::shared_ptr<Message>>;

/* Unbounded: every thread hands over as many batches as it is handed. */
class Queue {
public:
	void push(Batch b)
	{
		std::lock_guard<std::mutex> l(mu_);
		q_.push_back(std::move(b));
		not_empty_.notify_one();
	}
	/* A batch; empty once the queue is closed and drained.  Waits only
	 * if `wait`, else may return an empty batch at once. */
	Batch pop(bool wait)
	{
		std::unique_lock<std::mutex> l(mu_);
		if (wait)
			not_empty_.wait(l, [&] { return !q_.empty() || done_; });
		if (q_.empty())
			return {};
		Batch b = std::move(q_.front());
		q_.pop_front();
		return b;
	}
	void close()
	{
		std::lock_guard<std::mutex> l(mu_);
		done_ = true;
		not_empty_.notify_all();
	}

private:
	std::mutex mu_;
	std::condition_variable not_empty_;
	std::deque<Batch> q_;
	bool done_ = false;
};

struct Record {
	uint64_t hits = 0;
	std::vector<uint32_t> lengths;
	std::string last;
};

uint64_t
xorshift(uint64_t &s)
{
	s ^= s << 13;
	s ^= s >> 7;
	s ^= s << 17;
	return s;
}

std::string
request_line(uint64_t &s)
{
	std::string line = "user" + std::to_string(xorshift(s) % 5000) + " ";
	unsigned words = 2 + xorshift(s) % 12;
	for (unsigned i = 0; i < words; i++) {
		line += std::string(1 + xorshift(s) % 24, char('a' + xorshift(s) % 26));
		line += ' ';
	}
	return line;
}

std::shared_ptr<Message>
parse(const std::string &line)
{
	auto m = std::make_shared<Message>();
	std::istringstream in(line);
	in >> m->key;
	std::string w;
	while (in >> w)
		m->tokens.push_back(w);
	m->body = line.substr(m->key.size());
	return m;
}

class Server {
public:
	uint64_t serve(const Message &m)
	{
		Record &r = table_[m.key];
		r.hits++;
		for (const auto &t : m.tokens)
			r.lengths.push_back(uint32_t(t.size()));
		r.last = m.body;
		std::ostringstream reply;
		reply << m.key << ':' << r.hits << ':' << m.tokens.size();
		uint64_t sum = reply.str().size();
		if (++served_ % 4096 == 0)
			sum += trim();
		return sum;
	}

private:
	uint64_t trim()
	{
		std::vector<std::pair<std::string, uint64_t>> top;
		for (auto &e : table_) {
			top.emplace_back(e.first, e.second.hits);
			if (e.second.lengths.size() > 64)
				std::vector<uint32_t>(e.second.lengths.end() - 16,
						      e.second.lengths.end())
					.swap(e.second.lengths);
		}
		std::sort(top.begin(), top.end(), [](const auto &a, const auto &b) {
			return a.second != b.second ? a.second > b.second : a.first < b.first;
		});
		return top.empty() ? 0 : top.front().second;
	}

	std::unordered_map<std::string, Record> table_;
	uint64_t served_ = 0;
};

/* Thread `i` of `n`: makes `requests` messages for thread i + 1 and
 * serves what thread i - 1 makes for it. */
uint64_t
run(unsigned i, unsigned n, unsigned long requests, std::vector<Queue> &q)
{
	Server server;
	uint64_t s = 88172645463325252u + i, sum = 0;
	Queue &out = q[(i + 1) % n], &in = q[i];

	for (unsigned long done = 0; done < requests;) {
		Batch b;
		for (unsigned k = 0; k < 256 && done < requests; k++, done++)
			b.push_back(parse(request_line(s)));
		out.push(std::move(b));
		for (auto &m : in.pop(false))
			sum += server.serve(*m);
	}
	out.close();
	for (Batch b; !(b = in.pop(true)).empty();)
		for (auto &m : b)
			sum += server.serve(*m);
	return sum;
}

} // namespace

int
main(int argc, char **argv)
{
	unsigned threads = argc > 1 ? unsigned(std::atoi(argv[1])) : 2;
	unsigned long requests = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 150000;
	if (threads < 1 || threads > 64 || requests < 1) {
		std::fprintf(stderr, "usage: mstat-bench-service [THREADS [REQUESTS]]\n");
		return 2;
	}
	std::vector<Queue> q(threads);
	std::vector<uint64_t> sums(threads);
	std::vector<std::thread> workers;
	for (unsigned i = 0; i < threads; i++)
		workers.emplace_back([&, i] { sums[i] = run(i, threads, requests, q); });
	for (auto &w : workers)
		w.join();
	uint64_t total = 0;
	for (auto v : sums)
		total += v;
	std::printf("requests %lu checksum %llu\n", requests * threads,
		    (unsigned long long)total);
	return 0;
}
