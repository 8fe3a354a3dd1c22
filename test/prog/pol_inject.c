/*
 * The script behind the -ENOBUFS injection tests (test/integration/policy.c):
 * 64 buffers of 4 bytes in group 1, 64 bytes queued in a pipe, then 64 READs
 * of 1 byte, one at a time. Natively all 64 succeed, so every selection
 * injection can fail is one of these 64 and the group is empty at the end.
 * A failed READ leaves its byte in the pipe, so the data the next one gets
 * shows that nothing was read. The program then says how many failed and
 * removes what the group still holds: the REMOVE result is that number, so a
 * failure that took a buffer would show as a buffer missing.
 */
#include "test/prog/bs_bufs.h"

#define READS 64

static struct io_uring ring;

int main(void)
{
	int ret = io_uring_queue_init(16, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	int p[2];
	if (pipe(p) < 0)
		die("pipe: %s", strerror(errno));
	write_all(p[1], "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz+/", READS);

	note("group 1: %d buffers of 4; %d READs of 1 byte", READS, READS);
	struct arena a = arena_new(4, READS);
	provide(&ring, &a, 1, 0, READS, 1);
	int failed = 0;
	for (int i = 0; i < READS; i++)
		if (run_one(&ring, prep_read_sel(&ring, p[0], 1, 1, 0, 0), 100 + (unsigned)i, &a) == -ENOBUFS)
			failed++;
	note("%d of %d READs failed with -ENOBUFS", failed, READS);
	note("buffers left in group 1");
	remove_bufs(&ring, 1, 65536, 2);

	close(p[0]);
	close(p[1]);
	io_uring_queue_exit(&ring);
	return 0;
}
