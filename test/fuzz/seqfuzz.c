/*
 * seqfuzz: for seeds S..S+N-1, a random but reproducible sequence of
 * operations on legacy provided buffers, each on a fresh ring, printed as a
 * canonical transcript on stdout.  An ordinary liburing program: run it
 * natively and under bufsel and compare (difffuzz does, batch by batch).
 * With --rings some of a sequence's groups are buffer rings
 * (IORING_REGISTER_PBUF_RING) that the program fills itself.
 *
 *   seqfuzz [--seed S] [--count N] [--ops M] [--verbose] [--compat 5.6]
 *           [--rings] [--wait-ms T] [--dir DIR]
 *
 * Transcript of one sequence:
 *   seq <seed> ring=<setup flags> groups=<g0>,<g1>,<g2>
 *   register ring <bgid> entries=<n> -> <ret>     --rings: each ring group
 *   step <k>
 *   write <endpoint> <bytes>          the program wrote, then waited
 *   ring-add r<k> ring=<bgid> bids=<first>[..<last>] len=<l> [null|noaccess|kernel]
 *   ring-add r<k> ring=<bgid> back bids=<bid>,...   --rings: the program
 *                                     published entries: fresh, or given back
 *   eof <endpoint>                    the program shut the writing side
 *   submit <n> -> <ret>...            one batch of n SQEs
 *   cqe ud=<i> <OP> res=<r> flags=<f> [buf=<bid>] [more] [nonempty]
 *       [at=<provide>.<index> fnv=<hash> ok | BAD(...)] [stays [overwritten]]
 *       (at=r<k>.<index>: memory ring addition k gave)
 *   lost ud=<i> <OP>                  due, but no CQE within --wait-ms
 *   finish
 *   ring <bgid> added=<n> taken=<n> status=<ret> head=<h> unregister=<ret>
 *   end ops=<sqes> cqes=<n> bufs=<n> lost=<n> bad=<n>
 * With --verbose, "# sqe ..." lines show every SQE before its submission.
 * Exit status 0 unless the program itself failed (2).
 */
#define _GNU_SOURCE
#include "test/fuzz/seqfuzz.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

struct seqfuzz_env fuzz_env;

#define ARENA_LEN (16u << 20)
#define NOACCESS_LEN (1u << 20)
/* Buffers at one address in every process: whether a PROVIDE's range passes
 * the end of user space (a length beyond MAX_RW_COUNT) must not depend on
 * where ASLR put the arena, or the two arms would disagree.  bufsel maps
 * no page of its own here by default; under trap = seccomp its gate page
 * is one random page of [0x100000000000, 0x500000000000), which this
 * mapping (MAP_FIXED_NOREPLACE) would meet once in 2^22 runs, and say so. */
#define ARENA_ADDR 0x300000000000ull
#define BAD_FD 200	/* closed; bufsel's own descriptors sit near the top of the range */

__attribute__((noreturn, format(printf, 1, 2))) static void fail(const char *fmt, ...)
{
	va_list ap;
	fflush(fuzz_env.out);
	fputs("seqfuzz: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

/*
 * Reads of the file must complete at submission, or a transcript would
 * depend on when an io-wq worker ran (tmpfs and memfd punt every buffered
 * read to io-wq; ext4 and xfs serve cached pages at once).
 */
static void check_file_reads_inline(const char *dir)
{
	struct io_uring ring;
	static char buf[8][64];
	int ret = io_uring_queue_init(8, &ring, 0);
	if (ret < 0)
		fail("io_uring_queue_init: %s", strerror(-ret));
	for (int round = 0; round < 4; round++) {
		for (int i = 0; i < 8; i++)
			io_uring_prep_read(io_uring_get_sqe(&ring), fuzz_env.file_fd, buf[i], 64, (unsigned)i * 999);
		if (io_uring_submit(&ring) != 8)
			fail("submit: reads of the file");
		unsigned n = 0;
		struct io_uring_cqe *cqe;
		while (io_uring_peek_cqe(&ring, &cqe) == 0) {
			if (cqe->res != 64)
				fail("a read of the file returned %d", cqe->res);
			io_uring_cqe_seen(&ring, cqe);
			n++;
		}
		if (n != 8)
			fail("reads of a file in %s do not complete at submission (%u of 8 did): on tmpfs they "
			     "go to io-wq and their order is the scheduler's; use --dir on a disk file system",
			     dir, n);
	}
	io_uring_queue_exit(&ring);
}

static void make_file(const char *dir)
{
	static uint8_t data[FILE_LEN];
	for (uint32_t i = 0; i < FILE_LEN; i++)
		data[i] = stream_byte(0x5eedf11e, i);
	int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0)
		fail("O_TMPFILE in %s: %s", dir, strerror(errno));
	if (write(fd, data, FILE_LEN) != FILE_LEN || fsync(fd))
		fail("writing the file: %s", strerror(errno));
	/* Read-only from here: a request that should not write cannot.  Clean
	 * pages and no atime updates: nothing makes a read wait. */
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	int ro = open(path, O_RDONLY | O_CLOEXEC | O_NOATIME);
	if (ro < 0)
		ro = open(path, O_RDONLY | O_CLOEXEC);
	if (ro < 0)
		fail("reopening the file: %s", strerror(errno));
	close(fd);
	fuzz_env.file_fd = ro;
	fuzz_env.file_data = data;
	check_file_reads_inline(dir);
}

static void make_memory(void)
{
	const int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE;
	fuzz_env.arena_len = ARENA_LEN;
	fuzz_env.arena = mmap((void *)(uintptr_t)ARENA_ADDR, ARENA_LEN, PROT_READ | PROT_WRITE, flags, -1, 0);
	fuzz_env.noaccess_len = NOACCESS_LEN;
	fuzz_env.noaccess = mmap((void *)(uintptr_t)(ARENA_ADDR + ARENA_LEN), NOACCESS_LEN, PROT_NONE, flags, -1, 0);
	if (fuzz_env.arena != (void *)(uintptr_t)ARENA_ADDR ||
	    fuzz_env.noaccess != (void *)(uintptr_t)(ARENA_ADDR + ARENA_LEN))
		fail("mmap at 0x%llx: %s", ARENA_ADDR, strerror(errno));
	/* A buffer that ends exactly at the end of user space is only safe to
	 * hand out if nothing of the process lives there. */
	unsigned char vec;
	fuzz_env.user_end_free = true;
	for (uint64_t a = USER_END - 65536; a < USER_END; a += 4096)
		if (mincore((void *)(uintptr_t)a, 4096, &vec) == 0 || errno != ENOMEM)
			fuzz_env.user_end_free = false;
}

static void pipe_pair(int fd[2])
{
	if (pipe2(fd, O_CLOEXEC) < 0)
		fail("pipe2: %s", strerror(errno));
	fcntl(fd[1], F_SETFL, O_NONBLOCK);
}

static void sock_pair(int type, int fd[2])
{
	if (socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, fd) < 0)
		fail("socketpair: %s", strerror(errno));
	fcntl(fd[1], F_SETFL, O_NONBLOCK);
}

static void endpoints_open(struct seq *s)
{
	int p0[2], p1[2], st[2], dg[2], wo[2];
	pipe_pair(p0);
	pipe_pair(p1);
	pipe_pair(wo);
	sock_pair(SOCK_STREAM, st);
	sock_pair(SOCK_DGRAM, dg);
	const struct endpoint proto[NEP] = {
		[E_FILE] = { "file", EP_FILE, fuzz_env.file_fd, -1 },
		[E_PIPE0] = { "pipe0", EP_PIPE, p0[0], p0[1] },
		[E_PIPE1] = { "pipe1", EP_PIPE, p1[0], p1[1] },
		[E_STREAM] = { "stream", EP_STREAM, st[0], st[1] },
		[E_DGRAM] = { "dgram", EP_DGRAM, dg[0], dg[1] },
		[E_WRONLY] = { "wronly", EP_WRONLY, wo[1], wo[0] },
		[E_BADFD] = { "badfd", EP_BADFD, BAD_FD, -1 },
	};
	for (int e = 0; e < NEP; e++) {
		s->ep[e] = proto[e];
		s->ep[e].salt = (uint32_t)rng_next(&s->rng);
		s->ep[e].consumer = -1;
	}
}

static void endpoints_close(struct seq *s)
{
	for (int e = 0; e < NEP; e++) {
		struct endpoint *ep = &s->ep[e];
		if (ep->kind == EP_FILE || ep->kind == EP_BADFD)
			continue;
		close(ep->fd);
		if (ep->peer >= 0)
			close(ep->peer);
	}
}

/* Group ids: small, the extremes, anything; distinct. */
static void pick_groups(struct seq *s)
{
	for (int g = 0; g < SEQ_GROUPS + 1; g++) {
		uint16_t id;
		bool dup;
		do {
			uint32_t pick = rng_below(&s->rng, 100);
			id = pick < 35 ? (uint16_t)rng_below(&s->rng, 8)
			   : pick < 50 ? (uint16_t)(65535 - rng_below(&s->rng, 2))
				       : (uint16_t)rng_next(&s->rng);
			dup = false;
			for (int k = 0; k < g; k++)
				dup |= (k < SEQ_GROUPS ? s->group[k] : s->unknown_group) == id;
		} while (dup);
		if (g < SEQ_GROUPS)
			s->group[g] = id;
		else
			s->unknown_group = id;
	}
}

static unsigned pick_ring_flags(struct seq *s)
{
	static const unsigned extra[] = {
		0, 0, 0, 0, IORING_SETUP_SUBMIT_ALL, IORING_SETUP_COOP_TASKRUN,
		IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG,
		IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_SINGLE_ISSUER,
	};
	unsigned f = IORING_SETUP_CQSIZE;
	unsigned pick = rng_below(&s->rng, sizeof(extra) / sizeof(extra[0]));
	if (!s->compat56)
		f |= extra[pick];
	return f;
}

/* --rings: each group a ring with probability 1/2, at least one, of 8 to
 * 64 entries. */
static void pick_rings(struct seq *s)
{
	while (!s->ring_mask)
		for (int g = 0; g < SEQ_GROUPS; g++)
			if (rng_pct(&s->rng, 50))
				s->ring_mask |= 1u << g;
	for (int g = 0; g < SEQ_GROUPS; g++)
		if (s->ring_mask & (1u << g))
			s->rings[g].entries = 8u << rng_below(&s->rng, 4);
}

/* The ring's memory: one page per group index, mapped once and registered
 * afresh by every sequence (bufsel reads a ring where it is: it must stay
 * mapped while registered). */
static struct io_uring_buf_ring *ring_page(int g)
{
	if (!fuzz_env.ring_mem[g]) {
		void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			fail("mmap: %s", strerror(errno));
		fuzz_env.ring_mem[g] = m;
	}
	memset(fuzz_env.ring_mem[g], 0, 4096);
	return fuzz_env.ring_mem[g];
}

static void rings_register(struct seq *s)
{
	for (int g = 0; g < SEQ_GROUPS; g++) {
		if (!(s->ring_mask & (1u << g)))
			continue;
		struct seq_ring *r = &s->rings[g];
		r->br = ring_page(g);
		io_uring_buf_ring_init(r->br);
		struct io_uring_buf_reg reg = { .ring_addr = (uintptr_t)r->br, .ring_entries = r->entries,
						.bgid = s->group[g] };
		int ret = io_uring_register_buf_ring(&s->ring, &reg, 0);
		out_line("register ring %u entries=%u -> %d\n", s->group[g], r->entries, ret);
		if (ret < 0)
			s->ring_mask &= ~(1u << g);	/* a legacy group that never gets a buffer */
	}
}

/* IORING_REGISTER_PBUF_STATUS and struct io_uring_buf_status (6.8):
 * liburing 2.3 predates them. */
#define REGISTER_PBUF_STATUS 26
struct buf_status {
	uint32_t buf_group;
	uint32_t head;
	uint32_t resv[8];
};

/* The head as the kernel (or bufsel) has it must be where the CQEs put it:
 * one entry for every CQE that reported a buffer of the ring, but for the
 * two kinds the kernel does not commit (seq_reap.c, ring_committed). */
static void rings_unregister(struct seq *s)
{
	for (int g = 0; g < SEQ_GROUPS; g++) {
		if (!(s->ring_mask & (1u << g)))
			continue;
		const struct seq_ring *r = &s->rings[g];
		struct buf_status st = { .buf_group = s->group[g] };
		int sret = (int)syscall(__NR_io_uring_register, s->ring.ring_fd, REGISTER_PBUF_STATUS, &st, 1);
		sret = sret < 0 ? -errno : sret;
		int ret = io_uring_unregister_buf_ring(&s->ring, s->group[g]);
		out_line("ring %u added=%u taken=%u status=%d head=%u unregister=%d\n", s->group[g], r->added,
			 r->taken, sret, sret ? 0 : st.head, ret);
	}
}

static void run_seq(struct seq *s, uint64_t seed, bool compat56, bool rings)
{
	memset(s, 0, sizeof(*s));
	s->seed = seed;
	s->rng = seed * 0x2545f4914f6cdd1dull + 0x1f2e3d4c5b6a7988ull;
	s->compat56 = compat56;
	s->arena = fuzz_env.arena;
	if (rng_pct(&s->rng, 30)) {
		uint64_t hi;
		do
			hi = rng_next(&s->rng) & ~0xffffull;
		while ((hi >> 48) == 0xb5e1);	/* bufsel's tag space: a documented difference */
		s->ud_high = hi;
	}
	pick_groups(s);
	s->ring_flags = pick_ring_flags(s);
	if (rings)
		pick_rings(s);
	/* Room for every CQE a phase can bring (a multishot receive of 2047 queued
	 * bytes into 1-byte buffers): a full CQ ends a multishot stream in the
	 * kernel, which bufsel's shadow CQ does not do (docs/reliability.md). */
	struct io_uring_params p = { .flags = s->ring_flags, .cq_entries = 4096 };
	int ret = io_uring_queue_init_params(32, &s->ring, &p);
	if (ret < 0)
		fail("seed %llu: io_uring_queue_init_params(flags 0x%x): %s", (unsigned long long)seed,
		     s->ring_flags, strerror(-ret));
	endpoints_open(s);
	lseek(fuzz_env.file_fd, 0, SEEK_SET);	/* what a READ at offset -1 starts from */
	out_line("seq %llu ring=0x%x groups=%u,%u,%u\n", (unsigned long long)seed, s->ring_flags, s->group[0],
		 s->group[1], s->group[2]);
	rings_register(s);
	unsigned steps = 2 + rng_below(&s->rng, 7);
	for (s->step = 1; s->step <= steps && s->nops + 1 < fuzz_env.max_ops; s->step++) {
		out_line("step %u\n", s->step);
		gen_writes(s);
		gen_step(s);
	}
	gen_finish(s);
	rings_unregister(s);
	out_line("end ops=%u cqes=%u bufs=%u lost=%u bad=%u\n", s->nops, s->ncqe, s->nbuf, s->nlost, s->nbad);
	io_uring_queue_exit(&s->ring);
	endpoints_close(s);
	for (unsigned k = 0; k < s->nprov; k++)
		free(s->prov[k].spent);
	fflush(fuzz_env.out);
}

static const struct {
	const char *name;
	unsigned bit;
} known_names[] = {
	{ "prep-fail-in-chain", KNOWN_PREP_FAIL_IN_CHAIN },
	{ "recv-batch", KNOWN_RECV_BATCH },
	{ "cancel-order", KNOWN_CANCEL_ORDER },
	{ "link-order", KNOWN_LINK_ORDER },
	{ "all", ~0u },
};

static unsigned known_by_name(const char *name)
{
	for (size_t i = 0; i < sizeof(known_names) / sizeof(known_names[0]); i++)
		if (!strcmp(name, known_names[i].name))
			return known_names[i].bit;
	fprintf(stderr, "seqfuzz: --known: '%s' is none of prep-fail-in-chain, recv-batch, "
			"cancel-order, link-order, all\n", name);
	exit(2);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: seqfuzz [--seed S] [--count N] [--ops M] [--verbose] [--compat 5.6]\n"
		   "               [--rings] [--wait-ms T] [--dir DIR] [--known NAME]...\n"
		   "  runs sequences S..S+N-1 (default 1, 1), at most M SQEs each (default 40),\n"
		   "  each on a fresh ring, and prints their transcripts; --compat 5.6 leaves out\n"
		   "  what Linux 5.6 lacks besides buffer selection; --rings makes some groups\n"
		   "  buffer rings the program fills itself; a due completion missing for\n"
		   "  T ms (default 3000) is lost; the regular file goes in DIR (default $TMPDIR\n"
		   "  or /tmp), which must be on a disk file system; --known NAME also makes what\n"
		   "  a known difference of bufsel needs (prep-fail-in-chain, recv-batch,\n"
		   "  cancel-order, link-order, all; docs/reliability.md)\n");
}

static unsigned long long number(const char *opt, const char *v, unsigned long long max)
{
	char *end;
	errno = 0;
	unsigned long long n = strtoull(v, &end, 10);
	if (errno || end == v || *end || n > max) {
		fprintf(stderr, "seqfuzz: %s: '%s' is not a number in 0..%llu\n", opt, v, max);
		exit(2);
	}
	return n;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "seed", required_argument, NULL, 's' }, { "count", required_argument, NULL, 'n' },
		{ "ops", required_argument, NULL, 'o' }, { "verbose", no_argument, NULL, 'v' },
		{ "compat", required_argument, NULL, 'c' }, { "wait-ms", required_argument, NULL, 'w' },
		{ "dir", required_argument, NULL, 'd' }, { "help", no_argument, NULL, 'h' },
		{ "known", required_argument, NULL, 'k' }, { "rings", no_argument, NULL, 'r' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long long seed = 1, count = 1;
	bool compat56 = false, rings = false;
	const char *dir = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	fuzz_env.max_ops = 40;
	fuzz_env.wait_ms = 3000;
	for (int c; (c = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
		switch (c) {
		case 's': seed = number("--seed", optarg, ULLONG_MAX); break;
		case 'n': count = number("--count", optarg, ULLONG_MAX); break;
		case 'o': fuzz_env.max_ops = (unsigned)number("--ops", optarg, SEQ_MAX_OPS - 1); break;
		case 'v': fuzz_env.verbose = true; break;
		case 'r': rings = true; break;
		case 'k': fuzz_env.known |= known_by_name(optarg); break;
		case 'w': fuzz_env.wait_ms = (int)number("--wait-ms", optarg, 600000); break;
		case 'd': dir = optarg; break;
		case 'c':
			if (strcmp(optarg, "5.6")) {
				fprintf(stderr, "seqfuzz: --compat: only 5.6 is known\n");
				return 2;
			}
			compat56 = true;
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc || fuzz_env.max_ops < 2) {
		usage(stderr);
		return 2;
	}
	static char outbuf[1 << 20];
	fuzz_env.out = stdout;
	setvbuf(stdout, outbuf, _IOFBF, sizeof(outbuf));
	if (fcntl(BAD_FD, F_GETFD) >= 0)
		fail("fd %d is open; it must not be", BAD_FD);
	make_memory();
	make_file(dir);
	static struct seq s;
	for (unsigned long long i = 0; i < count; i++)
		run_seq(&s, seed + i, compat56, rings);
	return 0;
}
