/*
 * The script behind the statistics tests (test/integration/policy.c), with
 * counts chosen so that every counter of the JSON has a known value:
 *
 * Group 1, 4 buffers of 16: READs of 3, 5 and 7 bytes (15 bytes in all),
 * each buffer kept; a RECV on a socket whose peer has shut down, which
 * completes at EOF without F_BUFFER and puts its buffer back; a REMOVE of
 * that last buffer; a READ on the emptied group: -ENOBUFS.
 *
 * Group 2, 2 buffers of 16: a READ pending on an empty pipe holds one buffer
 * while a second READ, on a pipe with data, is issued (the one a cap of 1
 * refuses); then the pending READ gets 2 bytes.
 *
 * Group 3, 1 buffer of 16: one READ on a pipe with data (the one an
 * -ENOBUFS rate of 1 refuses).
 *
 * Natively nothing fails but the READ on the emptied group 1.
 */
#include "test/prog/bs_bufs.h"

static struct io_uring ring;

static void pipe_or_die(int p[2])
{
	if (pipe(p) < 0)
		die("pipe: %s", strerror(errno));
}

int main(void)
{
	int ret = io_uring_queue_init(16, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	int p[2];
	pipe_or_die(p);

	note("group 1: 4 buffers of 16; READs of 3, 5 and 7 bytes");
	struct arena a1 = arena_new(16, 4);
	provide(&ring, &a1, 1, 0, 4, 1);
	write_all(p[1], "abc", 3);
	run_one(&ring, prep_read_sel(&ring, p[0], 0, 1, 0, 0), 2, &a1);
	write_all(p[1], "defgh", 5);
	run_one(&ring, prep_read_sel(&ring, p[0], 0, 1, 0, 0), 3, &a1);
	write_all(p[1], "ijklmno", 7);
	run_one(&ring, prep_read_sel(&ring, p[0], 0, 1, 0, 0), 4, &a1);
	note("RECV at EOF: no F_BUFFER, the buffer goes back");
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0 || shutdown(sv[1], SHUT_WR) < 0)
		die("socketpair: %s", strerror(errno));
	run_one(&ring, prep_recv_sel(&ring, sv[0], 0, 0, 1, 0), 5, &a1);
	note("REMOVE the last buffer, then READ on the empty group");
	remove_bufs(&ring, 1, 1, 6);
	write_all(p[1], "p", 1);
	run_one(&ring, prep_read_sel(&ring, p[0], 0, 1, 0, 0), 7, &a1);

	note("group 2: 2 buffers of 16; a READ pending on an empty pipe");
	struct arena a2 = arena_new(16, 2);
	provide(&ring, &a2, 2, 0, 2, 10);
	int q[2];
	pipe_or_die(q);
	prep_read_sel(&ring, q[0], 0, 2, 0, 11);
	submit_expect(&ring, 1);
	expect_pending(&ring, "READ 11 on an empty pipe");
	note("a second READ, on the pipe with data");
	run_one(&ring, prep_read_sel(&ring, p[0], 0, 2, 0, 0), 12, &a2);
	write_all(q[1], "zz", 2);
	reap_show(&ring, 1, &a2);

	note("group 3: 1 buffer of 16; one READ");
	struct arena a3 = arena_new(16, 1);
	provide(&ring, &a3, 3, 0, 1, 20);
	write_all(p[1], "q", 1);
	run_one(&ring, prep_read_sel(&ring, p[0], 0, 3, 0, 0), 21, &a3);

	close(sv[0]);
	close(sv[1]);
	close(q[0]);
	close(q[1]);
	close(p[0]);
	close(p[1]);
	io_uring_queue_exit(&ring);
	return 0;
}
