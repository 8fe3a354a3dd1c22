/*
 * Buffer-selected receives from many threads at once, for a sustained run:
 *
 *  - 8 threads, each with its own ring and its own group of 16 buffers of
 *    256 bytes, receive on 4 AF_UNIX socketpairs (two SEQPACKET with RECV,
 *    one STREAM with RECV, one SEQPACKET with RECVMSG), one receive in
 *    flight per socket, every received buffer provided again at once.  Each
 *    round writes one message per socket: before the receives are submitted
 *    (data there at the first attempt), after (the receive waits), or with
 *    IORING_RECVSEND_POLL_FIRST;
 *  - one ring shared by two threads: one submits (receives, re-provides,
 *    and writes the data), the other only reaps, verifies, and hands each
 *    buffer back to the submitter.  liburing allows exactly this split: the
 *    SQ belongs to one thread, the CQ to the other.  They first pass 20,000
 *    NOPs one at a time, each collected by a second enter of the submitter
 *    just as the reaper goes to sleep for it (a reaper not woken then
 *    stalls the pair); then 2 sockets with one receive in flight each.
 *
 * The NOPs run first and alone (the pair on two CPUs is where the race they
 * look for happens); then the sockets and the 8 threads together, with two
 * threads that only burn CPU keeping the machine oversubscribed.
 *
 * Every byte is checked where it lands (a fixed function of the socket and
 * the stream offset), every message length and every user_data is accounted
 * (each completes exactly once), and at the end REMOVE_BUFFERS must find the
 * whole group again: no buffer was lost on the way.  A watchdog ends the run
 * with a diagnosis if completions stop.  Only totals are printed, which the
 * workload fixes; argv[1] multiplies the rounds (default 1: a few seconds).
 */
#include "test/prog/stress.h"

#include <sys/uio.h>

#define OWN_THREADS 8
#define SOCKS 4
#define NBUF 16
#define BUFLEN 256
#define BGID 3
#define OWN_ROUNDS 3000
#define SH_NBUF 8
/* Few receives in flight on the shared ring: a completion its reaper is not
 * woken for then stalls the whole pair, and the watchdog sees it. */
#define SH_SOCKS 2
#define SH_ROUNDS 12000
#define SHARED_OWNER 100

#define PINGS 20000

enum tag { TAG_PROVIDE = 1, TAG_REMOVE, TAG_END, TAG_PING, TAG_RECV /* + socket index */ };

static const struct {
	int type;
	int msg;	/* RECVMSG rather than RECV */
} sock_kinds[SOCKS] = {
	{ SOCK_SEQPACKET, 0 },
	{ SOCK_SEQPACKET, 0 },
	{ SOCK_STREAM, 0 },
	{ SOCK_SEQPACKET, 1 },
};

struct sock {
	int rd, wr;		/* io_uring receives on rd; the program writes wr */
	int stream, msg;
	uint32_t key;		/* of the byte pattern */
	_Atomic uint64_t wr_off;	/* bytes written, counted before they are: a reaping
					 * thread may see them before the writer returns */
	uint64_t rd_off;	/* bytes received and verified */
	unsigned wr_msgs, rd_msgs;
	int inflight;
	struct msghdr mh;	/* RECVMSG: lives while the receive does */
};

struct totals {
	unsigned long recvs, bytes, msgs, provides;
	int removed;
};

static unsigned msg_len(uint32_t key, unsigned m)
{
	return 1 + stress_mix(key ^ (m + 1) * 0x27d4eb2du) % BUFLEN;
}

static void sock_open(struct sock *s, unsigned kind, uint32_t key)
{
	int sv[2];
	if (socketpair(AF_UNIX, sock_kinds[kind].type | SOCK_CLOEXEC, 0, sv) < 0)
		die("socketpair: %s", strerror(errno));
	*s = (struct sock){ .rd = sv[0], .wr = sv[1], .key = key,
			    .stream = sock_kinds[kind].type == SOCK_STREAM, .msg = sock_kinds[kind].msg };
}

static void sock_write(struct sock *s)
{
	unsigned char buf[BUFLEN];
	unsigned n = msg_len(s->key, s->wr_msgs++);
	stress_fill(buf, s->key, atomic_fetch_add(&s->wr_off, n), n);
	write_all(s->wr, buf, n);
}

static void prep_recv(struct io_uring_sqe *sqe, struct sock *s, int poll_first)
{
	if (s->msg) {
		/* msg_iovlen 0: the whole selected buffer. */
		memset(&s->mh, 0, sizeof(s->mh));
		io_uring_prep_recvmsg(sqe, s->rd, &s->mh, 0);
	} else {
		io_uring_prep_recv(sqe, s->rd, NULL, 0, 0);
	}
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = BGID;
	if (poll_first)
		sqe->ioprio |= IORING_RECVSEND_POLL_FIRST;
	s->inflight = 1;
}

/*
 * A receive's completion: the bytes must be the next ones of the socket's
 * stream (a whole message on SEQPACKET) and sit in the buffer the CQE names.
 */
static void check_recv(const char *who, struct sock *s, const struct io_uring_cqe *c,
		       const struct arena *a, struct totals *t)
{
	if (c->res <= 0)
		die("%s: receive failed: res %d flags 0x%x", who, c->res, c->flags);
	if (!(c->flags & IORING_CQE_F_BUFFER) || cqe_bid(c) >= a->nr)
		die("%s: receive of %d bytes without a valid buffer (flags 0x%x)", who, c->res, c->flags);
	unsigned n = (unsigned)c->res;
	if (!s->stream && n != msg_len(s->key, s->rd_msgs))
		die("%s: message %u: %u bytes, sent %u", who, s->rd_msgs, n, msg_len(s->key, s->rd_msgs));
	if (s->rd_off + n > s->wr_off)
		die("%s: %u bytes received, only %llu outstanding", who, n,
		    (unsigned long long)(s->wr_off - s->rd_off));
	if (s->msg && (s->mh.msg_flags & MSG_TRUNC))
		die("%s: RECVMSG reports MSG_TRUNC", who);
	char *p = arena_buf(a, cqe_bid(c));
	long bad = stress_check((unsigned char *)p, s->key, s->rd_off, n);
	if (bad >= 0)
		die("%s: byte %ld of a %u-byte receive (stream offset %llu, bid %u) is wrong", who, bad, n,
		    (unsigned long long)(s->rd_off + (uint64_t)bad), cqe_bid(c));
	/* Whatever the next receive in this buffer gets must be written anew. */
	memset(p, '.', a->len);
	s->rd_off += n;
	if (!s->stream)
		s->rd_msgs++;
	t->recvs++;
	t->bytes += n;
}

/* REMOVE_BUFFERS of more than the group holds: res is what it held. */
static int remove_all(struct io_uring *ring, struct ledger *l, unsigned nbuf)
{
	struct io_uring_sqe *sqe = get_sqe(ring);
	io_uring_prep_remove_buffers(sqe, (int)nbuf + 1, BGID);
	sqe->user_data = ledger_issue(l, TAG_REMOVE);
	submit_expect(ring, 1);
	struct io_uring_cqe c;
	reap(ring, &c, 1);
	ledger_complete(l, c.user_data, "remove");
	return c.res;
}

/* ---- a thread with its own ring ------------------------------------------ */

struct worker {
	unsigned id;
	unsigned rounds;
	struct io_uring ring;
	struct arena bufs;
	struct ledger ud;
	struct sock s[SOCKS];
	struct totals t;
	atomic_uint round;	/* for the watchdog's report */
};

static void worker_submit_recv(struct worker *w, unsigned i, int poll_first)
{
	struct io_uring_sqe *sqe = get_sqe(&w->ring);
	prep_recv(sqe, &w->s[i], poll_first);
	sqe->user_data = ledger_issue(&w->ud, TAG_RECV + i);
}

static void worker_cqe(struct worker *w, const struct io_uring_cqe *c)
{
	char who[32];
	snprintf(who, sizeof(who), "thread %u", w->id);
	ledger_complete(&w->ud, c->user_data, who);
	unsigned tag = ud_tag(c->user_data);
	if (tag == TAG_PROVIDE) {
		if (c->res != 0)
			die("%s: PROVIDE_BUFFERS returned %d", who, c->res);
		w->t.provides++;
		return;
	}
	if (tag < TAG_RECV || tag >= TAG_RECV + SOCKS)
		die("%s: completion with tag %u", who, tag);
	struct sock *s = &w->s[tag - TAG_RECV];
	check_recv(who, s, c, &w->bufs, &w->t);
	s->inflight = 0;
	struct io_uring_sqe *sqe = get_sqe(&w->ring);
	prep_provide_arena(sqe, &w->bufs, BGID, cqe_bid(c), 1);
	sqe->user_data = ledger_issue(&w->ud, TAG_PROVIDE);
	/* A stream may deliver a message in pieces: receive the rest. */
	if (s->rd_off < s->wr_off)
		worker_submit_recv(w, tag - TAG_RECV, 0);
}

/* Reaps until every socket has received all that was written to it. */
static void worker_settle(struct worker *w)
{
	for (;;) {
		int busy = 0;
		for (unsigned i = 0; i < SOCKS; i++)
			busy |= w->s[i].inflight || w->s[i].rd_off < w->s[i].wr_off;
		if (!busy)
			return;
		struct io_uring_cqe *cqe;
		int ret = io_uring_submit_and_wait(&w->ring, 1);
		if (ret < 0)
			die("thread %u: submit_and_wait: %s", w->id, strerror(-ret));
		unsigned head, n = 0;
		struct io_uring_cqe batch[64];
		io_uring_for_each_cqe(&w->ring, head, cqe) {
			batch[n++] = *cqe;
			if (n == 64)
				break;
		}
		io_uring_cq_advance(&w->ring, n);
		for (unsigned i = 0; i < n; i++)
			worker_cqe(w, &batch[i]);
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	int ret = io_uring_queue_init(64, &w->ring, 0);
	if (ret < 0)
		die("thread %u: queue_init: %s", w->id, strerror(-ret));
	ledger_init(&w->ud, w->id);
	for (unsigned i = 0; i < SOCKS; i++)
		sock_open(&w->s[i], i, w->id * 16 + i);
	struct io_uring_sqe *sqe = get_sqe(&w->ring);
	prep_provide_arena(sqe, &w->bufs, BGID, 0, NBUF);
	sqe->user_data = ledger_issue(&w->ud, TAG_PROVIDE);

	for (unsigned k = 0; k < w->rounds; k++) {
		atomic_store(&w->round, k);
		/* Data first, receives first, or receives that poll first. */
		unsigned how = (k + w->id) % 3;
		if (how == 0)
			for (unsigned i = 0; i < SOCKS; i++)
				sock_write(&w->s[i]);
		for (unsigned i = 0; i < SOCKS; i++)
			worker_submit_recv(w, i, how == 2);
		ret = io_uring_submit(&w->ring);
		if (ret < 0)
			die("thread %u: submit: %s", w->id, strerror(-ret));
		if (how != 0)
			for (unsigned i = 0; i < SOCKS; i++)
				sock_write(&w->s[i]);
		worker_settle(w);
	}
	/* The last re-provides are still to complete. */
	io_uring_submit(&w->ring);
	while (w->ud.seen < w->ud.issued) {
		struct io_uring_cqe c;
		reap(&w->ring, &c, 1);
		worker_cqe(w, &c);
	}
	w->t.removed = remove_all(&w->ring, &w->ud, NBUF);
	ledger_check_all(&w->ud, "own ring");
	for (unsigned i = 0; i < SOCKS; i++)
		w->t.msgs += w->s[i].wr_msgs;
	for (unsigned i = 0; i < SOCKS; i++) {
		close(w->s[i].rd);
		close(w->s[i].wr);
	}
	io_uring_queue_exit(&w->ring);
	return NULL;
}

/* ---- one ring, a submitting and a reaping thread ---------------------------- */

struct event {
	unsigned sock;
	unsigned bid;
	unsigned bytes;
};

static struct shared {
	unsigned rounds;
	struct io_uring ring;
	struct arena bufs;
	struct ledger ud;		/* issued by the submitter, completed by the reaper */
	struct sock s[SOCKS];
	uint64_t got[SOCKS];		/* submitter's view: bytes received per socket */
	unsigned done_rounds[SOCKS];
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct event q[SOCKS];		/* at most one receive per socket completes at a time */
	unsigned qhead, qlen;
	struct totals t;		/* the reaper's */
	atomic_uint submitted_rounds;
	unsigned pings;
	atomic_uint pongs;		/* NOPs the reaper has seen */
} sh = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

static void shared_recv(unsigned i, unsigned k)
{
	struct sock *s = &sh.s[i];
	unsigned how = (k + i) % 3;
	if (how == 0)
		sock_write(s);
	struct io_uring_sqe *sqe = get_sqe(&sh.ring);
	prep_recv(sqe, s, how == 2);
	sqe->user_data = ledger_issue(&sh.ud, TAG_RECV + i);
	if (io_uring_submit(&sh.ring) < 0)
		die("shared submitter: submit failed");
	if (how != 0)
		sock_write(s);
	/* Nothing to submit: liburing still enters when the ring asks it to
	 * (IORING_SQ_TASKRUN), and that enter collects completions too, at the
	 * moment the reaper may be on its way to sleep waiting for them. */
	if (io_uring_submit(&sh.ring) < 0)
		die("shared submitter: submit failed");
}

/*
 * NOPs one at a time: each completes inside the submitter's own enter, and
 * the submitter enters once more at once (liburing does when the ring shows
 * IORING_SQ_TASKRUN), collecting the completion at the moment the reaper is
 * on its way to sleep waiting for it.  The reaper must wake all the same.
 */
static void shared_pings(void)
{
	for (unsigned i = 0; i < sh.pings; i++) {
		struct io_uring_sqe *sqe = get_sqe(&sh.ring);
		io_uring_prep_nop(sqe);
		sqe->user_data = ledger_issue(&sh.ud, TAG_PING);
		if (io_uring_submit(&sh.ring) != 1 || io_uring_submit(&sh.ring) < 0)
			die("shared submitter: submit failed");
		while (atomic_load(&sh.pongs) <= i)
			sched_yield();
	}
}

static void *shared_submitter(void *arg)
{
	(void)arg;
	shared_pings();
	struct io_uring_sqe *sqe = get_sqe(&sh.ring);
	prep_provide_arena(sqe, &sh.bufs, BGID, 0, SH_NBUF);
	sqe->user_data = ledger_issue(&sh.ud, TAG_PROVIDE);
	submit_expect(&sh.ring, 1);
	for (unsigned i = 0; i < SH_SOCKS; i++)
		shared_recv(i, 0);
	unsigned finished = 0;
	while (finished < SH_SOCKS) {
		pthread_mutex_lock(&sh.lock);
		while (!sh.qlen)
			pthread_cond_wait(&sh.cond, &sh.lock);
		struct event e = sh.q[sh.qhead];
		sh.qhead = (sh.qhead + 1) % SH_SOCKS;
		sh.qlen--;
		pthread_mutex_unlock(&sh.lock);

		sqe = get_sqe(&sh.ring);
		prep_provide_arena(sqe, &sh.bufs, BGID, e.bid, 1);
		sqe->user_data = ledger_issue(&sh.ud, TAG_PROVIDE);
		struct sock *s = &sh.s[e.sock];
		sh.got[e.sock] += e.bytes;
		if (sh.got[e.sock] < s->wr_off) {
			/* The rest of a stream message. */
			sqe = get_sqe(&sh.ring);
			prep_recv(sqe, s, 0);
			sqe->user_data = ledger_issue(&sh.ud, TAG_RECV + e.sock);
			if (io_uring_submit(&sh.ring) < 0)
				die("shared submitter: submit failed");
			continue;
		}
		unsigned k = ++sh.done_rounds[e.sock];
		atomic_fetch_add(&sh.submitted_rounds, 1);
		if (k < sh.rounds) {
			shared_recv(e.sock, k);
		} else {
			if (io_uring_submit(&sh.ring) < 0)
				die("shared submitter: submit failed");
			finished++;
		}
	}
	/* The reaper stops at this NOP once everything before it is in. */
	sqe = get_sqe(&sh.ring);
	io_uring_prep_nop(sqe);
	sqe->user_data = ledger_issue(&sh.ud, TAG_END);
	if (io_uring_submit(&sh.ring) != 1)
		die("shared submitter: submit of the end marker failed");
	return NULL;
}

static void *shared_reaper(void *arg)
{
	(void)arg;
	int end = 0;
	while (!end || sh.ud.seen < sh.ud.issued) {
		struct io_uring_cqe *cqe;
		int ret = io_uring_wait_cqe(&sh.ring, &cqe);
		if (ret < 0)
			die("shared reaper: wait_cqe: %s", strerror(-ret));
		struct io_uring_cqe c = *cqe;
		io_uring_cqe_seen(&sh.ring, cqe);
		ledger_complete(&sh.ud, c.user_data, "shared reaper");
		unsigned tag = ud_tag(c.user_data);
		if (tag == TAG_END) {
			end = 1;
		} else if (tag == TAG_PING) {
			if (c.res != 0)
				die("shared reaper: NOP returned %d", c.res);
			atomic_fetch_add(&sh.pongs, 1);
		} else if (tag == TAG_PROVIDE) {
			if (c.res != 0)
				die("shared reaper: PROVIDE_BUFFERS returned %d", c.res);
			sh.t.provides++;
		} else if (tag >= TAG_RECV && tag < TAG_RECV + SH_SOCKS) {
			struct sock *s = &sh.s[tag - TAG_RECV];
			check_recv("shared reaper", s, &c, &sh.bufs, &sh.t);
			pthread_mutex_lock(&sh.lock);
			if (sh.qlen == SH_SOCKS)
				die("shared reaper: more receives completed than were in flight");
			sh.q[(sh.qhead + sh.qlen++) % SH_SOCKS] =
				(struct event){ tag - TAG_RECV, cqe_bid(&c), (unsigned)c.res };
			pthread_cond_signal(&sh.cond);
			pthread_mutex_unlock(&sh.lock);
		} else {
			die("shared reaper: completion with tag %u", tag);
		}
	}
	return NULL;
}

/* ---- main ------------------------------------------------------------------ */

static struct worker workers[OWN_THREADS];

static void describe(void)
{
	for (unsigned i = 0; i < OWN_THREADS; i++)
		fprintf(stderr, "  thread %u: round %u of %u, %llu of %llu requests completed\n", workers[i].id,
			atomic_load(&workers[i].round), workers[i].rounds,
			(unsigned long long)workers[i].ud.seen, (unsigned long long)workers[i].ud.issued);
	fprintf(stderr, "  shared ring: %u of %u NOPs seen, %u socket rounds done, %llu of %llu requests completed, %u CQEs ready unreaped, sq flags 0x%x\n",
		atomic_load(&sh.pongs), sh.pings, atomic_load(&sh.submitted_rounds), (unsigned long long)sh.ud.seen,
		(unsigned long long)sh.ud.issued, io_uring_cq_ready(&sh.ring),
		IO_URING_READ_ONCE(*sh.ring.sq.kflags));
}

int main(int argc, char **argv)
{
	unsigned scale = stress_scale(argc, argv);
	pthread_t th[OWN_THREADS + 2];

	stress_watchdog_start(10, describe);
	for (unsigned i = 0; i < OWN_THREADS; i++) {
		workers[i].id = i + 1;
		workers[i].rounds = OWN_ROUNDS * scale;
		workers[i].bufs = arena_new(BUFLEN, NBUF);
	}
	sh.rounds = SH_ROUNDS * scale;
	sh.pings = PINGS * scale;
	sh.bufs = arena_new(BUFLEN, SH_NBUF);
	ledger_init(&sh.ud, SHARED_OWNER);
	for (unsigned i = 0; i < SH_SOCKS; i++)
		sock_open(&sh.s[i], i, SHARED_OWNER * 16 + i);
	int ret = io_uring_queue_init(64, &sh.ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));

	/* The NOPs first, alone: the two threads then run on their own CPUs,
	 * where the reaper's way to sleep and the submitter's collecting
	 * overlap most.  Then everything at once, on an oversubscribed machine. */
	if (pthread_create(&th[OWN_THREADS], NULL, shared_reaper, NULL) != 0 ||
	    pthread_create(&th[OWN_THREADS + 1], NULL, shared_submitter, NULL) != 0)
		die("pthread_create");
	while (atomic_load(&sh.pongs) < sh.pings) {
		struct timespec ts = { .tv_nsec = 2 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	stress_hogs_start(2);
	for (unsigned i = 0; i < OWN_THREADS; i++)
		if (pthread_create(&th[i], NULL, worker_main, &workers[i]) != 0)
			die("pthread_create");
	for (unsigned i = 0; i < OWN_THREADS + 2; i++)
		pthread_join(th[i], NULL);
	stress_hogs_stop();

	sh.t.removed = remove_all(&sh.ring, &sh.ud, SH_NBUF);
	ledger_check_all(&sh.ud, "shared ring");
	stress_watchdog_stop();

	struct totals all = { 0 };
	note("scale %u: %u threads with a ring each, %u rounds of %u sockets; one shared ring, %u rounds of %u sockets",
	     scale, OWN_THREADS, OWN_ROUNDS * scale, SOCKS, SH_ROUNDS * scale, SH_SOCKS);
	for (unsigned i = 0; i < OWN_THREADS; i++) {
		struct totals *t = &workers[i].t;
		note("thread %u: %lu messages, %lu receives, %lu bytes, %lu provides, %llu requests, group holds %d",
		     workers[i].id, t->msgs, t->recvs, t->bytes, t->provides,
		     (unsigned long long)workers[i].ud.issued, t->removed);
		all.recvs += t->recvs;
		all.bytes += t->bytes;
		all.provides += t->provides;
	}
	for (unsigned i = 0; i < SH_SOCKS; i++)
		sh.t.msgs += sh.s[i].wr_msgs;
	note("shared ring: %u NOPs one at a time, %lu messages, %lu receives, %lu bytes, %lu provides, %llu requests, group holds %d",
	     atomic_load(&sh.pongs), sh.t.msgs, sh.t.recvs, sh.t.bytes, sh.t.provides,
	     (unsigned long long)sh.ud.issued, sh.t.removed);
	note("all rings: %lu receives, %lu bytes, every user_data completed once, every byte checked",
	     all.recvs + sh.t.recvs, all.bytes + sh.t.bytes);
	io_uring_queue_exit(&sh.ring);
	return 0;
}
