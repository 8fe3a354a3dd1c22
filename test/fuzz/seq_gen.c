/*
 * Choosing a sequence's operations: the program's writes between steps, one
 * batch of SQEs per step (with link chains), and the end, where every pending
 * request is made to complete.
 *
 * What the generator never makes, because the transcript would then depend
 * on timing or on what bufsel documents as different (docs/reliability.md,
 * "What is excluded, and why"):
 *  - two readers of one pipe or socket at once (outside one link chain):
 *    which of two pending requests data wakes first would pick the buffer;
 *  - IOSQE_ASYNC, IOSQE_FIXED_FILE, IOSQE_CQE_SKIP_SUCCESS, IOSQE_IO_DRAIN,
 *    LINK_TIMEOUT, TIMEOUT (but refused for IOSQE_BUFFER_SELECT), user_data
 *    with 0xb5e1 in its top 16 bits;
 *  - reads of files whose reads do not complete at submission (seqfuzz.c
 *    checks the file system);
 *  - more data queued than a pipe or socket takes without blocking;
 *  - the shapes of bufsel's known differences, unless --known asks for them
 *    (known_allowed: prep-fail-in-chain, recv-batch, cancel-order,
 *    link-order).
 */
#define _GNU_SOURCE
#include "test/fuzz/seqfuzz.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define ARENA_PER_PROVIDE (256u << 10)

/* What one batch has decided so far. */
struct batch {
	int chain;		/* the link chain the next op joins */
	int prev;		/* the op before it in the batch, or -1 */
	bool chain_bufsel;	/* the chain holds an SQE bufsel acts on at submission */
	unsigned locked;	/* groups (bit = index in s->group) later SQEs leave alone */
	unsigned first;		/* the batch's first op */
	bool multishot;		/* a multishot receive is in the batch */
	bool linked;		/* the op being built follows another in its chain */
	bool cancels;		/* a cancel is in the batch */
	bool any_cancel;	/* a CANCEL_ANY is in the batch */
	unsigned later;		/* groups that link successors of this batch use */
	int ep_chain[NEP];	/* the chain that reads an endpoint in this batch, or -1 */
};

typedef bool gen_fn(struct seq *s, struct op *o, struct io_uring_sqe *sqe, struct batch *b);

static gen_fn gen_provide, gen_reprovide, gen_remove, gen_read, gen_recv, gen_nop, gen_badsel,
	gen_cancel, gen_cancel_any;

static const struct kind_info {
	const char *name;
	unsigned weight;	/* out of the sum of all weights */
	bool compat56;		/* exists on Linux 5.6 (buffer selection aside) */
	gen_fn *gen;
} kinds[NKINDS] = {
	[K_PROVIDE] = { "PROVIDE", 22, true, gen_provide },
	[K_REPROVIDE] = { "REPROVIDE", 8, true, gen_reprovide },
	[K_REMOVE] = { "REMOVE", 6, true, gen_remove },
	[K_READ] = { "READ", 18, true, gen_read },
	[K_READV] = { "READV", 6, true, gen_read },
	[K_RECV] = { "RECV", 14, true, gen_recv },
	[K_RECVMSG] = { "RECVMSG", 6, true, gen_recv },
	/* 5.6 never reads a receive's ioprio: no multishot there (6.0). */
	[K_RECV_MULTI] = { "RECV_MULTI", 5, false, gen_recv },
	[K_RECVMSG_MULTI] = { "RECVMSG_MULTI", 3, false, gen_recv },
	[K_NOP] = { "NOP", 4, true, gen_nop },
	[K_BADSEL] = { "BADSEL", 3, true, gen_badsel },
	[K_CANCEL] = { "CANCEL", 5, true, gen_cancel },
	[K_CANCEL_ANY] = { "CANCEL_ANY", 1, false, gen_cancel_any },
};

const char *op_name(const struct op *o)
{
	return kinds[o->kind].name;
}

static void verbose_sqe(const struct seq *s, const struct op *o, const struct io_uring_sqe *q)
{
	char tgt[16];
	if (!fuzz_env.verbose)
		return;
	out_line("# sqe ud=%u %s opcode=%u fd=%s(%d) flags=0x%x ioprio=0x%x len=%u off=%llu addr=%s "
		 "bgid=%u rw_flags=0x%x splice_fd_in=%d chain_prev=%d\n",
		 (unsigned)(o->ud & 0xffff), op_name(o), q->opcode, o->ep >= 0 ? s->ep[o->ep].name : "-", q->fd,
		 q->flags, q->ioprio, q->len, (unsigned long long)q->off,
		 !q->addr ? "0" : o->kind == K_CANCEL ? (snprintf(tgt, sizeof(tgt), "ud:%u", (unsigned)(q->addr & 0xffff)), tgt) : "ptr",
		 q->buf_group, q->rw_flags, q->splice_fd_in, o->chain_prev + 1);
}

/* ---- operands ---- */

static bool known_allowed(unsigned k)
{
	return fuzz_env.known & k;
}

/* One of the sequence's groups this batch may still use (none of those in
 * `avoid` either), or -1. */
static int free_group_but(struct seq *s, const struct batch *b, unsigned avoid)
{
	unsigned n = 0, no = b->locked | avoid;
	/* Two link successors of one batch on one group: the kernel issues
	 * them in task work in the order their predecessors completed, bufsel
	 * in the order it reaps their chains' sentinels (known differences). */
	if (b->linked && !known_allowed(KNOWN_LINK_ORDER))
		no |= b->later;
	for (int g = 0; g < SEQ_GROUPS; g++)
		n += !(no & (1u << g));
	if (!n)
		return -1;
	unsigned k = rng_below(&s->rng, n);
	for (int g = 0; g < SEQ_GROUPS; g++)
		if (!(no & (1u << g)) && !k--)
			return g;
	return -1;
}

/* May the op being built use group gi (see free_group_but)? */
static bool group_usable(const struct batch *b, int gi)
{
	unsigned no = b->locked | (b->linked && !known_allowed(KNOWN_LINK_ORDER) ? b->later : 0);
	return gi >= 0 && !(no & (1u << gi));
}

static int group_index(const struct seq *s, uint16_t bgid)
{
	for (int g = 0; g < SEQ_GROUPS; g++)
		if (s->group[g] == bgid)
			return g;
	return -1;
}

/* A group, now and then one that never had a buffer: *unknown says so.  A
 * receive leaves alone the groups of the batch's link successors: the
 * kernel issues those after the batch's receives ran, bufsel when their
 * chain's sentinel comes back, between two steps of a multishot stream. */
static uint16_t consumer_group(struct seq *s, const struct batch *b, bool recv, bool *unknown)
{
	int g = free_group_but(s, b, recv && !known_allowed(KNOWN_RECV_BATCH) ? b->later : 0);
	*unknown = g < 0 || rng_pct(&s->rng, 8);
	return *unknown ? s->unknown_group : s->group[g];
}

/*
 * Under bufsel a receive that bufsel hands to the kernel with a buffer gives
 * that buffer back (end of file, -EFAULT, ...) only when its CQE is reaped,
 * and a multishot receive takes its next buffers then too: after the rest
 * of its batch was drained.  The kernel does both before it looks at the
 * next SQE.  The rest of the batch leaves such a group alone
 * (docs/reliability.md, known differences).
 */
static void lock_after(struct seq *s, struct batch *b, const struct op *o)
{
	int g = group_index(s, o->bgid);
	if (g < 0 || o->prep_fail || known_allowed(KNOWN_RECV_BATCH))
		return;
	if (o->kind == K_RECV_MULTI || o->kind == K_RECVMSG_MULTI || o->kind == K_RECV || o->kind == K_RECVMSG)
		b->locked |= 1u << g;
}

/*
 * Cancelling a multishot receive of the same batch: under bufsel its first
 * step may be over and the next not yet issued.  A cancel that is itself a
 * link successor runs in task work after the batch, where the kernel and
 * bufsel issue the batch's other link successors at different moments: it
 * only targets requests of earlier batches (known differences).
 */
/* The groups of the requests still to run behind t in its chain: a cancel
 * of t starts them, in task work. */
static unsigned successor_groups(const struct seq *s, const struct op *t)
{
	unsigned g = 0;
	for (unsigned i = (unsigned)(t - s->op) + 1; i < s->nops; i++) {
		const struct op *o = &s->op[i];
		int p = o->chain_prev;
		while (p >= 0 && &s->op[p] != t)
			p = s->op[p].chain_prev;
		int gi = p >= 0 && !o->done ? group_index(s, o->bgid) : -1;
		if (gi >= 0)
			g |= 1u << gi;
	}
	return g;
}

/* Would cancelling every armed request start, in task work, the rest of two
 * chains on one group? */
static bool successors_overlap(const struct seq *s)
{
	unsigned seen = 0;
	for (unsigned i = 0; i < s->nops; i++) {
		const struct op *o = &s->op[i];
		if (!o->submitted || o->done || op_blocked(s, o))
			continue;
		unsigned g = successor_groups(s, o);
		if (seen & g)
			return true;
		seen |= g;
	}
	return false;
}

static bool cancel_may_target(const struct seq *s, const struct op *t, unsigned idx,
			      const struct batch *b)
{
	bool multi = t->kind == K_RECV_MULTI || t->kind == K_RECVMSG_MULTI;
	/* What a cancel starts runs in task work: not on a group the batch
	 * leaves alone, nor on one another link successor of it uses. */
	if (!t->done && (successor_groups(s, t) & (b->later | b->locked)) && !known_allowed(KNOWN_LINK_ORDER))
		return false;
	if (b->linked && (idx >= b->first || op_blocked(s, t)) && !known_allowed(KNOWN_CANCEL_ORDER))
		return false;	/* it may be issued by task work of this batch too */
	/* A request a cancel of this batch found stays findable until task
	 * work completes it: the kernel counts it again, bufsel (which
	 * cancels its own requests at once) does not. */
	for (unsigned i = b->first; i < s->nops && !known_allowed(KNOWN_CANCEL_ORDER); i++)
		if (s->op[i].kind == K_CANCEL && s->op[i].target == t->ud)
			return false;
	return !multi || idx < b->first || known_allowed(KNOWN_CANCEL_ORDER);
}

static uint32_t request_len(struct seq *s)
{
	uint32_t pick = rng_below(&s->rng, 100);
	if (pick < 30)
		return 0;
	if (pick < 65)
		return 1 + rng_below(&s->rng, 64);
	if (pick < 95)
		return 65 + rng_below(&s->rng, 4032);
	return 0x80000000u + rng_below(&s->rng, 1000);
}

static bool stream_like(enum ep_kind k)
{
	return k == EP_PIPE || k == EP_STREAM || k == EP_DGRAM;
}

/* May a new reader of endpoint e join this batch's current chain? */
static bool ep_free(const struct seq *s, const struct batch *b, int e)
{
	if (!stream_like(s->ep[e].kind))
		return true;
	if (b->ep_chain[e] >= 0)
		return b->ep_chain[e] == b->chain;
	return s->ep[e].consumer < 0;
}

/* Picks an endpoint by weight among those free; -1 if none is. */
static int pick_ep(struct seq *s, const struct batch *b, const unsigned weight[NEP])
{
	unsigned total = 0, w[NEP];
	for (int e = 0; e < NEP; e++)
		total += (w[e] = ep_free(s, b, e) ? weight[e] : 0);
	/* Before 5.18 a bad fd fails at submission and stops the batch: there
	 * BUFSEL_KERNEL=5.6 is not the native 6.18 it is compared with. */
	if (s->compat56) {
		total -= w[E_BADFD];
		w[E_BADFD] = 0;
	}
	if (!total)
		return -1;
	unsigned x = rng_below(&s->rng, total);
	for (int e = 0; e < NEP; e++) {
		if (x < w[e])
			return e;
		x -= w[e];
	}
	return -1;
}

static void take_ep(struct seq *s, struct op *o, struct batch *b, int e)
{
	o->ep = (int8_t)e;
	if (s->ep[e].kind == EP_FILE || s->ep[e].kind == EP_WRONLY || s->ep[e].kind == EP_BADFD)
		o->always_due = true;
	if (stream_like(s->ep[e].kind)) {
		if (s->ep[e].consumer < (int)(o - s->op))
			s->ep[e].consumer = (int)(o - s->op);
		b->ep_chain[e] = b->chain;
	}
}

/* ---- PROVIDE_BUFFERS and REMOVE_BUFFERS ---- */

enum mem_kind { MEM_ARENA, MEM_NULL, MEM_NOACCESS, MEM_KERNEL, MEM_WRAP, MEM_STRADDLE, MEM_END };

static bool gen_provide(struct seq *s, struct op *o, struct io_uring_sqe *sqe, struct batch *b)
{
	uint64_t *r = &s->rng;
	/* A ring's id takes no PROVIDE_BUFFERS (-EINVAL at issue): now and then
	 * all the same, the program's ring additions stand in for the rest. */
	int gi = free_group_but(s, b, s->ring_mask && !rng_pct(r, 5) ? s->ring_mask : 0);
	if (s->nprov == SEQ_MAX_PROV || gi < 0)
		return false;
	uint16_t bgid = s->group[gi];
	int32_t count;
	uint32_t pick = rng_below(r, 100);
	if (pick < 72)
		count = 1 + (int32_t)rng_below(r, 8);
	else if (pick < 89)
		count = 9 + (int32_t)rng_below(r, 56);
	else if (pick < 93)
		count = 1000 + (int32_t)rng_below(r, 4000);
	else if (pick < 95)
		count = 65536 - (int32_t)rng_below(r, 2);
	else {
		static const int32_t bad[] = { 0, -1, 65537, INT32_MIN };
		count = bad[rng_below(r, 4)];
	}
	uint32_t len;
	pick = rng_below(r, 100);
	if (pick < 55)
		len = 1 + rng_below(r, 32);
	else if (pick < 82)
		len = 33 + rng_below(r, 480);
	else if (pick < 96)
		len = 513 + rng_below(r, 3584);
	else if (pick < 98)
		len = 0;
	else
		len = 0x7ffff000u + rng_below(r, 0x2000);	/* beyond MAX_RW_COUNT */
	bool huge = len > SPAN_MAX;
	if (huge && count > 1)
		count = 1;	/* a second buffer would start gigabytes further on */
	uint64_t off;
	pick = rng_below(r, 100);
	if (pick < 70)
		off = rng_below(r, 16);
	else if (pick < 84)
		off = rng_below(r, 2048);
	else if (pick < 93 && count > 0 && count <= 65536) {
		int64_t v = 65536 - (int64_t)count - 1 + rng_below(r, 3);
		off = v < 0 ? 0 : (uint64_t)v;		/* last bid 65534, 65535 or one too far */
	} else if (pick < 97)
		off = 65535 - rng_below(r, 4);
	else {
		static const uint64_t bad[] = { 65536, 65537, 1ull << 32, UINT64_MAX };
		off = bad[rng_below(r, 4)];
	}
	bool plausible = count > 0 && count <= 65536 && len > 0;
	if (plausible && !huge && (uint64_t)count * len > ARENA_PER_PROVIDE)
		len = ARENA_PER_PROVIDE / (uint32_t)count ? ARENA_PER_PROVIDE / (uint32_t)count : 1;
	uint64_t size = plausible ? (uint64_t)count * len : 0;
	size_t reserve = huge ? SPAN_MAX : (size_t)size;

	pick = rng_below(r, 100);
	enum mem_kind mk = pick < 90 ? MEM_ARENA : pick < 92 ? MEM_NULL : pick < 94 ? MEM_NOACCESS
			 : pick < 96 ? MEM_KERNEL : pick < 97 ? MEM_WRAP : pick < 99 ? MEM_STRADDLE : MEM_END;
	if (mk == MEM_ARENA && s->arena_used + reserve + 8 > fuzz_env.arena_len)
		mk = MEM_NOACCESS;
	/* The kernel writes into whatever a selected buffer names: NULL and
	 * PROT_NONE ranges must hold nothing of the program's. */
	if (mk == MEM_NOACCESS && (huge || size > fuzz_env.noaccess_len))
		mk = MEM_KERNEL;
	if (mk == MEM_NULL && (huge || size > 65536))
		mk = MEM_KERNEL;
	if (mk == MEM_END && (!fuzz_env.user_end_free || huge || size > 65536 || !size))
		mk = MEM_STRADDLE;
	uint8_t marker = (uint8_t)rng_next(r);
	char *base = NULL;
	uint64_t addr = 0;
	switch (mk) {
	case MEM_ARENA:
		base = s->arena + s->arena_used + rng_below(r, 8);
		s->arena_used += reserve + 8;
		memset(base, marker, reserve);
		addr = (uint64_t)(uintptr_t)base;
		break;
	case MEM_NULL:
		break;
	case MEM_NOACCESS:
		addr = (uint64_t)(uintptr_t)fuzz_env.noaccess;
		break;
	case MEM_KERNEL:
		addr = 0xffff888000000000ull;
		break;
	case MEM_WRAP:
		addr = UINT64_MAX - rng_below(r, 4096);
		break;
	case MEM_STRADDLE:
		addr = USER_END - (size ? size : 1) + 1 + rng_below(r, 64);
		break;
	case MEM_END:
		addr = USER_END - size;
		break;
	}
	io_uring_prep_provide_buffers(sqe, NULL, (int)len, count, bgid, 0);
	sqe->addr = addr;
	sqe->len = len;
	sqe->off = off;
	pick = rng_below(r, 100);
	if (pick < 1)
		sqe->ioprio = 1;
	else if (pick < 2)
		sqe->rw_flags = 1;
	else if (pick < 3)
		sqe->splice_fd_in = 1;
	if (rng_pct(r, 1))
		sqe->flags |= IOSQE_BUFFER_SELECT;
	o->bgid = bgid;
	o->always_due = true;
	/* The range check is on the address as it is: a huge length from an
	 * arena high in the address space (no ASLR) passes the end too. */
	uint64_t end;
	bool range_bad = plausible && (__builtin_add_overflow(addr, size, &end) || end > USER_END);
	o->prep_fail = !plausible || off > 65535 || off + (uint64_t)count > 65536 || range_bad ||
		       sqe->ioprio || sqe->rw_flags || sqe->splice_fd_in || (sqe->flags & IOSQE_BUFFER_SELECT);
	if (plausible && off <= 65535) {
		struct prov *p = &s->prov[s->nprov];
		*p = (struct prov){ .op = (int)(o - s->op), .bgid = bgid, .off = (uint32_t)off,
				    .count = (uint32_t)count, .len = len, .base = base, .marker = marker,
				    .origin = -1, .res = 1, .spent = calloc((size_t)count, 1) };
		if (!p->spent) {
			fprintf(stderr, "seqfuzz: out of memory\n");
			exit(2);
		}
		o->prov = (int)s->nprov++;
	}
	return true;
}

/* The classic re-provide: a buffer whose data the program took goes back
 * to a group, same memory, same bid. */
static bool gen_reprovide(struct seq *s, struct op *o, struct io_uring_sqe *sqe, struct batch *b)
{
	if (s->nprov == SEQ_MAX_PROV)
		return false;
	unsigned n = 0;
	for (unsigned k = 0; k < s->nprov; k++)
		for (uint32_t i = 0; i < s->prov[k].count && i < 256; i++)
			n += s->prov[k].spent[i] == 1;
	if (!n)
		return false;
	unsigned want = rng_below(&s->rng, n);
	struct prov *p = NULL;
	uint32_t idx = 0;
	for (unsigned k = 0; k < s->nprov && !p; k++)
		for (uint32_t i = 0; i < s->prov[k].count && i < 256; i++)
			if (s->prov[k].spent[i] == 1 && !want--) {
				p = &s->prov[k];
				idx = i;
				break;
			}
	int gi = group_index(s, p->bgid);
	unsigned avoid = s->ring_mask && !rng_pct(&s->rng, 5) ? s->ring_mask : 0;
	if (!group_usable(b, gi) || (avoid & (1u << gi)) || rng_pct(&s->rng, 10))
		gi = free_group_but(s, b, avoid);
	if (gi < 0)
		return false;
	uint16_t bgid = s->group[gi];
	char *addr = p->base + (size_t)idx * p->len;
	uint8_t marker = (uint8_t)rng_next(&s->rng);
	memset(addr, marker, p->len < SPAN_MAX ? p->len : SPAN_MAX);
	p->spent[idx] = 2;
	struct prov *q = &s->prov[s->nprov];
	*q = (struct prov){ .op = (int)(o - s->op), .bgid = bgid, .off = p->off + idx, .count = 1,
			    .len = p->len, .base = addr, .marker = marker, .origin = (int)(p - s->prov),
			    .origin_idx = idx, .res = 1, .spent = calloc(1, 1) };
	if (!q->spent) {
		fprintf(stderr, "seqfuzz: out of memory\n");
		exit(2);
	}
	o->prov = (int)s->nprov++;
	io_uring_prep_provide_buffers(sqe, addr, (int)p->len, 1, bgid, (int)(p->off + idx));
	o->bgid = bgid;
	o->always_due = true;
	return true;
}

static bool gen_remove(struct seq *s, struct op *o, struct io_uring_sqe *sqe, struct batch *b)
{
	uint64_t *r = &s->rng;
	/* On a ring's id it is -EINVAL at issue: a quarter of the time. */
	int gi = free_group_but(s, b, s->ring_mask && !rng_pct(r, 25) ? s->ring_mask : 0);
	uint16_t bgid = gi < 0 || rng_pct(r, 12) ? s->unknown_group : s->group[gi];
	int32_t count;
	uint32_t pick = rng_below(r, 100);
	if (pick < 70)
		count = 1 + (int32_t)rng_below(r, 8);
	else if (pick < 86)
		count = 9 + (int32_t)rng_below(r, 100);
	else if (pick < 93)
		count = 65536;
	else {
		static const int32_t bad[] = { 0, -1, 65537 };
		count = bad[rng_below(r, 3)];
	}
	io_uring_prep_remove_buffers(sqe, count, bgid);
	pick = rng_below(r, 100);
	if (pick < 1)
		sqe->addr = 1;
	else if (pick < 2)
		sqe->len = 1;
	else if (pick < 3)
		sqe->off = 1;
	else if (pick < 4)
		sqe->ioprio = 1;
	else if (pick < 5)
		sqe->rw_flags = 1;
	if (rng_pct(r, 2))
		sqe->flags |= IOSQE_BUFFER_SELECT;
	o->bgid = bgid;
	o->always_due = true;
	o->prep_fail = count <= 0 || count > 65536 || sqe->addr || sqe->len || sqe->off || sqe->ioprio ||
		       sqe->rw_flags || (sqe->flags & IOSQE_BUFFER_SELECT);
	return true;
}

/* ---- the readers ---- */

static bool gen_read(struct seq *s, struct op *o, struct io_uring_sqe *sqe, struct batch *b)
{
	static const unsigned weight[NEP] = {
		[E_FILE] = 40, [E_PIPE0] = 15, [E_PIPE1] = 15, [E_STREAM] = 8, [E_DGRAM] = 5,
		[E_WRONLY] = 4, [E_BADFD] = 4,
	};
	uint64_t *r = &s->rng;
	int e = pick_ep(s, b, weight);
	if (e < 0)
		return false;
	take_ep(s, o, b, e);
	bool unknown;
	o->bgid = consumer_group(s, b, false, &unknown);
	if (unknown)
		o->always_due = true;	/* selects at its first attempt: -ENOBUFS at once */
	o->want = request_len(s);
	if (s->ep[e].kind == EP_FILE)
		o->off = rng_pct(r, 80) ? rng_below(r, FILE_LEN + 64) : (uint64_t)-1;
	else
		o->off = rng_pct(r, 85) ? 0 : rng_pct(r, 50) ? (uint64_t)-1 : 1 + rng_below(r, 100);
	/* The file position is shared like a stream's: a link successor reads
	 * at an offset of its own (link-order). */
	if (s->ep[e].kind == EP_FILE && o->off == (uint64_t)-1 && b->linked && !known_allowed(KNOWN_LINK_ORDER))
		o->off = 0;
	int fd = s->ep[e].fd;
	if (o->kind == K_READV) {
		unsigned nr = 1;
		uint32_t pick = rng_below(r, 100);
		o->iov[0] = (struct iovec){ NULL, o->want };
		o->iov[1] = (struct iovec){ NULL, 1 + rng_below(r, 64) };
		if (pick < 4)
			nr = 0;
		else if (pick < 8)
			nr = 2;
		io_uring_prep_readv(sqe, fd, o->iov, nr, o->off);
		if (pick >= 8 && pick < 10)
			sqe->addr = 16;		/* an iovec the kernel cannot read */
		if (pick < 10)
			o->always_due = o->prep_fail = true;
	} else {
		io_uring_prep_read(sqe, fd, NULL, o->want, o->off);
	}
	/* Not on the regular file: a page the kernel holds locked for a moment
	 * (compaction moving it) makes such a read -EAGAIN now and then. */
	if (rng_pct(r, 5) && s->ep[e].kind != EP_FILE) {
		sqe->rw_flags = RWF_NOWAIT;
		o->always_due = true;
	}
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = o->bgid;
	return true;
}

static bool gen_recv(struct seq *s, struct op *o, struct io_uring_sqe *sqe, struct batch *b)
{
	static const unsigned weight[NEP] = {
		[E_STREAM] = 45, [E_DGRAM] = 45, [E_FILE] = 5, [E_BADFD] = 5,
	};
	uint64_t *r = &s->rng;
	bool multi = o->kind == K_RECV_MULTI || o->kind == K_RECVMSG_MULTI;
	bool msg = o->kind == K_RECVMSG || o->kind == K_RECVMSG_MULTI;
	int e = pick_ep(s, b, weight);
	/* A multishot receive armed on a stream whose writer is gone: 6.18
	 * posts its data but may never post its end (when it polls first, or
	 * once it was queued again after 32 receives in a row), so natively
	 * it would hang; and under BUFSEL_KERNEL=5.6 its end's flags differ
	 * (docs/reliability.md). */
	if (e == E_STREAM && multi && (s->ep[e].eof || b->linked))
		e = -1;	/* a link successor may be armed only after the end */
	if (e < 0)
		return false;
	take_ep(s, o, b, e);
	bool unknown;
	o->bgid = consumer_group(s, b, true, &unknown);
	o->want = request_len(s);
	uint32_t pick = rng_below(r, 100);
	if (multi) {
		o->msg_flags = pick < 5 ? MSG_DONTWAIT : pick < 8 ? MSG_WAITALL : 0;
		if (o->msg_flags)
			o->always_due = true;
		if (o->msg_flags == MSG_WAITALL)
			o->prep_fail = true;
	} else {
		o->msg_flags = pick < 8 ? MSG_DONTWAIT : pick < 16 ? MSG_PEEK : 0;
		if (o->msg_flags == MSG_DONTWAIT)
			o->always_due = true;
	}
	int fd = s->ep[e].fd;
	if (msg) {
		unsigned nr = 1;
		pick = rng_below(r, 100);
		if (pick < 6)
			nr = 0;
		else if (pick < 11) {
			nr = 2;
			o->always_due = o->prep_fail = true;
		}
		o->iov[0] = (struct iovec){ NULL, o->want };
		o->iov[1] = (struct iovec){ NULL, 1 + rng_below(r, 64) };
		o->msg = (struct msghdr){ .msg_iov = o->iov, .msg_iovlen = nr };
		if (rng_pct(r, 30)) {
			o->msg.msg_name = o->name;
			o->msg.msg_namelen = multi ? 16 + rng_below(r, 96) : sizeof(o->name);
		}
		if (multi && rng_pct(r, 10)) {
			o->msg.msg_control = o->name;
			o->msg.msg_controllen = 16 + rng_below(r, 32);
		}
		io_uring_prep_recvmsg(sqe, fd, &o->msg, (unsigned)o->msg_flags);
	} else {
		io_uring_prep_recv(sqe, fd, NULL, o->want, o->msg_flags);
		if ((int32_t)o->want < 0)
			o->always_due = o->prep_fail = true;	/* the kernel reads len as an int */
	}
	if (multi)
		sqe->ioprio |= IORING_RECV_MULTISHOT;
	/* Not on a file that is no socket: its poll says "ready" and the request
	 * goes to io-wq, where its completion's place is the scheduler's. */
	bool poll_first = rng_pct(r, 5) && (s->ep[e].kind == EP_STREAM || s->ep[e].kind == EP_DGRAM);
	/* POLL_FIRST is 5.19: 5.6 ignores it, and selects at once. */
	poll_first = poll_first && !s->compat56;
	if (poll_first)
		sqe->ioprio |= IORING_RECVSEND_POLL_FIRST;
	/* The first attempt selects before it looks at the socket, unless it
	 * polls first: then nothing is selected until data (or an end) came. */
	if (unknown && !poll_first)
		o->always_due = true;
	if (multi && rng_pct(r, 2)) {
		o->always_due = o->prep_fail = true;	/* multishot without a buffer group: -EINVAL */
		return true;
	}
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = o->bgid;
	return true;
}

/* ---- the rest ---- */

static bool gen_nop(struct seq *s, struct op *o, struct io_uring_sqe *sqe, struct batch *b)
{
	(void)s;
	(void)b;
	io_uring_prep_nop(sqe);
	o->always_due = true;
	return true;
}

/* SQEs of opcodes that take no buffer, harmless if the kernel ran them. */
static void prep_nop(struct seq *s, struct io_uring_sqe *sqe)
{
	(void)s;
	io_uring_prep_nop(sqe);
}

static void prep_fsync(struct seq *s, struct io_uring_sqe *sqe)
{
	io_uring_prep_fsync(sqe, s->ep[E_FILE].fd, 0);
}

static void prep_poll(struct seq *s, struct io_uring_sqe *sqe)
{
	io_uring_prep_poll_add(sqe, s->ep[E_PIPE0].fd, POLLIN);
}

static void prep_write(struct seq *s, struct io_uring_sqe *sqe)
{
	static char one[1];
	io_uring_prep_write(sqe, s->ep[E_FILE].fd, one, 1, 0);	/* the file is read-only */
}

static void prep_timeout(struct seq *s, struct io_uring_sqe *sqe)
{
	(void)s;
	io_uring_prep_timeout(sqe, NULL, 0, 0);
}

/* IOSQE_BUFFER_SELECT on an opcode that takes no buffer: refused at submission. */
static bool gen_badsel(struct seq *s, struct op *o, struct io_uring_sqe *sqe, struct batch *b)
{
	static void (*const prep[])(struct seq *, struct io_uring_sqe *) = {
		prep_nop, prep_fsync, prep_poll, prep_write, prep_timeout,
	};
	(void)b;
	prep[rng_below(&s->rng, sizeof(prep) / sizeof(prep[0]))](s, sqe);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = s->unknown_group;
	o->always_due = o->prep_fail = true;
	return true;
}

static bool gen_cancel(struct seq *s, struct op *o, struct io_uring_sqe *sqe, struct batch *b)
{
	uint64_t *r = &s->rng;
	unsigned idx = (unsigned)(o - s->op), pending = 0, any = 0;
	if (b->any_cancel && !known_allowed(KNOWN_CANCEL_ORDER))
		return false;
	for (unsigned i = 0; i < idx; i++) {
		pending += !s->op[i].done && s->op[i].kind != K_CANCEL && cancel_may_target(s, &s->op[i], i, b);
		any += cancel_may_target(s, &s->op[i], i, b);
	}
	uint32_t pick = rng_below(r, 100);
	if (pending && pick < 65) {
		unsigned k = rng_below(r, pending);
		for (unsigned i = 0; i < idx; i++)
			if (!s->op[i].done && s->op[i].kind != K_CANCEL && cancel_may_target(s, &s->op[i], i, b) &&
			    !k--) {
				o->target = s->op[i].ud;
				break;
			}
	} else if (any && pick < 85) {
		unsigned k = rng_below(r, any);
		for (unsigned i = 0; i < idx; i++)
			if (cancel_may_target(s, &s->op[i], i, b) && !k--) {
				o->target = s->op[i].ud;
				break;
			}
	} else {
		o->target = s->ud_high | (SEQ_MAX_OPS + 1 + rng_below(r, 1000));
	}
	struct op *t = op_of_ud(s, o->target);
	if (t && !t->done)
		b->later |= successor_groups(s, t);
	unsigned flags = !s->compat56 && rng_pct(r, 20) ? IORING_ASYNC_CANCEL_ALL : 0;
	io_uring_prep_cancel64(sqe, o->target, (int)flags);
	o->msg_flags = (int)flags;	/* how its res reads */
	o->always_due = true;
	return true;
}

/* Cancels every request of the ring; what it can find is what is armed now. */
static void arm_snapshot(struct seq *s, unsigned upto)
{
	memset(s->armed, 0, sizeof(s->armed));
	for (unsigned i = 0; i < upto; i++)
		if (s->op[i].submitted && !s->op[i].done && !op_blocked(s, &s->op[i]))
			s->armed[i / 64] |= 1ull << (i % 64);
}

static bool gen_cancel_any(struct seq *s, struct op *o, struct io_uring_sqe *sqe, struct batch *b)
{
	if (s->compat56 || ((b->multishot || b->linked || b->cancels) && !known_allowed(KNOWN_CANCEL_ORDER)) ||
	    ((b->later || b->locked || successors_overlap(s)) && !known_allowed(KNOWN_LINK_ORDER)))
		return false;
	for (struct op *p = s->op; p < o; p++)
		if (p->kind == K_CANCEL_ANY && !p->done)
			return false;
	arm_snapshot(s, (unsigned)(o - s->op));
	b->later = (1u << SEQ_GROUPS) - 1;	/* every chain it cuts may go on */
	io_uring_prep_cancel64(sqe, 0, IORING_ASYNC_CANCEL_ANY);
	o->always_due = true;
	return true;
}

/* ---- a batch ---- */

static struct op *new_op(struct seq *s, int kind)
{
	struct op *o = &s->op[s->nops];
	*o = (struct op){ .ud = s->ud_high | (s->nops + 1), .kind = (uint8_t)kind, .ep = -1,
			  .chain_prev = -1, .prov = -1 };
	s->nops++;
	return o;
}

static int pick_kind(struct seq *s)
{
	unsigned total = 0;
	for (int k = 0; k < NKINDS; k++)
		total += !s->compat56 || kinds[k].compat56 ? kinds[k].weight : 0;
	unsigned x = rng_below(&s->rng, total);
	for (int k = 0; k < NKINDS; k++) {
		unsigned w = !s->compat56 || kinds[k].compat56 ? kinds[k].weight : 0;
		if (x < w)
			return k;
		x -= w;
	}
	return K_NOP;
}

/* Submits everything in the SQ: a short submission is retried, as the
 * program would, and every return value goes in the transcript. */
static void submit_all(struct seq *s, unsigned n)
{
	out_line("submit %u ->", n);
	for (unsigned done = 0, tries = 0; done < n && tries <= n; tries++) {
		/* Getting events runs what a DEFER_TASKRUN ring deferred (a link's
		 * next request) as the program's later waits would. */
		int ret = io_uring_submit_and_get_events(&s->ring);
		out_line(" %d", ret);
		if (ret > 0)
			done += (unsigned)ret;
		/* A short submission runs no task work on a DEFER_TASKRUN ring:
		 * the link successors of the first part would run after the rest
		 * is issued, bufsel's as soon as it reaps (link-order). */
		if (done < n && !known_allowed(KNOWN_LINK_ORDER))
			reap_run_task_work(s);
		else if (ret < 0 && ret != -EAGAIN && ret != -EBUSY && ret != -EINTR)
			break;
	}
	out_line("\n");
}

void gen_step(struct seq *s)
{
	uint64_t *r = &s->rng;
	unsigned room = fuzz_env.max_ops > s->nops + 1 ? fuzz_env.max_ops - s->nops - 1 : 0;
	if (!room)
		return;
	unsigned n = 1 + rng_below(r, room < 6 ? room : 6);
	struct batch b = { .chain = 0, .prev = -1, .first = s->nops };
	struct io_uring_sqe *sqes[6];
	struct op *ops[6];
	for (int e = 0; e < NEP; e++)
		b.ep_chain[e] = -1;
	for (unsigned i = 0; i < n; i++) {
		bool link = i > 0 && rng_pct(r, 30);
		/* 5.6's io_async_cancel_prep refuses any SQE flag: a cancel
		 * links to nothing there. */
		if (link && s->compat56 && ops[i - 1]->kind == K_CANCEL)
			link = false;
		if (!link)
			b.chain++;
		struct io_uring_sqe *sqe = io_uring_get_sqe(&s->ring);
		if (!sqe) {
			fprintf(stderr, "seqfuzz: seed %llu: SQ full\n", (unsigned long long)s->seed);
			exit(2);
		}
		struct op *o = NULL;
		b.linked = link;
		for (int tries = 0; !o; tries++) {
			/* A sequence starts by filling its groups, mostly. */
			bool fill = s->step == 1 && i < 3 && tries == 0 && rng_pct(r, 80);
			int kind = fill ? K_PROVIDE : tries < 4 ? pick_kind(s) : K_NOP;
			o = new_op(s, kind);
			o->chain_prev = link ? b.prev : -1;
			if (!kinds[kind].gen(s, o, sqe, &b)) {
				s->nops--;
				o = NULL;
			}
		}
		sqe->user_data = o->ud;
		/* An SQE the kernel rejects at submission fails its whole chain
		 * there; behind one bufsel has already acted on, it is a known
		 * difference (docs/reliability.md): it starts a chain of its own
		 * unless --prep-fail-in-chains. */
		if (link && o->prep_fail && b.chain_bufsel && !known_allowed(KNOWN_PREP_FAIL_IN_CHAIN)) {
			link = false;
			o->chain_prev = -1;
			b.chain++;
		}
		if (link)
			sqes[i - 1]->flags |= rng_pct(r, 20) ? IOSQE_IO_HARDLINK : IOSQE_IO_LINK;
		else
			b.chain_bufsel = false;
		bool acts = o->kind == K_PROVIDE || o->kind == K_REPROVIDE || o->kind == K_REMOVE ||
			    (o->kind == K_CANCEL && (o->msg_flags & IORING_ASYNC_CANCEL_ALL)) ||
			    (sqe->flags & IOSQE_BUFFER_SELECT);
		b.chain_bufsel |= acts && !o->prep_fail;
		lock_after(s, &b, o);
		b.multishot |= o->kind == K_RECV_MULTI || o->kind == K_RECVMSG_MULTI;
		b.cancels |= o->kind == K_CANCEL || o->kind == K_CANCEL_ANY;
		b.any_cancel |= o->kind == K_CANCEL_ANY;
		int gi = group_index(s, o->bgid);
		if (link && gi >= 0)
			b.later |= 1u << gi;
		sqes[i] = sqe;
		ops[i] = o;
		b.prev = (int)(o - s->op);
	}
	for (unsigned i = 0; i < n; i++) {
		ops[i]->sqe_flags = sqes[i]->flags;
		ops[i]->submitted = true;
		verbose_sqe(s, ops[i], sqes[i]);
	}
	submit_all(s, n);
	reap_settle(s);
}

/* ---- ring additions (--rings) ---- */

/* Buffers whose bytes were delivered and checked and that did not go back
 * since: what the program may give back (the first 256 of each range). */
static unsigned spent_count(const struct seq *s)
{
	unsigned n = 0;
	for (unsigned k = 0; k < s->nprov; k++)
		for (uint32_t i = 0; i < s->prov[k].count && i < 256; i++)
			n += s->prov[k].spent[i] == 1;
	return n;
}

static struct prov *spent_pick(struct seq *s, unsigned want, uint32_t *idx)
{
	for (unsigned k = 0; k < s->nprov; k++)
		for (uint32_t i = 0; i < s->prov[k].count && i < 256; i++)
			if (s->prov[k].spent[i] == 1 && !want--) {
				*idx = i;
				return &s->prov[k];
			}
	return NULL;
}

static struct prov *new_ring_prov(struct seq *s, int g, uint32_t bid, uint32_t count, uint32_t len,
				  char *base, uint8_t marker)
{
	struct prov *p = &s->prov[s->nprov++];
	*p = (struct prov){ .op = -1, .add = s->nadds, .bgid = s->group[g], .off = bid, .count = count,
			    .len = len, .base = base, .marker = marker, .origin = -1, .res = 0,
			    .spent = calloc(count, 1) };
	if (!p->spent) {
		fprintf(stderr, "seqfuzz: out of memory\n");
		exit(2);
	}
	return p;
}

/* Gives back up to room spent buffers, most with the bid they had. */
static unsigned ring_give_back(struct seq *s, int g, uint32_t room, unsigned nspent)
{
	uint64_t *r = &s->rng;
	struct seq_ring *rg = &s->rings[g];
	unsigned max = room < nspent ? room : nspent;
	unsigned k = 1 + rng_below(r, max < 8 ? max : 8);
	out_line("ring-add r%u ring=%u back bids=", s->nadds, s->group[g]);
	for (unsigned i = 0; i < k; i++, nspent--) {
		uint32_t idx;
		struct prov *p = spent_pick(s, rng_below(r, nspent), &idx);
		char *addr = p->base + (size_t)idx * p->len;
		uint8_t marker = (uint8_t)rng_next(r);
		uint32_t bid = rng_pct(r, 85) ? p->off + idx : rng_below(r, 2048);
		memset(addr, marker, p->len < SPAN_MAX ? p->len : SPAN_MAX);
		p->spent[idx] = 2;
		struct prov *q = new_ring_prov(s, g, bid, 1, p->len, addr, marker);
		q->origin = (int)(p - s->prov);
		q->origin_idx = idx;
		io_uring_buf_ring_add(rg->br, addr, p->len, (unsigned short)bid,
				      io_uring_buf_ring_mask(rg->entries), (int)i);
		rg->slot[(rg->added + i) & (rg->entries - 1)].prov = (int)(q - s->prov);
		rg->slot[(rg->added + i) & (rg->entries - 1)].idx = 0;
		out_line("%s%u", i ? "," : "", bid);
	}
	out_line("\n");
	return k;
}

/* Publishes fresh buffers: consecutive bids in one range of memory, as a
 * PROVIDE would give them, or memory the kernel cannot write. */
static unsigned ring_fresh(struct seq *s, int g, uint32_t room)
{
	uint64_t *r = &s->rng;
	struct seq_ring *rg = &s->rings[g];
	uint32_t k = rng_pct(r, 70) ? 1 + rng_below(r, room < 8 ? room : 8) : room;
	uint32_t len, pick = rng_below(r, 100);
	if (pick < 55)
		len = 1 + rng_below(r, 32);
	else if (pick < 82)
		len = 33 + rng_below(r, 480);
	else if (pick < 96)
		len = 513 + rng_below(r, 3584);
	else if (pick < 98)
		len = 0;	/* the kernel takes it as it is: a transfer of nothing */
	else
		len = 0x7ffff000u + rng_below(r, 0x2000);	/* beyond MAX_RW_COUNT */
	bool huge = len > SPAN_MAX;
	if (huge)
		k = 1;
	if (!huge && (uint64_t)k * len > ARENA_PER_PROVIDE)
		len = ARENA_PER_PROVIDE / k;
	uint32_t first;
	pick = rng_below(r, 100);
	if (pick < 60)
		first = rng_below(r, 16);
	else if (pick < 80)
		first = rng_below(r, 2048);
	else if (pick < 90)
		first = 65536 - k;	/* the last bid is 65535 */
	else
		first = rng_below(r, 65536 - k + 1);
	size_t size = huge ? SPAN_MAX : (size_t)k * len;
	pick = rng_below(r, 100);
	enum mem_kind mk = pick < 94 ? MEM_ARENA : pick < 96 ? MEM_NULL : pick < 98 ? MEM_NOACCESS : MEM_KERNEL;
	if (mk == MEM_ARENA && s->arena_used + size + 8 > fuzz_env.arena_len)
		mk = MEM_NOACCESS;
	/* Whatever a selected entry names, the kernel writes into it: NULL and
	 * PROT_NONE ranges must hold nothing of the program's. */
	if ((mk == MEM_NOACCESS && (huge || size > fuzz_env.noaccess_len)) ||
	    (mk == MEM_NULL && (huge || size > 65536)))
		mk = MEM_KERNEL;
	uint8_t marker = (uint8_t)rng_next(r);
	char *base = NULL;
	uint64_t addr = 0;
	switch (mk) {
	case MEM_ARENA:
		base = s->arena + s->arena_used + rng_below(r, 8);
		s->arena_used += size + 8;
		memset(base, marker, size);
		addr = (uint64_t)(uintptr_t)base;
		break;
	case MEM_NOACCESS:
		addr = (uint64_t)(uintptr_t)fuzz_env.noaccess;
		break;
	case MEM_KERNEL:
		addr = 0xffff888000000000ull;
		break;
	default:
		break;
	}
	struct prov *p = new_ring_prov(s, g, first, k, len, base, marker);
	for (uint32_t i = 0; i < k; i++) {
		io_uring_buf_ring_add(rg->br, (void *)(uintptr_t)(addr + (uint64_t)i * len), len,
				      (unsigned short)(first + i), io_uring_buf_ring_mask(rg->entries), (int)i);
		rg->slot[(rg->added + i) & (rg->entries - 1)].prov = (int)(p - s->prov);
		rg->slot[(rg->added + i) & (rg->entries - 1)].idx = i;
	}
	out_line("ring-add r%u ring=%u bids=%u", s->nadds, s->group[g], first);
	if (k > 1)
		out_line("..%u", first + k - 1);
	out_line(" len=%u%s\n", len,
		 mk == MEM_ARENA ? "" : mk == MEM_NULL ? " null" : mk == MEM_NOACCESS ? " noaccess" : " kernel");
	return k;
}

/*
 * The program publishes entries on ring g, as many as it knows are free:
 * the head moves one entry for every CQE that reports a buffer of the ring,
 * but for two kinds the kernel leaves at the head (seq_reap.c counts them,
 * ring_committed), so the program never overwrites an entry the kernel may
 * still select.  It gives back buffers it holds, or fresh ones.
 */
static void ring_add(struct seq *s, int g)
{
	struct seq_ring *rg = &s->rings[g];
	uint32_t room = rg->entries - (rg->added - rg->taken);
	if (!room || s->nprov + 8 > SEQ_MAX_PROV)
		return;
	unsigned nspent = spent_count(s);
	s->nadds++;
	unsigned k = nspent && rng_pct(&s->rng, 60) ? ring_give_back(s, g, room, nspent) : ring_fresh(s, g, room);
	io_uring_buf_ring_advance(rg->br, (int)k);
	rg->added += k;
}

static int pick_ring(struct seq *s)
{
	unsigned n = (unsigned)__builtin_popcount(s->ring_mask), k = rng_below(&s->rng, n);
	for (int g = 0; g < SEQ_GROUPS; g++)
		if ((s->ring_mask & (1u << g)) && !k--)
			return g;
	return -1;
}

/* ---- the program's own writes, and ends of file ---- */

static void do_write(struct seq *s, int e, uint32_t n)
{
	static uint8_t data[SEQ_QUEUED_MAX];
	struct endpoint *ep = &s->ep[e];
	for (uint32_t i = 0; i < n; i++)
		data[i] = stream_byte(ep->salt, ep->wpos + i);
	ssize_t w = write(ep->peer, data, n);
	if (w != (ssize_t)n) {
		fprintf(stderr, "seqfuzz: seed %llu: write %u to %s: %zd (%s)\n", (unsigned long long)s->seed, n,
			ep->name, w, w < 0 ? strerror(errno) : "short");
		exit(2);
	}
	out_line("write %s %u\n", ep->name, n);
	reap_note_write(s, e, data, n);
	reap_settle(s);
}

static void cancel_one(struct seq *s, struct op *t)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&s->ring);
	struct op *o = new_op(s, K_CANCEL);
	o->target = t->ud;
	o->always_due = true;
	io_uring_prep_cancel64(sqe, o->target, 0);
	sqe->user_data = o->ud;
	o->submitted = true;
	verbose_sqe(s, o, sqe);
	submit_all(s, 1);
	reap_settle(s);
}

/* A datagram socket has no end of file: what still reads it is cancelled,
 * one request at a time (a hard link may start the next). */
static void end_dgram(struct seq *s, int e)
{
	for (int round = 0; round < 8 && s->nops < SEQ_MAX_OPS; round++) {
		struct op *t = NULL;
		for (unsigned i = 0; i < s->nops && !t; i++)
			if (s->op[i].ep == e && s->op[i].submitted && !s->op[i].done && !op_blocked(s, &s->op[i]))
				t = &s->op[i];
		if (!t)
			return;
		cancel_one(s, t);
	}
}

static void do_eof(struct seq *s, int e)
{
	struct endpoint *ep = &s->ep[e];
	if (ep->kind == EP_DGRAM) {
		out_line("eof %s\n", ep->name);
		end_dgram(s, e);
		ep->eof = true;
		return;
	}
	if (ep->kind == EP_PIPE) {
		close(ep->peer);
		ep->peer = -1;
	} else {
		shutdown(ep->peer, SHUT_WR);
	}
	ep->eof = true;
	out_line("eof %s\n", ep->name);
	reap_settle(s);
}

/* The program's actions before a batch: writes, ring additions (--rings;
 * the first step mostly starts by filling each ring), an end of file. */
void gen_writes(struct seq *s)
{
	static const int writable[] = { E_PIPE0, E_PIPE1, E_STREAM, E_DGRAM };
	uint64_t *r = &s->rng;
	uint32_t pick = rng_below(r, 100);
	unsigned nw = pick < 30 ? 0 : pick < 65 ? 1 : pick < 88 ? 2 : 3;
	unsigned nadd = 0;
	if (s->ring_mask) {
		if (s->step == 1)
			for (int g = 0; g < SEQ_GROUPS; g++)
				if ((s->ring_mask & (1u << g)) && rng_pct(r, 80))
					ring_add(s, g);
		nadd = rng_below(r, 3);
	}
	/* Additions go between the writes: a receive that waits selects when
	 * its data comes, from what the ring holds then. */
	for (unsigned k = 0, acts = nw + nadd; k < acts; k++) {
		if (nadd && rng_below(r, acts - k) < nadd) {
			ring_add(s, pick_ring(s));
			nadd--;
			continue;
		}
		int e = writable[rng_below(r, 4)];
		struct endpoint *ep = &s->ep[e];
		if (ep->eof)
			continue;
		uint32_t n;
		if (ep->kind == EP_DGRAM) {
			if (ep->dn >= SEQ_DGRAMS)
				continue;
			pick = rng_below(r, 100);
			n = pick < 3 ? 0 : pick < 70 ? 1 + rng_below(r, 64) : 65 + rng_below(r, 400);
		} else {
			uint64_t queued = ep->wpos - ep->rpos;
			if (queued + 1 >= SEQ_QUEUED_MAX)
				continue;
			pick = rng_below(r, 100);
			n = pick < 50 ? 1 + rng_below(r, 16) : pick < 90 ? 17 + rng_below(r, 184)
									 : 201 + rng_below(r, 800);
			if (n > SEQ_QUEUED_MAX - 1 - queued)
				n = (uint32_t)(SEQ_QUEUED_MAX - 1 - queued);
		}
		do_write(s, e, n);
	}
	if (rng_pct(r, 5)) {
		int e = writable[rng_below(r, 3)];
		if (!s->ep[e].eof)
			do_eof(s, e);
	}
}

/*
 * The end: sometimes one CANCEL_ANY, then an end of file on everything, one
 * at a time.  Every request still pending must then complete (a READ with 0
 * and its buffer, a RECV with 0 and none, a multishot stream with its last
 * CQE); one that does not is lost.
 */
void gen_finish(struct seq *s)
{
	static const int writable[] = { E_PIPE0, E_PIPE1, E_STREAM, E_DGRAM };
	out_line("finish\n");
	if (!s->compat56 && rng_pct(&s->rng, 25) && (!successors_overlap(s) || known_allowed(KNOWN_LINK_ORDER))) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&s->ring);
		struct op *o = new_op(s, K_CANCEL_ANY);
		struct batch b = { .prev = -1 };
		gen_cancel_any(s, o, sqe, &b);
		sqe->user_data = o->ud;
		o->submitted = true;
		verbose_sqe(s, o, sqe);
		submit_all(s, 1);
		reap_settle(s);
	}
	for (unsigned k = 0; k < 4; k++)
		if (!s->ep[writable[k]].eof)
			do_eof(s, writable[k]);
	for (unsigned i = 0; i < s->nops; i++) {
		struct op *o = &s->op[i];
		if (o->submitted && !o->done) {
			out_line("never-completed ud=%u %s\n", (unsigned)(o->ud & 0xffff), op_name(o));
			o->lost = o->done = true;
			s->nlost++;
		}
	}
}
