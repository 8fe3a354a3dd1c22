/*
 * The completion side of a sequence: every CQE becomes one transcript line,
 * every selected buffer is found among the buffers the sequence provided and
 * its bytes are checked against the data model, and reap_settle() decides
 * when a step is over.
 *
 * When is a step over?  Natively every completion the program can cause
 * happens before the system call that caused it returns (task work runs on
 * the way back to user space; the regular file is on a disk file system, so
 * its reads complete at submission).  So a step is over when no request is
 * *due*: one that must complete now because nothing stands in its way (a
 * request that needs no data, one that a cancel found, one whose file has
 * data or an end), and none is blocked behind an unfinished request of its
 * link chain.  Waiting for exactly those, and then taking whatever else is
 * already there, is deterministic natively and asks of bufsel only what a
 * program may rely on.  A due request that does not complete within the
 * wait is printed as lost.
 */
#define _GNU_SOURCE
#include "test/fuzz/seqfuzz.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

struct op *op_of_ud(struct seq *s, uint64_t ud)
{
	uint64_t idx = (ud & 0xffff) - 1;
	if ((ud & ~0xffffull) != s->ud_high || idx >= s->nops || s->op[idx].ud != ud)
		return NULL;
	return &s->op[idx];
}

bool op_blocked(const struct seq *s, const struct op *o)
{
	for (int p = o->chain_prev; p >= 0; p = s->op[p].chain_prev)
		if (!s->op[p].done)
			return true;
	return false;
}

bool ep_readable(const struct endpoint *e)
{
	if (e->kind == EP_FILE || e->kind == EP_WRONLY || e->kind == EP_BADFD)
		return true;
	struct pollfd p = { .fd = e->fd, .events = POLLIN | POLLRDHUP };
	return poll(&p, 1, 0) == 1 && (p.revents & (POLLIN | POLLHUP | POLLERR | POLLRDHUP));
}

static bool op_due(const struct seq *s, const struct op *o)
{
	if (!o->submitted || o->done || op_blocked(s, o))
		return false;
	return o->always_due || o->cancelled || (o->ep >= 0 && ep_readable(&s->ep[o->ep]));
}

/* ---- the data model ---- */

void reap_note_write(struct seq *s, int ep, const uint8_t *data, uint32_t n)
{
	struct endpoint *e = &s->ep[ep];
	(void)data;
	if (e->kind == EP_DGRAM) {
		e->dq[e->dn].start = e->wpos;
		e->dq[e->dn].len = n;
		e->dn++;
	}
	e->wpos += n;
}

/* What a consumer of o's endpoint must find: up to max bytes into exp. */
static uint32_t expected_bytes(const struct seq *s, const struct op *o, unsigned dgram, uint8_t *exp,
			       uint32_t max)
{
	const struct endpoint *e = &s->ep[o->ep];
	uint32_t n = 0;
	if (e->kind == EP_FILE) {
		uint64_t off = o->off == (uint64_t)-1 ? e->fpos : o->off;
		for (; n < max && off + n < FILE_LEN; n++)
			exp[n] = fuzz_env.file_data[off + n];
	} else if (e->kind == EP_DGRAM) {
		if (dgram >= e->dn)
			return 0;
		for (; n < max && n < e->dq[dgram].len; n++)
			exp[n] = stream_byte(e->salt, e->dq[dgram].start + n);
	} else {
		for (; n < max && e->rpos + n < e->wpos; n++)
			exp[n] = stream_byte(e->salt, e->rpos + n);
	}
	return n;
}

static void consume(struct seq *s, struct op *o, unsigned dgram, uint32_t n)
{
	struct endpoint *e = &s->ep[o->ep];
	if (o->msg_flags & MSG_PEEK)
		return;
	if (e->kind == EP_FILE) {
		if (o->off == (uint64_t)-1)
			e->fpos += n;
	} else if (e->kind == EP_DGRAM) {
		/* The datagrams before the one found were lost to a failed copy. */
		unsigned drop = dgram + 1 <= e->dn ? dgram + 1 : e->dn;
		memmove(e->dq, e->dq + drop, (e->dn - drop) * sizeof(e->dq[0]));
		e->dn -= drop;
	} else {
		e->rpos += n;
	}
}

/* ---- finding the buffer ---- */

/* Where buffer i of prov p lives, and its name: the PROVIDE (or rN, the ring
 * addition) that first gave that memory and the index in it (a re-provide
 * or give-back names its origin). */
static char *buf_addr(const struct prov *p, uint32_t i)
{
	return p->base + (size_t)i * p->len;
}

static void buf_name(const struct seq *s, const struct prov *p, uint32_t i, char *dst, size_t len)
{
	while (p->origin >= 0) {
		i = p->origin_idx;
		p = &s->prov[p->origin];
	}
	if (p->op < 0)
		snprintf(dst, len, "r%u.%u", p->add, i);
	else
		snprintf(dst, len, "%u.%u", s->op[p->op].ud == 0 ? 0 : (unsigned)(s->op[p->op].ud & 0xffff), i);
}

/* The bytes a buffer of a multishot RECVMSG holds: the kernel's header, room
 * for the name and control data as the request's msghdr sizes them, then the
 * payload.  Returns the payload offset, or -1 if res cannot hold a header. */
static long recvmsg_payload(const struct op *o, int res)
{
	size_t head = sizeof(struct io_uring_recvmsg_out) + o->msg.msg_namelen + o->msg.msg_controllen;
	return res >= 0 && (size_t)res >= head ? (long)head : -1;
}

struct found {
	struct prov *p;
	uint32_t idx;
	unsigned dgram;		/* which queued datagram it held */
};

/* Is (p, i) the buffer that got exp[0..n) at payload offset at? */
static bool holds(const struct prov *p, uint32_t i, const uint8_t *exp, uint32_t n, size_t at,
		  int res)
{
	uint32_t fill = p->len < SPAN_MAX ? p->len : SPAN_MAX;
	if (at + n > fill)
		return false;
	const char *m = buf_addr(p, i);
	if (memcmp(m + at, exp, n))
		return false;
	if (at) {
		struct io_uring_recvmsg_out h;
		memcpy(&h, m, sizeof(h));
		if (h.payloadlen != n || (long)at + n != (long)res)
			return false;
	}
	/* The byte after the data is still the marker: nothing wrote further
	 * (unknown once an entry that stayed at its ring's head was written). */
	return at + n >= fill || p->dirty || (uint8_t)m[at + n] == p->marker;
}

/* Finds the provided buffer of group o->bgid with this bid that holds the
 * expected data, preferring one not yet delivered. */
static bool find_buffer(struct seq *s, struct op *o, unsigned bid, int res, struct found *f)
{
	static uint8_t exp[1 << 16];
	const struct endpoint *e = &s->ep[o->ep];
	unsigned ndg = e->kind == EP_DGRAM ? (e->dn ? e->dn : 1) : 1;
	bool msg = o->kind == K_RECVMSG_MULTI;
	long at = msg ? recvmsg_payload(o, res) : 0;
	if (at < 0)
		return false;
	uint32_t want = (uint32_t)(res - at);
	for (int pass = 0; pass < 2; pass++)
		for (unsigned dg = 0; dg < ndg; dg++) {
			uint32_t n = expected_bytes(s, o, dg, exp, want);
			if (n != want)
				continue;
			for (unsigned k = 0; k < s->nprov; k++) {
				struct prov *p = &s->prov[k];
				if (p->bgid != o->bgid || p->res < 0 || p->res > 1 || !p->base ||
				    bid < p->off || bid - p->off >= p->count)
					continue;
				uint32_t i = bid - p->off;
				if ((p->spent[i] != 0) != (pass == 1))
					continue;
				if (holds(p, i, exp, n, (size_t)at, res)) {
					*f = (struct found){ .p = p, .idx = i, .dgram = dg };
					return true;
				}
			}
		}
	return false;
}

/* The ring entry at the head, as the program knows it (the bid says
 * whether it does), or NULL. */
static struct prov *ring_head(struct seq *s, const struct seq_ring *rg, unsigned bid)
{
	if (rg->added == rg->taken)
		return NULL;
	uint32_t h = rg->taken & (rg->entries - 1);
	struct prov *p = &s->prov[rg->slot[h].prov];
	return p->off + rg->slot[h].idx == bid ? p : NULL;
}

/*
 * Did the kernel move the ring's head for this CQE?  Two CQEs report an
 * entry that stays at the head, to be selected again:
 *  - -ENOBUFS for an entry at address 0, from a file that polls: the
 *    request looks at the address after selecting, and commits only what
 *    it transferred;
 *  - a read of the regular file (committed at selection) whose length, the
 *    entry's or the request's, is 2^31 or more: io_kbuf_commit takes it as
 *    a negative int and leaves the head alone.
 */
static bool ring_committed(struct seq *s, const struct seq_ring *rg, const struct op *o,
			   const struct io_uring_cqe *c)
{
	if (o->ep < 0)
		return true;
	if (s->ep[o->ep].kind != EP_FILE)
		return c->res != -ENOBUFS;
	const struct prov *e = ring_head(s, rg, c->flags >> IORING_CQE_BUFFER_SHIFT);
	uint32_t elen = e ? e->len : 0;
	uint32_t len = o->want == 0 || o->want > elen ? elen : o->want;
	return len < 0x80000000u;
}

/*
 * The line's tail for a CQE that carries a buffer with data.  stays: the
 * ring entry, still at its ring's head; the next selection from the ring
 * gets the same memory, maybe before this CQE is reaped (a later read of
 * the same batch): then its bytes are gone, and what is there is printed
 * unchecked.
 */
static void check_buffer(struct seq *s, struct op *o, const struct io_uring_cqe *c, struct prov *stays)
{
	unsigned bid = c->flags >> IORING_CQE_BUFFER_SHIFT;
	struct found f;
	s->nbuf++;
	if (c->res <= 0 || o->ep < 0) {
		/* Consumed without data: nothing to look at, nothing known spent.
		 * A receive into a ring entry of length 0 takes nothing of a
		 * datagram but consumes it all the same (a legacy buffer is
		 * never empty); a read of nothing leaves the socket alone. */
		if (c->res == 0 && o->ep >= 0 && s->ep[o->ep].kind == EP_DGRAM && s->ep[o->ep].dn &&
		    seq_ring_of(s, o->bgid) && o->kind != K_READ && o->kind != K_READV)
			consume(s, o, 0, 0);
		return;
	}
	if (stays)
		stays->dirty = true;
	bool found = find_buffer(s, o, bid, c->res, &f);
	if (!found && stays && stays->base) {
		uint32_t fill = stays->len < SPAN_MAX ? stays->len : SPAN_MAX;
		uint32_t n = (uint32_t)c->res < fill ? (uint32_t)c->res : fill;
		out_line(" stays overwritten fnv=%08x", fnv1a(stays->base, n));
		consume(s, o, 0, (uint32_t)c->res);
		return;
	}
	if (!found) {
		static uint8_t exp[1 << 16];
		long at = o->kind == K_RECVMSG_MULTI ? recvmsg_payload(o, c->res) : 0;
		uint32_t n = at < 0 ? 0 : expected_bytes(s, o, 0, exp, (uint32_t)(c->res - at));
		out_line(" BAD(expected fnv=%08x of %u bytes, found in no buffer %u of group %u)",
			 fnv1a(exp, n), n, bid, o->bgid);
		s->nbad++;
		if (s->ep[o->ep].kind != EP_DGRAM)
			consume(s, o, 0, (uint32_t)c->res);
		return;
	}
	char name[32];
	buf_name(s, f.p, f.idx, name, sizeof(name));
	long at = o->kind == K_RECVMSG_MULTI ? recvmsg_payload(o, c->res) : 0;
	const char *m = buf_addr(f.p, f.idx);
	uint32_t n = (uint32_t)(c->res - at);
	if (at) {
		struct io_uring_recvmsg_out h;
		memcpy(&h, m, sizeof(h));
		out_line(" hdr=%u/%u/%u/0x%x", h.namelen, h.controllen, h.payloadlen, h.flags);
	}
	out_line(" at=%s%s fnv=%08x ok", name, f.p->spent[f.idx] ? "(again)" : "",
		 fnv1a(m + at, n));
	if (f.dgram)
		out_line(" lost-dgrams=%u", f.dgram);
	if (stays)
		out_line(" stays");	/* not the program's to give back */
	else
		f.p->spent[f.idx] = 1;
	consume(s, o, f.dgram, n);
}

/* ---- the order of a phase's lines ---- */

/*
 * A phase is one reap_settle(): the CQEs that one write, one end of file or
 * one batch caused.  Their lines are printed sorted by link chain (the
 * index of the chain's first SQE), in arrival order within a chain.  Order
 * within a chain, and a multishot request's stream, is the program's to
 * rely on and stays as it came; order between independent chains whose
 * requests complete in task work after the submission (a cancelled request,
 * a link's next request, a receive woken by data) is the kernel's internal
 * queueing, which bufsel cannot and need not reproduce.
 */
static struct {
	FILE *f, *saved;
	char *buf;
	size_t len;
	unsigned *key, n, cap;
} phase;

static void phase_begin(void)
{
	phase.f = open_memstream(&phase.buf, &phase.len);
	if (!phase.f) {
		fprintf(stderr, "seqfuzz: open_memstream: %s\n", strerror(errno));
		exit(2);
	}
	phase.saved = fuzz_env.out;
	fuzz_env.out = phase.f;
	phase.n = 0;
}

/* The next line printed belongs to this chain. */
static void phase_line(const struct seq *s, const struct op *o)
{
	if (phase.n == phase.cap) {
		phase.cap = phase.cap ? 2 * phase.cap : 256;
		phase.key = realloc(phase.key, phase.cap * sizeof(*phase.key));
		if (!phase.key) {
			fprintf(stderr, "seqfuzz: out of memory\n");
			exit(2);
		}
	}
	unsigned key = UINT32_MAX;
	if (o) {
		while (o->chain_prev >= 0)
			o = &s->op[o->chain_prev];
		key = (unsigned)(o - s->op);
	}
	phase.key[phase.n++] = key;
}

static int by_key(const void *a, const void *b)
{
	const unsigned *x = a, *y = b;	/* {key, arrival} */
	if (x[0] != y[0])
		return x[0] < y[0] ? -1 : 1;
	return x[1] < y[1] ? -1 : x[1] > y[1];
}

static void phase_end(void)
{
	fclose(phase.f);
	fuzz_env.out = phase.saved;
	unsigned (*order)[2] = malloc((phase.n ? phase.n : 1) * sizeof(*order));
	const char **line = malloc((phase.n ? phase.n : 1) * sizeof(*line));
	if (!order || !line) {
		fprintf(stderr, "seqfuzz: out of memory\n");
		exit(2);
	}
	const char *p = phase.buf, *end = phase.buf + phase.len;
	for (unsigned i = 0; i < phase.n; i++) {
		line[i] = p;
		order[i][0] = phase.key[i];
		order[i][1] = i;
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		p = nl ? nl + 1 : end;
	}
	qsort(order, phase.n, sizeof(*order), by_key);
	for (unsigned i = 0; i < phase.n; i++) {
		const char *l = line[order[i][1]];
		const char *nl = memchr(l, '\n', (size_t)(end - l));
		fwrite(l, 1, nl ? (size_t)(nl - l) + 1 : (size_t)(end - l), fuzz_env.out);
	}
	free(order);
	free(line);
	free(phase.buf);
	phase.buf = NULL;
}

/* ---- one CQE ---- */

/* o is over; its endpoint's reader is now the latest unfinished one left. */
static void end_op(struct seq *s, struct op *o)
{
	o->done = true;
	if (o->ep < 0 || s->ep[o->ep].consumer != (int)(o - s->op))
		return;
	s->ep[o->ep].consumer = -1;
	for (unsigned i = 0; i < s->nops; i++)
		if (s->op[i].ep == o->ep && !s->op[i].done)
			s->ep[o->ep].consumer = (int)i;
}

static void on_cancel(struct seq *s, struct op *o, int res)
{
	if (o->kind == K_CANCEL) {
		/* One: 0 when found.  IORING_ASYNC_CANCEL_ALL: how many. */
		struct op *t = op_of_ud(s, o->target);
		bool all = o->msg_flags & IORING_ASYNC_CANCEL_ALL;
		if (t && !t->done && (all ? res > 0 : res == 0))
			t->cancelled = true;
		return;
	}
	if (res > 0)
		for (unsigned i = 0; i < s->nops; i++)
			if (s->armed[i / 64] & (1ull << (i % 64)) && !s->op[i].done)
				s->op[i].cancelled = true;
}

static void on_cqe(struct seq *s, const struct io_uring_cqe *c)
{
	struct op *o = op_of_ud(s, c->user_data);
	s->ncqe++;
	phase_line(s, o);
	if (!o) {
		out_line("cqe ud=0x%llx res=%d flags=0x%x unknown\n", (unsigned long long)c->user_data, c->res,
			 c->flags);
		s->nbad++;
		return;
	}
	out_line("cqe ud=%u %s res=%d flags=0x%x", (unsigned)(c->user_data & 0xffff), op_name(o), c->res,
		 c->flags);
	if (c->flags & IORING_CQE_F_BUFFER)
		out_line(" buf=%u", c->flags >> IORING_CQE_BUFFER_SHIFT);
	if (c->flags & IORING_CQE_F_MORE)
		out_line(" more");
	if (c->flags & IORING_CQE_F_SOCK_NONEMPTY)
		out_line(" nonempty");
	if (o->done)
		out_line(" after-its-end");
	o->ncqe++;
	if (o->kind == K_RECVMSG && c->res >= 0)
		out_line(" msg_flags=0x%x namelen=%u", o->msg.msg_flags, o->msg.msg_namelen);
	if (c->flags & IORING_CQE_F_BUFFER) {
		struct seq_ring *rg = seq_ring_of(s, o->bgid);
		struct prov *stays = NULL;
		if (rg && ring_committed(s, rg, o, c))
			rg->taken++;	/* the kernel committed the entry: the head moved */
		else if (rg)
			stays = ring_head(s, rg, c->flags >> IORING_CQE_BUFFER_SHIFT);
		check_buffer(s, o, c, stays);
	} else if (c->res > 0 && o->ep >= 0)
		consume(s, o, 0, (uint32_t)c->res);
	else if (c->res == 0 && o->ep >= 0 && s->ep[o->ep].kind == EP_DGRAM && s->ep[o->ep].dn &&
		 !s->ep[o->ep].dq[0].len)
		consume(s, o, 0, 0);	/* an empty datagram */
	if (o->kind == K_PROVIDE || o->kind == K_REPROVIDE) {
		if (o->prov >= 0)
			s->prov[o->prov].res = c->res;
	} else if (o->kind == K_CANCEL || o->kind == K_CANCEL_ANY) {
		on_cancel(s, o, c->res);
	}
	if (!(c->flags & IORING_CQE_F_MORE))
		end_op(s, o);
	out_line("\n");
}

/*
 * A DEFER_TASKRUN ring runs one generation of task work per wait: a link's
 * next request issued by one round may complete, or queue more work, only
 * in the next.  Rounds of getting events until QUIET_ROUNDS in a row bring
 * no CQE leave the ring quiescent whatever its task-work mode, as bufsel's
 * follow-ups (which run every generation at once) leave it.
 */
#define QUIET_ROUNDS 3

void reap_run_task_work(struct seq *s)
{
	for (unsigned quiet = 0; quiet < QUIET_ROUNDS;) {
		unsigned before = io_uring_cq_ready(&s->ring);
		io_uring_get_events(&s->ring);
		quiet = io_uring_cq_ready(&s->ring) == before ? quiet + 1 : 0;
	}
}

/* Everything already there, and everything the ring's task work brings. */
static void reap_ready(struct seq *s)
{
	struct io_uring_cqe *cqe;
	for (unsigned quiet = 0; quiet < QUIET_ROUNDS;) {
		unsigned got = 0;
		io_uring_get_events(&s->ring);
		while (io_uring_peek_cqe(&s->ring, &cqe) == 0) {
			struct io_uring_cqe c = *cqe;
			io_uring_cqe_seen(&s->ring, cqe);
			on_cqe(s, &c);
			got++;
		}
		quiet = got ? 0 : quiet + 1;
	}
}

static struct op *first_due(struct seq *s)
{
	for (unsigned i = 0; i < s->nops; i++)
		if (op_due(s, &s->op[i]))
			return &s->op[i];
	return NULL;
}

void reap_settle(struct seq *s)
{
	phase_begin();
	for (;;) {
		reap_ready(s);
		struct op *d = first_due(s);
		if (!d)
			break;
		struct __kernel_timespec ts = { .tv_sec = fuzz_env.wait_ms / 1000,
						.tv_nsec = (fuzz_env.wait_ms % 1000) * 1000000L };
		struct io_uring_cqe *cqe = NULL;
		int ret = io_uring_wait_cqe_timeout(&s->ring, &cqe, &ts);
		if (ret == -EINTR)
			continue;
		/* Without IORING_FEAT_EXT_ARG (BUFSEL_KERNEL=5.6 hides it)
		 * liburing 2.3 waits with a TIMEOUT SQE of its own and, when
		 * that fires, returns what the enter submitted and no CQE. */
		if (ret == -ETIME || (ret >= 0 && !cqe)) {
			phase_line(s, d);
			out_line("lost ud=%u %s\n", (unsigned)(d->ud & 0xffff), op_name(d));
			d->lost = true;
			s->nlost++;
			end_op(s, d);
			continue;
		}
		if (ret < 0) {
			fprintf(stderr, "seqfuzz: seed %llu: wait_cqe: %s\n", (unsigned long long)s->seed,
				strerror(-ret));
			exit(2);
		}
		struct io_uring_cqe c = *cqe;
		io_uring_cqe_seen(&s->ring, cqe);
		on_cqe(s, &c);
	}
	phase_end();
}
