/*
 * seqfuzz: random, reproducible operation sequences on legacy provided
 * buffers (with --rings, some groups buffer rings instead), run on a fresh
 * ring per seed, printed as a canonical transcript (docs/reliability.md,
 * "Differential fuzzing").  The same binary runs natively and under
 * bufsel; difffuzz compares the two transcripts.
 *
 * Everything a transcript says is a pure function of the seed and of what
 * the kernel (or bufsel) decided: results, flags, buffer ids, which provided
 * buffer holds the bytes and whether they are the bytes the data model
 * expects.  Never an address, a pid, a time or an fd number.
 *
 * The pieces: seqfuzz.c runs sequences (options, setup, steps, teardown);
 * seq_gen.c chooses operations and writes their SQEs; seq_reap.c reaps
 * completions, decides what must still complete, and checks every buffer.
 */
#ifndef BUFSEL_TEST_SEQFUZZ_H
#define BUFSEL_TEST_SEQFUZZ_H

#include <liburing.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/uio.h>

#define SEQ_MAX_OPS 512		/* SQEs of one sequence, the final cancel included */
#define SEQ_MAX_PROV 512	/* PROVIDE_BUFFERS and ring additions of one sequence */
#define SEQ_GROUPS 3		/* the buffer groups a sequence works on */
#define SEQ_RING_MAX 64		/* entries of a buffer ring (--rings), at most */
#define SEQ_DGRAMS 8		/* datagrams queued at once (AF_UNIX allows 10 by default) */
#define SEQ_QUEUED_MAX 2048	/* bytes queued on one pipe or stream socket at most */
#define FILE_LEN 20011		/* the regular file: odd, so reads end mid-buffer */
#define USER_END 0x7ffffffff000ull	/* TASK_SIZE_MAX, x86-64 4-level paging */
#define SPAN_MAX (1u << 16)	/* the bytes of a buffer the program owns, at most */

/* The splitmix64 generator: one per sequence, seeded by the seed alone. */
static inline uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline uint32_t rng_below(uint64_t *s, uint32_t n)
{
	return (uint32_t)(((rng_next(s) >> 32) * n) >> 32);
}

static inline bool rng_pct(uint64_t *s, unsigned percent)
{
	return rng_below(s, 100) < percent;
}

/* The files a request can name.  Streams carry bytes that are a function of
 * (salt, position), so a reader knows what it must find. */
enum ep_kind {
	EP_FILE,	/* a regular file on a disk file system: reads complete at submission */
	EP_PIPE,
	EP_STREAM,	/* AF_UNIX SOCK_STREAM socketpair */
	EP_DGRAM,	/* AF_UNIX SOCK_DGRAM socketpair */
	EP_WRONLY,	/* a pipe's write end: a read fails after selecting */
	EP_BADFD,	/* no such descriptor: fails before selecting */
};

enum { E_FILE, E_PIPE0, E_PIPE1, E_STREAM, E_DGRAM, E_WRONLY, E_BADFD, NEP };

struct endpoint {
	const char *name;
	enum ep_kind kind;
	int fd;			/* what requests name */
	int peer;		/* where the program writes, or -1 */
	bool eof;		/* the writing side is shut */
	uint32_t salt;
	uint64_t wpos, rpos;	/* stream bytes written and consumed */
	struct { uint64_t start; uint32_t len; } dq[SEQ_DGRAMS + 2];
	unsigned dn;		/* datagrams queued */
	uint64_t fpos;		/* EP_FILE: the file position a READ at offset -1 uses */
	int consumer;		/* the op that reads it now (one at a time), or -1 */
};

/* One buffer range a PROVIDE_BUFFERS gave, or buffers the program published
 * on a ring; a re-provide or a give-back names its origin. */
struct prov {
	int op;			/* the PROVIDE's op index; -1: a ring addition */
	unsigned add;		/* a ring addition's number in the sequence, from 1 */
	uint16_t bgid;
	uint32_t off, count, len;
	char *base;		/* NULL: memory the program cannot read (none, or PROT_NONE) */
	uint8_t marker;		/* every byte of the range before the kernel writes */
	bool dirty;		/* a selection left its entry at the head: bytes of it may remain */
	int origin;		/* a re-provide of buffer origin_idx of prov origin, else -1 */
	uint32_t origin_idx;
	int res;		/* the PROVIDE's res, 1 until its CQE came; 0 on a ring */
	uint8_t *spent;		/* per buffer: its bytes were delivered and checked */
};

enum op_kind {
	K_PROVIDE, K_REPROVIDE, K_REMOVE, K_READ, K_READV, K_RECV, K_RECVMSG, K_RECV_MULTI,
	K_RECVMSG_MULTI, K_NOP, K_BADSEL, K_CANCEL, K_CANCEL_ANY, NKINDS
};

struct op {
	uint64_t ud;
	uint8_t kind;
	int8_t ep;		/* endpoint read from, or -1 */
	uint16_t bgid;
	uint8_t sqe_flags;
	bool submitted, done;
	bool always_due;	/* completes without data: an error, a file, a NOP, ... */
	bool prep_fail;		/* the kernel rejects it at submission */
	bool cancelled;		/* a cancel found it: its CQE must come */
	bool lost;
	int chain_prev;		/* the op before it in its link chain, or -1 */
	uint32_t want;		/* sqe len or iov_len: 0 is the whole buffer */
	uint64_t off;		/* READ: the offset */
	int msg_flags;
	int prov;		/* PROVIDE: its prov index, or -1 */
	uint64_t target;	/* CANCEL: the user_data it names */
	unsigned ncqe;
	struct iovec iov[2];
	struct msghdr msg;
	char name[112];		/* RECVMSG: room for a source address */
};

/* A group that is a buffer ring (--rings): the program's view of it. */
struct seq_ring {
	struct io_uring_buf_ring *br;	/* its entries, in the program's memory */
	uint32_t entries;		/* a power of two */
	uint32_t added;			/* entries published (the tail) */
	uint32_t taken;			/* entries CQEs reported: the head, as far as the program knows */
	struct { int prov; uint32_t idx; } slot[SEQ_RING_MAX];	/* what each entry holds */
};

struct seq {
	uint64_t seed;
	uint64_t rng;
	struct io_uring ring;
	unsigned ring_flags;
	struct endpoint ep[NEP];
	struct op op[SEQ_MAX_OPS];
	unsigned nops;
	struct prov prov[SEQ_MAX_PROV];
	unsigned nprov;
	uint16_t group[SEQ_GROUPS];
	uint16_t unknown_group;	/* never provided in this sequence */
	uint64_t ud_high;	/* the high bits of every user_data of the sequence */
	bool compat56;		/* only what exists on Linux 5.6 besides buffer selection */
	unsigned ring_mask;	/* --rings: bit g, s->group[g] is a buffer ring */
	struct seq_ring rings[SEQ_GROUPS];
	unsigned nadds;		/* ring additions so far */
	uint64_t armed[SEQ_MAX_OPS / 64];	/* what the last CANCEL_ANY could find */
	unsigned step;
	unsigned ncqe, nbuf, nlost, nbad;
	char *arena;		/* this sequence's share of the process arena */
	size_t arena_used;
};

/* The process-wide resources every sequence shares (seqfuzz.c). */
struct seqfuzz_env {
	int file_fd;
	const uint8_t *file_data;	/* FILE_LEN bytes, the file's content */
	char *arena;
	size_t arena_len;
	char *noaccess;			/* PROT_NONE, noaccess_len bytes */
	size_t noaccess_len;
	struct io_uring_buf_ring *ring_mem[SEQ_GROUPS];	/* a page each, reused by every sequence */
	bool user_end_free;		/* nothing is mapped just below USER_END */
	bool verbose;
	unsigned known;		/* the known differences (docs/reliability.md) to make anyway */
	unsigned max_ops;
	int wait_ms;
	FILE *out;
};
extern struct seqfuzz_env fuzz_env;

/* The byte at position pos of a stream with this salt. */
static inline uint8_t stream_byte(uint32_t salt, uint64_t pos)
{
	uint64_t z = pos * 0x9e3779b97f4a7c15ull ^ ((uint64_t)salt << 32 | salt);
	z = (z ^ (z >> 29)) * 0xbf58476d1ce4e5b9ull;
	return (uint8_t)(z >> 40);
}

static inline uint32_t fnv1a(const void *p, size_t n)
{
	const unsigned char *s = p;
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ s[i]) * 16777619u;
	return h;
}

/* The known differences between bufsel and the kernel that the generator
 * avoids unless asked (--known NAME). */
enum known_diff {
	KNOWN_PREP_FAIL_IN_CHAIN = 1 << 0,
	KNOWN_RECV_BATCH = 1 << 1,
	KNOWN_CANCEL_ORDER = 1 << 2,
	KNOWN_LINK_ORDER = 1 << 3,
};

/* seq_gen.c */
void gen_step(struct seq *s);		/* builds and submits one batch */
void gen_writes(struct seq *s);		/* the program writes to pipes and sockets */
void gen_finish(struct seq *s);		/* the end: every pending request completes */
const char *op_name(const struct op *o);

/* seq_reap.c */
void reap_settle(struct seq *s);	/* reaps until nothing due is left */
void reap_run_task_work(struct seq *s);	/* runs what the ring deferred, reaps nothing */
void reap_note_write(struct seq *s, int ep, const uint8_t *data, uint32_t n);
struct op *op_of_ud(struct seq *s, uint64_t ud);
bool op_blocked(const struct seq *s, const struct op *o);
bool ep_readable(const struct endpoint *e);

/* The ring group bgid is, or NULL for a legacy group. */
static inline struct seq_ring *seq_ring_of(struct seq *s, uint16_t bgid)
{
	for (int g = 0; g < SEQ_GROUPS; g++)
		if (s->group[g] == bgid)
			return s->ring_mask & (1u << g) ? &s->rings[g] : NULL;
	return NULL;
}

#define out_line(...) fprintf(fuzz_env.out, __VA_ARGS__)

#endif
