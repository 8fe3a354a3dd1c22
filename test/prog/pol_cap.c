/*
 * The script behind the cap tests (test/integration/policy.c). Natively and
 * under bufsel without a cap every selection succeeds; what a cap of 2
 * (BUFSEL_GROUP_1_CAP, BUFSEL_GROUP_2_CAP) changes is decided there.
 *
 * Group 1, 8 buffers of 16: READs of 4 bytes on a pipe that holds data,
 * one at a time, each completing before the next; the program keeps every
 * buffer it gets except bid 0, which it provides again after the third READ.
 * Two READs later the group still has buffers, so natively neither fails.
 *
 * Group 2, 4 buffers of 16: two READs pending on empty pipes hold a buffer
 * each while a third READ, on a pipe with data, is issued; then the first
 * pending READ gets data, its buffer is provided again, and one more READ
 * follows. The second pending READ ends at EOF (F_BUFFER, consumed).
 *
 * Each group ends with a REMOVE of everything left, whose result is the
 * number of buffers the group still held. Each group reads its own pipe, so
 * what one group's READs got does not shift the bytes the other's see.
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
	int data[2], data2[2];
	pipe_or_die(data);
	pipe_or_die(data2);
	write_all(data[1], "ABCDEFGHIJKLMNOPQRSTUVWXYZ", 26);
	write_all(data2[1], "abcdefghijklmnopqrstuvwxyz", 26);

	note("group 1: 8 buffers of 16; READs of 4 bytes, each buffer kept");
	struct arena a1 = arena_new(16, 8);
	provide(&ring, &a1, 1, 0, 8, 1);
	run_one(&ring, prep_read_sel(&ring, data[0], 4, 1, 0, 0), 2, &a1);
	run_one(&ring, prep_read_sel(&ring, data[0], 4, 1, 0, 0), 3, &a1);
	run_one(&ring, prep_read_sel(&ring, data[0], 4, 1, 0, 0), 4, &a1);
	note("bid 0 provided again");
	provide(&ring, &a1, 1, 0, 1, 5);
	run_one(&ring, prep_read_sel(&ring, data[0], 4, 1, 0, 0), 6, &a1);
	run_one(&ring, prep_read_sel(&ring, data[0], 4, 1, 0, 0), 7, &a1);
	note("buffers left in group 1");
	remove_bufs(&ring, 1, 65536, 8);

	note("group 2: 4 buffers of 16; two READs pending on empty pipes");
	struct arena a2 = arena_new(16, 4);
	provide(&ring, &a2, 2, 0, 4, 10);
	int q1[2], q2[2];
	pipe_or_die(q1);
	pipe_or_die(q2);
	prep_read_sel(&ring, q1[0], 0, 2, 0, 11);
	submit_expect(&ring, 1);
	expect_pending(&ring, "READ 11 on an empty pipe");
	prep_read_sel(&ring, q2[0], 0, 2, 0, 12);
	submit_expect(&ring, 1);
	expect_pending(&ring, "READ 12 on an empty pipe");
	note("a third READ, on the pipe with data");
	run_one(&ring, prep_read_sel(&ring, data2[0], 4, 2, 0, 0), 13, &a2);
	note("READ 11 gets data; its buffer is provided again");
	write_all(q1[1], "xy", 2);
	reap_show(&ring, 1, &a2);
	provide(&ring, &a2, 2, 0, 1, 14);
	run_one(&ring, prep_read_sel(&ring, data2[0], 4, 2, 0, 0), 15, &a2);
	note("READ 12 ends at EOF");
	close(q2[1]);
	reap_show(&ring, 1, &a2);
	note("buffers left in group 2");
	remove_bufs(&ring, 2, 65536, 16);

	close(q1[0]);
	close(q1[1]);
	close(q2[0]);
	close(data[0]);
	close(data[1]);
	close(data2[0]);
	close(data2[1]);
	io_uring_queue_exit(&ring);
	return 0;
}
