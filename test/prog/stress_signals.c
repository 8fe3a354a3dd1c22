/*
 * Signals that keep landing while threads wait for completions.  Four
 * worker threads, each with its own ring and group, receive messages that a
 * feeder thread of their own writes with short pauses, so that the workers
 * spend most of their time asleep in io_uring_enter; a signaller thread
 * sends SIGUSR1 (handler without SA_RESTART) and SIGUSR2 (handler with
 * SA_RESTART) to them without pause.  Each receive is waited for in one of
 * six ways, in turn:
 *
 *   io_uring_wait_cqe, io_uring_submit_and_wait, io_uring_wait_cqe_timeout
 *   (EXT_ARG), io_uring_wait_cqes with a sigmask that blocks SIGUSR1 and a
 *   timeout: liburing's inline system calls, bufsel's trap path;
 *   syscall(io_uring_enter, GETEVENTS), and the same with EXT_ARG and a
 *   timeout: through libc, bufsel's hook path.
 *
 * The kernel ends such a wait with -EINTR whether or not the handler has
 * SA_RESTART; every wait must end in a completion, -EINTR or -ETIME, and
 * is then retried until the completion is there.  Every few signals the
 * handler itself runs a NOP on a ring of its own (a ring used from a signal
 * that may have interrupted bufsel inside the SIGSYS handler).
 *
 * How often a wait was interrupted is the scheduler's business, so only what
 * the workload fixes is printed: messages and bytes per worker (every byte
 * checked, every user_data completed once), and at the end, for each way of
 * waiting, that a wait with nothing to wait for ends in -EINTR.  Two workers
 * receive with RECV on SEQPACKET socketpairs, two with READ on pipes, both
 * with IOSQE_BUFFER_SELECT.  argv[1] multiplies the messages.
 */
#include "test/prog/stress.h"

#include <signal.h>
#include <sys/syscall.h>

#define WORKERS 4
#define MSGS 6000
#define NBUF 8
#define BUFLEN 128
#define BGID 5
#define HANDLER_NOP_EVERY 8

enum tag { TAG_PROVIDE = 1, TAG_DATA, TAG_HANDLER_NOP };

enum wait_way { W_WAIT_CQE, W_SUBMIT_AND_WAIT, W_WAIT_TIMEOUT, W_WAIT_SIGMASK, W_RAW, W_RAW_EXT_ARG, W_WAYS };

static const char *const way_name[W_WAYS] = {
	"io_uring_wait_cqe",		"io_uring_submit_and_wait",
	"io_uring_wait_cqe_timeout",	"io_uring_wait_cqes with a sigmask",
	"syscall(io_uring_enter)",	"syscall(io_uring_enter, EXT_ARG)",
};

/* ---- the handler's side ----------------------------------------------------- */

static __thread unsigned tl_handled;		/* signals this thread handled */
static __thread struct io_uring *tl_hring;	/* the handler's own ring, once set up */
static __thread unsigned tl_hnops;
static __thread unsigned long long tl_hnop_ud;
static atomic_int handler_failed;
/* The first failure, for the report: what failed and with what. */
static struct {
	const char *what;
	long long got, ud;
} handler_failure;

static void handler_fail(const char *what, long long got, unsigned long long ud)
{
	int zero = 0;
	if (atomic_compare_exchange_strong(&handler_failed, &zero, 1))
		handler_failure.what = what, handler_failure.got = got, handler_failure.ud = (long long)ud;
}

static void on_signal(int sig)
{
	(void)sig;
	int saved = errno;
	tl_handled++;
	if (tl_hring && tl_handled % HANDLER_NOP_EVERY == 0) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(tl_hring);
		struct io_uring_cqe *cqe;
		if (!sqe) {
			handler_fail("no SQE", 0, 0);
		} else {
			io_uring_prep_nop(sqe);
			sqe->user_data = ++tl_hnop_ud;
			/* Both signals are blocked here, so this wait cannot be interrupted. */
			int ret = io_uring_submit(tl_hring);
			if (ret != 1) {
				handler_fail("io_uring_submit returned", ret, tl_hnop_ud);
			} else if ((ret = io_uring_wait_cqe(tl_hring, &cqe)) != 0) {
				handler_fail("io_uring_wait_cqe returned", ret, tl_hnop_ud);
			} else {
				if (cqe->user_data != tl_hnop_ud || cqe->res != 0)
					handler_fail("the CQE's res", cqe->res, cqe->user_data);
				io_uring_cqe_seen(tl_hring, cqe);
			}
			tl_hnops++;
		}
	}
	errno = saved;
}

/* ---- workers ------------------------------------------------------------------ */

struct worker {
	unsigned id;
	int recv;			/* RECV on a socket, else READ on a pipe */
	unsigned msgs;
	int rd, wr;
	pthread_t thread, feeder;
	struct io_uring ring, hring;
	struct arena bufs;
	struct ledger ud;
	uint32_t key;
	unsigned long bytes;
	unsigned got;
	atomic_int done;		/* messages received (the pipe's feeder waits on it);
					 * -1 once the worker no longer wants signals */
	int interrupted[W_WAYS];	/* the last phase: what a wait on nothing returned */
	unsigned handled, hnops;
	unsigned long eintr, etime;	/* how often waits were cut short: stderr only */
};

static struct worker workers[WORKERS];
static atomic_int stop_signals;

static unsigned msg_len(uint32_t key, unsigned m)
{
	return 1 + stress_mix(key ^ (m + 1) * 0x27d4eb2du) % BUFLEN;
}

/* Pauses of 0 to about 100 microseconds: the worker is often asleep when data comes. */
static void *feeder_main(void *arg)
{
	struct worker *w = arg;
	unsigned char buf[BUFLEN];
	uint64_t off = 0;
	for (unsigned m = 0; m < w->msgs; m++) {
		unsigned pause = stress_mix(w->key * 7 + m) % 4;
		if (pause) {
			struct timespec ts = { .tv_nsec = (long)pause * 30000 };
			nanosleep(&ts, NULL);
		}
		unsigned n = msg_len(w->key, m);
		stress_fill(buf, w->key, off, n);
		/* A pipe keeps no message boundaries: one write per message, and the
		 * reader waits for each before the next is written. */
		if (!w->recv)
			while (atomic_load(&w->done) < (int)m)
				sched_yield();
		write_all(w->wr, buf, n);
		off += n;
	}
	return NULL;
}

/* Waits in the given way until a CQE is there; every return is checked. */
static void wait_one(struct worker *w, enum wait_way way, int submitted)
{
	sigset_t usr1;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	for (;;) {
		struct io_uring_cqe *cqe;
		struct __kernel_timespec ts = { .tv_nsec = 2 * 1000 * 1000 };
		int ret;
		/* A CQE already there ends the wait, once the request is in. */
		if (submitted && io_uring_peek_cqe(&w->ring, &cqe) == 0)
			return;
		switch (way) {
		case W_WAIT_CQE:
			ret = io_uring_wait_cqe(&w->ring, &cqe);
			break;
		case W_SUBMIT_AND_WAIT:
			ret = io_uring_submit_and_wait(&w->ring, 1);
			/* The SQE went in even when the wait was interrupted. */
			if (!submitted && ret < 1 && ret != -EINTR)
				die("worker %u: submit_and_wait returned %d", w->id, ret);
			if (ret >= 1)
				submitted = 1;
			if (ret > 0)
				ret = 0;
			break;
		case W_WAIT_TIMEOUT:
			ret = io_uring_wait_cqe_timeout(&w->ring, &cqe, &ts);
			break;
		case W_WAIT_SIGMASK:
			ret = io_uring_wait_cqes(&w->ring, &cqe, 1, &ts, &usr1);
			break;
		case W_RAW:
			ret = (int)syscall(__NR_io_uring_enter, w->ring.ring_fd, 0, 1, IORING_ENTER_GETEVENTS, NULL, 0);
			ret = ret < 0 ? -errno : ret;
			break;
		default: {
			struct io_uring_getevents_arg ga = { .ts = (uint64_t)(uintptr_t)&ts };
			ret = (int)syscall(__NR_io_uring_enter, w->ring.ring_fd, 0, 1,
					   IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG, &ga, sizeof(ga));
			ret = ret < 0 ? -errno : ret;
			break;
		}
		}
		int timed = way == W_WAIT_TIMEOUT || way == W_WAIT_SIGMASK || way == W_RAW_EXT_ARG;
		w->eintr += ret == -EINTR;
		w->etime += ret == -ETIME;
		if (ret != 0 && ret != -EINTR && !(timed && ret == -ETIME))
			die("worker %u: %s returned %d", w->id, way_name[way], ret);
	}
}

static void worker_cqe(struct worker *w, const struct io_uring_cqe *c)
{
	char who[32];
	snprintf(who, sizeof(who), "worker %u", w->id);
	ledger_complete(&w->ud, c->user_data, who);
	if (ud_tag(c->user_data) == TAG_PROVIDE) {
		/* 0, or before 5.18 the number of buffers added to a group
		 * that had some. */
		if (c->res < 0)
			die("%s: PROVIDE_BUFFERS returned %d", who, c->res);
		return;
	}
	unsigned n = msg_len(w->key, w->got);
	if (c->res != (int)n || !(c->flags & IORING_CQE_F_BUFFER) || cqe_bid(c) >= NBUF)
		die("%s: message %u: res %d flags 0x%x, wanted %u bytes in a buffer", who, w->got, c->res,
		    c->flags, n);
	char *p = arena_buf(&w->bufs, cqe_bid(c));
	long bad = stress_check((unsigned char *)p, w->key, w->bytes, n);
	if (bad >= 0)
		die("%s: message %u: byte %ld is wrong", who, w->got, bad);
	memset(p, '.', BUFLEN);
	w->bytes += n;
	w->got++;
	atomic_store(&w->done, (int)w->got);
	struct io_uring_sqe *sqe = get_sqe(&w->ring);
	prep_provide_arena(sqe, &w->bufs, BGID, cqe_bid(c), 1);
	sqe->user_data = ledger_issue(&w->ud, TAG_PROVIDE);
}

static void reap_ready(struct worker *w)
{
	struct io_uring_cqe *cqe;
	while (io_uring_peek_cqe(&w->ring, &cqe) == 0) {
		struct io_uring_cqe c = *cqe;
		io_uring_cqe_seen(&w->ring, cqe);
		worker_cqe(w, &c);
	}
}

/* A wait on a ring with nothing in flight can only end by a signal. */
static int wait_on_nothing(struct worker *w, enum wait_way way)
{
	sigset_t usr1;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	struct io_uring_cqe *cqe;
	struct __kernel_timespec ts = { .tv_sec = 20 };
	switch (way) {
	case W_WAIT_CQE:
		return io_uring_wait_cqe(&w->ring, &cqe);
	case W_SUBMIT_AND_WAIT:
		return io_uring_submit_and_wait(&w->ring, 1);
	case W_WAIT_TIMEOUT:
		return io_uring_wait_cqe_timeout(&w->ring, &cqe, &ts);
	case W_WAIT_SIGMASK:
		return io_uring_wait_cqes(&w->ring, &cqe, 1, &ts, &usr1);
	case W_RAW: {
		int ret = (int)syscall(__NR_io_uring_enter, w->ring.ring_fd, 0, 1, IORING_ENTER_GETEVENTS, NULL, 0);
		return ret < 0 ? -errno : ret;
	}
	default: {
		struct io_uring_getevents_arg ga = { .ts = (uint64_t)(uintptr_t)&ts };
		int ret = (int)syscall(__NR_io_uring_enter, w->ring.ring_fd, 0, 1,
				       IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG, &ga, sizeof(ga));
		return ret < 0 ? -errno : ret;
	}
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	int ret = io_uring_queue_init(16, &w->ring, 0);
	if (ret < 0 || (ret = io_uring_queue_init(4, &w->hring, 0)) < 0)
		die("worker %u: queue_init: %s", w->id, strerror(-ret));
	tl_hring = &w->hring;
	struct io_uring_sqe *sqe = get_sqe(&w->ring);
	prep_provide_arena(sqe, &w->bufs, BGID, 0, NBUF);
	sqe->user_data = ledger_issue(&w->ud, TAG_PROVIDE);
	submit_expect(&w->ring, 1);
	if (pthread_create(&w->feeder, NULL, feeder_main, w) != 0)
		die("pthread_create");

	for (unsigned m = 0; m < w->msgs; m++) {
		enum wait_way way = (enum wait_way)((m + w->id) % W_WAYS);
		sqe = get_sqe(&w->ring);
		if (w->recv)
			io_uring_prep_recv(sqe, w->rd, NULL, BUFLEN, 0);
		else
			io_uring_prep_read(sqe, w->rd, NULL, BUFLEN, 0);
		sqe->flags |= IOSQE_BUFFER_SELECT;
		sqe->buf_group = BGID;
		sqe->user_data = ledger_issue(&w->ud, TAG_DATA);
		if (way != W_SUBMIT_AND_WAIT) {
			ret = io_uring_submit(&w->ring);
			if (ret < 1)
				die("worker %u: submit returned %d", w->id, ret);
		}
		/* The previous message's re-provide is in this batch too: the
		 * message is in once every completion so far is reaped. */
		while (w->got <= m) {
			wait_one(w, way, way != W_SUBMIT_AND_WAIT);
			reap_ready(w);
			way = way == W_SUBMIT_AND_WAIT ? W_WAIT_CQE : way;
		}
	}
	io_uring_submit(&w->ring);
	while (w->ud.seen < w->ud.issued) {
		struct io_uring_cqe c;
		reap(&w->ring, &c, 1);
		worker_cqe(w, &c);
	}
	pthread_join(w->feeder, NULL);
	ledger_check_all(&w->ud, "worker");
	for (unsigned k = 0; k < W_WAYS; k++)
		w->interrupted[k] = wait_on_nothing(w, (enum wait_way)k);
	/* The handler must have run its ring at least once: signal until it has. */
	while (!tl_hnops)
		pthread_kill(pthread_self(), SIGUSR1);
	w->handled = tl_handled;
	w->hnops = tl_hnops;
	tl_hring = NULL;
	atomic_store(&w->done, -1);
	/* Signals keep coming until every worker is done: stay until then. */
	while (!atomic_load(&stop_signals))
		sched_yield();
	io_uring_queue_exit(&w->hring);
	io_uring_queue_exit(&w->ring);
	return NULL;
}

static void *signaller_main(void *arg)
{
	(void)arg;
	for (unsigned k = 0;; k++) {
		int running = 0;
		for (unsigned i = 0; i < WORKERS; i++) {
			if (atomic_load(&workers[i].done) == -1)
				continue;
			running = 1;
			pthread_kill(workers[i].thread, k % 2 ? SIGUSR2 : SIGUSR1);
		}
		if (!running)
			break;
		struct timespec ts = { .tv_nsec = 20 * 1000 };
		nanosleep(&ts, NULL);
	}
	atomic_store(&stop_signals, 1);
	return NULL;
}

static void describe(void)
{
	for (unsigned i = 0; i < WORKERS; i++)
		fprintf(stderr, "  worker %u: %u of %u messages, %llu of %llu requests completed\n", workers[i].id,
			workers[i].got, workers[i].msgs, (unsigned long long)workers[i].ud.seen,
			(unsigned long long)workers[i].ud.issued);
}

static void install(int sig, int flags)
{
	struct sigaction sa = { .sa_handler = on_signal, .sa_flags = flags };
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGUSR1);
	sigaddset(&sa.sa_mask, SIGUSR2);
	if (sigaction(sig, &sa, NULL) < 0)
		die("sigaction: %s", strerror(errno));
}

int main(int argc, char **argv)
{
	unsigned scale = stress_scale(argc, argv);
	install(SIGUSR1, 0);
	install(SIGUSR2, SA_RESTART);
	stress_watchdog_start(10, describe);

	for (unsigned i = 0; i < WORKERS; i++) {
		struct worker *w = &workers[i];
		int fds[2];
		w->id = i + 1;
		w->recv = i % 2 == 0;
		w->msgs = MSGS * scale;
		w->key = 1000 + i;
		w->bufs = arena_new(BUFLEN, NBUF);
		ledger_init(&w->ud, w->id);
		if (w->recv ? socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) : pipe2(fds, O_CLOEXEC))
			die("socketpair/pipe: %s", strerror(errno));
		w->rd = fds[0];
		w->wr = fds[1];
	}
	for (unsigned i = 0; i < WORKERS; i++)
		if (pthread_create(&workers[i].thread, NULL, worker_main, &workers[i]) != 0)
			die("pthread_create");
	pthread_t sig;
	if (pthread_create(&sig, NULL, signaller_main, NULL) != 0)
		die("pthread_create");
	pthread_join(sig, NULL);
	for (unsigned i = 0; i < WORKERS; i++)
		pthread_join(workers[i].thread, NULL);
	stress_watchdog_stop();
	if (atomic_load(&handler_failed))
		die("a NOP run from the signal handler failed: %s %lld (user_data %lld)", handler_failure.what,
		    handler_failure.got, handler_failure.ud);

	note("scale %u: %u workers, %u messages each, SIGUSR1 without and SIGUSR2 with SA_RESTART",
	     scale, WORKERS, MSGS * scale);
	for (unsigned i = 0; i < WORKERS; i++) {
		struct worker *w = &workers[i];
		note("worker %u (%s with buffer select): %u messages, %lu bytes, %llu requests, every one completed once",
		     w->id, w->recv ? "RECV on a SEQPACKET socket" : "READ on a pipe", w->got, w->bytes,
		     (unsigned long long)w->ud.issued);
		note("worker %u: signals handled %s, the handler's own ring used %s", w->id,
		     w->handled ? "yes" : "no", w->hnops ? "yes" : "no");
		for (unsigned k = 0; k < W_WAYS; k++)
			note("worker %u: %s with nothing to wait for returned %d", w->id, way_name[k],
			     w->interrupted[k]);
		fprintf(stderr, "worker %u: %u signals handled, %u handler NOPs, %lu waits ended by -EINTR, %lu by -ETIME\n",
			w->id, w->handled, w->hnops, w->eintr, w->etime);
	}
	return 0;
}
