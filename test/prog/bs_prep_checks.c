/*
 * SQEs the kernel rejects at submission (io_init_req, then the opcode's
 * prep), on legacy provided buffers: each fails with the kernel's error, in
 * the kernel's order, before any buffer is selected, so the group keeps
 * its buffers (the last READ shows which bid comes next).
 *  - an unknown opcode with IOSQE_BUFFER_SELECT: -EINVAL;
 *  - a non-zero ioprio where the opcode takes none (PROVIDE_BUFFERS): -EINVAL;
 *  - a READ with an invalid ioprio class: -EINVAL, no buffer;
 *  - a READ with an attr_type_mask the kernel does not know: -EINVAL;
 *  - a personality never registered, or no longer: -EINVAL;
 *  - the same READ inside a chain: the chain fails at submission;
 *  - READ_MULTISHOT with a length or an addr: -EINVAL, even on a bad fd
 *    (prep comes before the file); a multishot RECV may have a length.
 */
#include "test/prog/bs_bufs.h"

static struct io_uring ring;

static void attr_type_mask(struct io_uring_sqe *sqe, uint64_t mask)
{
	memcpy((char *)sqe + 56, &mask, sizeof(mask));
}

int main(void)
{
	int ret = io_uring_queue_init(16, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	int p[2];
	if (pipe(p))
		die("pipe: %s", strerror(errno));
	if (write(p[1], "abcdefgh", 8) != 8)
		die("write: %s", strerror(errno));
	struct arena g = arena_new(4, 4);
	provide(&ring, &g, 1, 0, 4, 1);

	note("unknown opcode 250 with BUFFER_SELECT");
	struct io_uring_sqe *sqe = prep_read_sel(&ring, p[0], 0, 1, 0, 2);
	sqe->opcode = 250;
	run_one(&ring, sqe, 2, &g);

	note("PROVIDE_BUFFERS with ioprio 1");
	sqe = get_sqe(&ring);
	prep_provide_arena(sqe, &g, 2, 0, 1);
	sqe->ioprio = 1;
	run_one(&ring, sqe, 3, NULL);

	note("READ with BUFFER_SELECT, ioprio class 5");
	sqe = prep_read_sel(&ring, p[0], 0, 1, 0, 4);
	sqe->ioprio = 5 << 13;
	run_one(&ring, sqe, 4, &g);
	note("READ with BUFFER_SELECT, ioprio class NONE with a level");
	sqe = prep_read_sel(&ring, p[0], 0, 1, 0, 5);
	sqe->ioprio = 3;
	run_one(&ring, sqe, 5, &g);

	note("READ with BUFFER_SELECT, attr_type_mask 2");
	sqe = prep_read_sel(&ring, p[0], 0, 1, 0, 6);
	attr_type_mask(sqe, 2);
	run_one(&ring, sqe, 6, &g);

	note("READ with BUFFER_SELECT, personality 999");
	sqe = prep_read_sel(&ring, p[0], 0, 1, 0, 7);
	sqe->personality = 999;
	run_one(&ring, sqe, 7, &g);

	note("NOP linked to a READ with attr_type_mask 2, linked to a NOP");
	sqe = get_sqe(&ring);
	io_uring_prep_nop(sqe);
	sqe->user_data = 8;
	sqe->flags |= IOSQE_IO_LINK;
	sqe = prep_read_sel(&ring, p[0], 0, 1, 0, 9);
	attr_type_mask(sqe, 2);
	sqe->flags |= IOSQE_IO_LINK;
	sqe = get_sqe(&ring);
	io_uring_prep_nop(sqe);
	sqe->user_data = 10;
	ret = io_uring_submit(&ring);
	note("submitted %d", ret);
	reap_show_sorted(&ring, 3, &g);

	note("READ with BUFFER_SELECT and a registered personality: it reads");
	int id = io_uring_register_personality(&ring);
	if (id < 0)
		die("register_personality: %s", strerror(-id));
	sqe = prep_read_sel(&ring, p[0], 0, 1, 0, 12);
	sqe->personality = (__u16)id;
	run_one(&ring, sqe, 12, &g);
	note("and once it is unregistered: -EINVAL");
	if (io_uring_unregister_personality(&ring, id))
		die("unregister_personality");
	sqe = prep_read_sel(&ring, p[0], 0, 1, 0, 13);
	sqe->personality = (__u16)id;
	run_one(&ring, sqe, 13, &g);

	note("READ_MULTISHOT with a len, and with an addr, on a bad fd: -EINVAL at prep");
	for (int i = 0; i < 2; i++) {
		sqe = get_sqe(&ring);
		memset(sqe, 0, sizeof(*sqe));
		sqe->opcode = 49;	/* IORING_OP_READ_MULTISHOT */
		sqe->fd = 999;
		sqe->flags = IOSQE_BUFFER_SELECT;
		sqe->buf_group = 1;
		if (i)
			sqe->addr = 0x10;
		else
			sqe->len = 1;
		run_one(&ring, sqe, 14 + (unsigned)i, &g);
	}
	note("multishot RECV with a len (6.18 takes it as a cap) on a pipe: -ENOTSOCK");
	sqe = prep_recv_sel(&ring, p[0], 4, 0, 1, 16);
	sqe->ioprio |= IORING_RECV_MULTISHOT;
	run_one(&ring, sqe, 16, &g);

	note("a plain READ takes the group's next buffer");
	run_one(&ring, prep_read_sel(&ring, p[0], 0, 1, 0, 11), 11, &g);
	io_uring_queue_exit(&ring);
	return 0;
}
