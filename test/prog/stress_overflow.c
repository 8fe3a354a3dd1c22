/*
 * A CQ of 8 entries overflowed a hundred times over before the program
 * reaps anything (IORING_FEAT_NODROP keeps every completion): 100 batches of
 * 8 NOPs, then, with the backlog in place, what bufsel answers or rewrites
 * itself: PROVIDE_BUFFERS (good and bad), REMOVE_BUFFERS, READs and RECVs
 * with buffer select that find their data at once, and a RECV that waits for
 * its data and gets it while the backlog is still there.  Then everything is
 * reaped with bounded waits and printed in the order the ring delivered it,
 * with the bytes of every buffer: a completion lost or reordered anywhere
 * in the backlog shows up here.  The overflow flag and the dropped counter
 * are printed along the way.
 */
#include "test/prog/bs_bufs.h"

#define BATCHES 100
/* The NOPs, 4 PROVIDEs, the NOP behind the failing one, 4 READs, 8 RECVs,
 * the REMOVE and the RECV that waited. */
#define EXPECTED (BATCHES * 8 + 4 + 1 + 4 + 8 + 1 + 1)

static struct io_uring ring;

static void flags_note(const char *when)
{
	note("%s: IORING_SQ_CQ_OVERFLOW %d, koverflow %u", when,
	     !!(IO_URING_READ_ONCE(*ring.sq.kflags) & IORING_SQ_CQ_OVERFLOW),
	     IO_URING_READ_ONCE(*ring.cq.koverflow));
}

static void submit_note(const char *what, int want)
{
	int ret = io_uring_submit(&ring);
	if (want >= 0 && ret != want)
		die("%s: submit returned %d, wanted %d", what, ret, want);
	if (want < 0)
		note("%s: submit returned %d", what, ret);
}

int main(void)
{
	struct io_uring_params p = { .flags = IORING_SETUP_CQSIZE, .cq_entries = 8 };
	int ret = io_uring_queue_init_params(8, &ring, &p);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	note("sq %u cq %u", p.sq_entries, p.cq_entries);

	for (unsigned b = 0; b < BATCHES; b++) {
		for (unsigned i = 0; i < 8; i++) {
			struct io_uring_sqe *sqe = get_sqe(&ring);
			io_uring_prep_nop(sqe);
			sqe->user_data = 1 + b * 8 + i;
		}
		submit_note("NOPs", 8);
	}
	note("%u NOPs submitted", BATCHES * 8);
	flags_note("after the NOPs");

	/* The READs' data on a stream socket, not a pipe: a pipe has no
	 * FMODE_NOWAIT before 5.12, so there its READs go through io-wq,
	 * whose completions the kernel orders freely among the RECVs'. */
	int pip[2], sv[2], wv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pip) < 0 ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0 ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, wv) < 0)
		die("socketpair: %s", strerror(errno));
	struct arena g1 = arena_new(8, 32), g2 = arena_new(16, 2);

	struct io_uring_sqe *sqe = get_sqe(&ring);
	prep_provide_arena(sqe, &g1, 1, 0, 32);
	sqe->user_data = 2001;
	sqe = get_sqe(&ring);
	prep_provide_arena(sqe, &g2, 2, 0, 2);
	sqe->user_data = 2003;
	submit_note("provides", 2);
	note("a PROVIDE that fails at submission stops the batch there");
	sqe = get_sqe(&ring);
	io_uring_prep_provide_buffers(sqe, g1.base, 8, 0, 1, 0);	/* nbufs 0: -EINVAL */
	sqe->user_data = 2002;
	sqe = get_sqe(&ring);
	io_uring_prep_nop(sqe);
	sqe->user_data = 2005;
	submit_note("a bad PROVIDE and a NOP", -1);
	submit_note("the NOP left behind", -1);

	write_all(pip[1], "0123456789abcdefghijklmnopqrstuv", 32);
	for (unsigned i = 0; i < 8; i++) {
		char m[16];
		snprintf(m, sizeof(m), "msg-%u", i);
		if (send(sv[1], m, strlen(m), 0) != (ssize_t)strlen(m))
			die("send: %s", strerror(errno));
	}
	for (unsigned i = 0; i < 4; i++)
		prep_read_sel(&ring, pip[0], 8, 1, 0, 2100 + i);
	for (unsigned i = 0; i < 4; i++)
		prep_recv_sel(&ring, sv[0], 0, 0, 1, 2200 + i);
	submit_note("reads and receives", 8);
	for (unsigned i = 4; i < 8; i++)
		prep_recv_sel(&ring, sv[0], 0, 0, 1, 2200 + i);
	sqe = get_sqe(&ring);
	io_uring_prep_remove_buffers(sqe, 4, 1);
	sqe->user_data = 2300;
	submit_note("receives and a remove", 5);

	note("a RECV that waits, and its data sent while the backlog is there");
	prep_recv_sel(&ring, wv[0], 0, 0, 2, 2400);
	submit_note("the waiting RECV", 1);
	if (send(wv[1], "late", 4, 0) != 4)
		die("send: %s", strerror(errno));

	flags_note("before reaping");

	/* Bounded waits: a lost completion ends the loop instead of hanging;
	 * once all are in, a short wait shows any one too many. */
	static struct io_uring_cqe got[2048];
	unsigned n = 0;
	for (;;) {
		struct io_uring_cqe *cqe;
		struct __kernel_timespec ts = { .tv_sec = n < EXPECTED ? 2 : 0, .tv_nsec = n < EXPECTED ? 0 : 50000000 };
		ret = io_uring_wait_cqe_timeout(&ring, &cqe, &ts);
		if (ret == -ETIME)
			break;
		if (ret < 0)
			die("wait: %s", strerror(-ret));
		if (n == 2048)
			die("more than 2048 completions");
		got[n++] = *cqe;
		io_uring_cqe_seen(&ring, cqe);
	}
	note("reaped %u", n);
	flags_note("after reaping");
	unsigned nops = 0;
	for (unsigned i = 0; i < n; i++) {
		if (got[i].user_data <= BATCHES * 8) {
			if (got[i].user_data != ++nops || got[i].res != 0)
				die("NOP %u: completion %u has ud %llu res %d", nops, i,
				    (unsigned long long)got[i].user_data, got[i].res);
			continue;
		}
		show(&got[i], got[i].user_data < 2400 ? &g1 : &g2);
	}
	note("%u NOPs, in order", nops);

	note("the ring still works");
	sqe = get_sqe(&ring);
	io_uring_prep_nop(sqe);
	sqe->user_data = 3000;
	submit_expect(&ring, 1);
	reap_print(&ring, 1);
	io_uring_queue_exit(&ring);
	return 0;
}
