/*
 * protocol.pml - a Spin model of the writer/reader protocol of
 * docs/design.md, under sequential consistency (the barriers' job; the
 * design doc argues that part).
 *
 * Writer A allocates objects and hands them to writer B, which frees
 * them; each section adds to two counters (count and bytes) in two steps.
 * B's thread takes its slot late, raising slots_used (F) just before its
 * first section.  One reader at a time (the flock) reads again and again,
 * and may die after any step; a read that gives up on a stalled slot is
 * the same as one that dies after rotating.
 *
 * Checked in every snapshot: no section is half in (count == bytes), no
 * free without its allocation (frees <= allocs), and once both writers
 * are done before a read begins, the snapshot is exact.
 *
 * -DNO_CATCHUP drops step 1, -DNO_WAIT the handshake's wait, and
 * -DSTALE_USED handshakes only the slots used before the rotation: each
 * must fail (tests/model/check.sh).  GENS is the number of generations,
 * chosen by epoch % GENS: 4, as in the segment; -DGENS=3 checks Go's.
 */
#ifndef GENS
#define GENS 4
#endif
#ifndef N
#define N 2            /* sections per writer */
#endif
#ifndef MAXCRASH
#define MAXCRASH 2     /* reader deaths */
#endif
#ifndef READS
#define READS 3        /* reads that complete */
#endif

byte seq[2];
byte epoch = 0;
byte synced = 0;
byte used = 1;         /* slot 0 (A) is in use from the start */
byte ac[2 * GENS]; byte ab[2 * GENS]; /* [slot * GENS + gen]: alloc count, bytes */
byte fc[2 * GENS]; byte fb[2 * GENS]; /* free count, free bytes */
byte token = 0;         /* objects handed from A to B */
bool lock = 0;
byte done = 0;

inline section_begin(s, g)
{
	seq[s] = seq[s] + 1;    /* (A) odd */
	g = epoch % GENS        /* (B) */
}

inline section_end(s)
{
	seq[s] = seq[s] + 1     /* (C) even */
}

active proctype A()
{
	byte i = 0, g;
	do
	:: i < N ->
		section_begin(0, g);
		ac[g] = ac[g] + 1;
		ab[g] = ab[g] + 1;
		section_end(0);
		token++;
		i++
	:: else -> break
	od;
	done++
}

active proctype B()
{
	byte i = 0, g;
	do
	:: i < N ->
		token > 0;
		token--;
		if
		:: i == 0 -> used = 2   /* (F) before its first section */
		:: else -> skip
		fi;
		section_begin(1, g);
		fc[GENS + g] = fc[GENS + g] + 1;
		fb[GENS + g] = fb[GENS + g] + 1;
		section_end(1);
		i++
	:: else -> break
	od;
	done++
}

#define CRASH                                                   \
	if                                                      \
	:: crashes < MAXCRASH -> crashes++; lock = 0; goto restart \
	:: true -> skip                                         \
	fi

#ifdef NO_WAIT
#define WAIT_FOR(s, v) skip
#else
#define WAIT_FOR(s, v) (seq[s] != v)
#endif

/* (E): slots whose seq is odd are waited on until it moves. */
inline handshake(u)
{
	s = 0;
	do
	:: s < u ->
		v = seq[s];
		if
		:: v % 2 == 1 -> WAIT_FOR(s, v)
		:: else -> skip
		fi;
		s++
	:: else -> break
	od
}

/* Adds generation g of slots [0, u) into the sums, one load a step. */
inline add_gen(u, g)
{
	s = 0;
	do
	:: s < u ->
		sac = sac + ac[s * GENS + g];
		sab = sab + ab[s * GENS + g];
		sfc = sfc + fc[s * GENS + g];
		sfb = sfb + fb[s * GENS + g];
		s++
	:: else -> break
	od
}

active proctype Reader()
{
	byte e, u, s, v, k, reads = 0, crashes = 0;
	byte sac, sab, sfc, sfb;
	bool writers_done;
restart:
	do
	:: reads < READS ->
		atomic { lock == 0 -> lock = 1 };
		writers_done = (done == 2);
		CRASH;
		e = epoch;
#ifndef NO_CATCHUP
		if
		:: synced != e ->       /* step 1: catch up */
			u = used;
			handshake(u);
			CRASH;
			synced = e;
			CRASH
		:: else -> skip
		fi;
#endif
		u = used;               /* step 2: base */
		sac = 0; sab = 0; sfc = 0; sfb = 0;
		add_gen(u, (e + 1) % GENS);
		CRASH;
		epoch = e + 1;          /* step 3: (D) */
		e = e + 1;
		CRASH;
#ifndef STALE_USED
		u = used;               /* (F), after (D) */
#endif
		handshake(u);           /* step 4 */
		u = used;
		CRASH;
		k = 1;                  /* step 5: every generation but e's */
		do
		:: k < GENS ->
			add_gen(u, (e + k) % GENS);
			k++
		:: else -> break
		od;
		assert(sac == sab && sfc == sfb);  /* consistent */
		assert(sfc <= sac);                /* causally closed */
		assert(!writers_done || (sac == N && sfc == N)); /* exact */
		synced = e;             /* (G) */
		CRASH;
		lock = 0;
		reads++
	:: else -> break
	od
}
