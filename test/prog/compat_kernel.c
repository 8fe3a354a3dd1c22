/*
 * BUFSEL_KERNEL=X.Y: what a program learns about io_uring from the kernel it
 * runs on (feature bits, the probe, setup/enter/register flags and opcodes it
 * accepts, SQE opcodes and flags).  Natively and under bufsel without
 * BUFSEL_KERNEL the output is the running kernel's; under BUFSEL_KERNEL=5.6
 * it must be 5.6's, which compare.c checks line by line against that
 * kernel's rules (io_uring_setup, io_uring_enter and io_uring_register
 * refuse what they do not know with -EINVAL; io_init_req fails an unknown
 * opcode or SQE flag with -EINVAL).  Buffer selection stays: it is what
 * bufsel adds to such a kernel.
 */
#include <errno.h>
#include <liburing.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "test/prog/cqe_print.h"

static long setup_with(unsigned flags)
{
	struct io_uring_params p;
	memset(&p, 0, sizeof(p));
	p.flags = flags;
	long fd = syscall(__NR_io_uring_setup, 4, &p);
	if (fd < 0)
		return -errno;
	close((int)fd);
	return 0;
}

static long reg(int fd, unsigned op, void *arg, unsigned nr)
{
	long r = syscall(__NR_io_uring_register, fd, op, arg, nr);
	return r < 0 ? -errno : r;
}

int main(void)
{
	struct io_uring ring;
	struct io_uring_params p;
	memset(&p, 0, sizeof(p));
	int ret = io_uring_queue_init_params(8, &ring, &p);
	if (ret)
		die("queue_init: %d", ret);
	/* Features up to 5.6's, and whether the newer ones are there. */
	note("features SINGLE_MMAP..CUR_PERSONALITY 0x%x", p.features & 0x1f);
	note("features beyond 5.6 %s", p.features & ~0x1fu ? "present" : "none");

	struct io_uring_probe *pr = io_uring_get_probe_ring(&ring);
	if (!pr)
		die("probe");
	note("probe last_op %s", pr->last_op >= IORING_OP_REMOVE_BUFFERS ? ">= REMOVE_BUFFERS" : "older");
	static const struct {
		int op;
		const char *name;
	} ops[] = {
		{ IORING_OP_READ, "READ" }, { IORING_OP_EPOLL_CTL, "EPOLL_CTL" },
		{ IORING_OP_SPLICE, "SPLICE" }, { IORING_OP_PROVIDE_BUFFERS, "PROVIDE_BUFFERS" },
		{ IORING_OP_REMOVE_BUFFERS, "REMOVE_BUFFERS" }, { IORING_OP_TEE, "TEE" },
		{ IORING_OP_SEND_ZC, "SEND_ZC" },
	};
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		note("probe %s %d", ops[i].name, io_uring_opcode_supported(pr, ops[i].op));
	io_uring_free_probe(pr);

	note("setup CLAMP %ld", setup_with(IORING_SETUP_CLAMP));
	note("setup R_DISABLED %ld", setup_with(IORING_SETUP_R_DISABLED));
	note("setup COOP_TASKRUN %ld", setup_with(IORING_SETUP_COOP_TASKRUN));
	note("setup SINGLE_ISSUER %ld", setup_with(IORING_SETUP_SINGLE_ISSUER));

	long r = syscall(__NR_io_uring_enter, ring.ring_fd, 0, 0, IORING_ENTER_SQ_WAIT, NULL, 0);
	note("enter SQ_WAIT %ld", r < 0 ? -errno : r);
	r = syscall(__NR_io_uring_enter, ring.ring_fd, 0, 0, IORING_ENTER_GETEVENTS, NULL, 0);
	note("enter GETEVENTS %ld", r < 0 ? -errno : r);

	note("register PROBE with no probe %ld", reg(ring.ring_fd, IORING_REGISTER_PROBE, NULL, 0));
	note("register ENABLE_RINGS %ld", reg(ring.ring_fd, IORING_REGISTER_ENABLE_RINGS, NULL, 0));
	void *bring;
	if (posix_memalign(&bring, 4096, 4096))
		die("posix_memalign");
	memset(bring, 0, 4096);
	struct io_uring_buf_reg br;
	memset(&br, 0, sizeof(br));
	br.ring_addr = (unsigned long)bring;
	br.ring_entries = 8;
	br.bgid = 9;
	note("register PBUF_RING %ld", reg(ring.ring_fd, IORING_REGISTER_PBUF_RING, &br, 1));
	note("register 200 %ld", reg(ring.ring_fd, 200, NULL, 0));
	/* RESIZE_RINGS (6.13): a kernel that knows it asks for a ring first
	 * (a pipe is none: -EOPNOTSUPP); 5.6 refuses the opcode before that. */
	int pfd[2];
	struct io_uring_params rp;
	memset(&rp, 0, sizeof(rp));
	rp.sq_entries = 8;
	if (pipe(pfd))
		die("pipe");
	note("register RESIZE_RINGS on a pipe %ld", reg(pfd[0], 33, &rp, 1));
	close(pfd[0]);
	close(pfd[1]);
	free(bring);

	/* An unknown opcode heading a chain fails it; an unknown flag fails its
	 * SQE alone; buffer selection is bufsel's on any kernel. */
	static char bufs[2][64];
	struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
	io_uring_prep_tee(sqe, -1, -1, 16, 0);
	sqe->user_data = 1;
	sqe->flags |= IOSQE_IO_LINK;
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_nop(sqe);
	sqe->user_data = 2;
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_nop(sqe);
	sqe->user_data = 3;
	sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_provide_buffers(sqe, bufs, 64, 2, 1, 0);
	sqe->user_data = 4;
	/* The kernel stops submitting after an SQE that fails at prep (an
	 * unknown flag): the rest goes in the next submit. */
	ret = io_uring_submit(&ring);
	note("submit %d", ret);
	if (ret < 4)
		note("submit the rest %d", io_uring_submit(&ring));
	/* Whether ud 3 posts a CQE depends on the kernel: reap what comes. */
	struct io_uring_cqe c[8];
	unsigned n = 0;
	while (n < 8) {
		struct io_uring_cqe *cqe;
		struct __kernel_timespec ts = { .tv_nsec = 200000000 };
		if (io_uring_wait_cqe_timeout(&ring, &cqe, &ts))
			break;
		c[n++] = *cqe;
		io_uring_cqe_seen(&ring, cqe);
	}
	cqe_print_sorted(c, n);

	io_uring_queue_exit(&ring);
	return 0;
}
