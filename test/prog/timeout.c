/*
 * Timeouts: a plain TIMEOUT expires with -ETIME; a TIMEOUT with a completion
 * count completes with 0 once that many other CQEs were posted, and still
 * expires with -ETIME if fewer arrive; LINK_TIMEOUT cancels a pending pipe
 * read (-ECANCELED / -ETIME) and is itself cancelled when the read completes
 * first; TIMEOUT_REMOVE and timeout update by user_data, and -ENOENT for an
 * unknown one. The count semantics only hold if the ring the program sees
 * posts exactly the CQEs of the program's own requests.
 * A timeout and the requests it watches complete independently, so every
 * batch is printed by user_data.
 */
#include "test/prog/cqe_print.h"

#include <unistd.h>

static struct io_uring ring;
static struct __kernel_timespec ms20 = { .tv_nsec = 20 * 1000 * 1000 };
static struct __kernel_timespec s5 = { .tv_sec = 5 };

/* An SQE with its user_data set; liburing's prep helpers leave user_data alone. */
static struct io_uring_sqe *sqe_ud(unsigned long long ud)
{
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_nop(sqe);
	sqe->user_data = ud;
	return sqe;
}

int main(void)
{
	int ret = io_uring_queue_init(16, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	int p[2];
	if (pipe(p) < 0)
		die("pipe: %s", strerror(errno));
	char buf[16];
	struct io_uring_sqe *sqe;

	note("plain timeout");
	io_uring_prep_timeout(sqe_ud(1), &ms20, 0, 0);
	submit_expect(&ring, 1);
	reap_print(&ring, 1);

	note("timeout with count 2, two nops follow");
	io_uring_prep_timeout(sqe_ud(10), &s5, 2, 0);
	sqe_ud(11);
	sqe_ud(12);
	submit_expect(&ring, 3);
	reap_print_sorted(&ring, 3);

	note("timeout with count 3, only one nop follows");
	io_uring_prep_timeout(sqe_ud(20), &ms20, 3, 0);
	sqe_ud(21);
	submit_expect(&ring, 2);
	reap_print_sorted(&ring, 2);

	note("link timeout on a pending pipe read");
	sqe = sqe_ud(30);
	io_uring_prep_read(sqe, p[0], buf, sizeof(buf), 0);
	sqe->user_data = 30;
	sqe->flags |= IOSQE_IO_LINK;
	io_uring_prep_link_timeout(sqe_ud(31), &ms20, 0);
	submit_expect(&ring, 2);
	reap_print_sorted(&ring, 2);

	note("link timeout on a read that completes at once");
	if (write(p[1], "data", 4) != 4)
		die("write: %s", strerror(errno));
	sqe = sqe_ud(40);
	io_uring_prep_read(sqe, p[0], buf, sizeof(buf), 0);
	sqe->user_data = 40;
	sqe->flags |= IOSQE_IO_LINK;
	io_uring_prep_link_timeout(sqe_ud(41), &s5, 0);
	submit_expect(&ring, 2);
	reap_print_sorted(&ring, 2);

	note("timeout remove");
	io_uring_prep_timeout(sqe_ud(50), &s5, 0, 0);
	submit_expect(&ring, 1);
	expect_no_cqe(&ring, "armed timeout");
	io_uring_prep_timeout_remove(sqe_ud(51), 50, 0);
	submit_expect(&ring, 1);
	reap_print_sorted(&ring, 2);

	note("timeout remove of an unknown user_data");
	io_uring_prep_timeout_remove(sqe_ud(60), 12345, 0);
	submit_expect(&ring, 1);
	reap_print(&ring, 1);

	note("timeout update shortens an armed timeout");
	io_uring_prep_timeout(sqe_ud(70), &s5, 0, 0);
	submit_expect(&ring, 1);
	io_uring_prep_timeout_update(sqe_ud(71), &ms20, 70, 0);
	submit_expect(&ring, 1);
	reap_print_sorted(&ring, 2);

	close(p[0]);
	close(p[1]);
	io_uring_queue_exit(&ring);
	return 0;
}
