/*
 * io_uring_setup flags and their visible results: sizes the kernel chose
 * (rounding, CQSIZE, CLAMP of oversized requests), the errors for bad
 * parameters, SUBMIT_ALL against the default stop-at-first-failure submit,
 * COOP_TASKRUN|TASKRUN_FLAG, and ATTACH_WQ, whose wq_fd is the program's fd
 * number for another ring and so must be translated if bufsel replaces ring
 * fds. Every ring does a few NOPs. The feature bits are printed because a
 * program decides on them; bufsel shows the kernel's unless it has a reason.
 */
#include "test/prog/cqe_print.h"

#include <unistd.h>

static int setup(const char *name, unsigned entries, struct io_uring *ring, struct io_uring_params *p)
{
	int ret = io_uring_queue_init_params(entries, ring, p);
	if (ret < 0)
		note("%s: entries %u -> %d", name, entries, ret);
	else
		note("%s: entries %u -> sq %u cq %u", name, entries, p->sq_entries, p->cq_entries);
	return ret;
}

/* Four SQEs, the second with an opcode no kernel has. */
static void bad_batch(struct io_uring *ring, unsigned long long ud)
{
	for (unsigned i = 0; i < 4; i++) {
		struct io_uring_sqe *sqe = get_sqe(ring);
		io_uring_prep_nop(sqe);
		sqe->user_data = ud + i;
		if (i == 1)
			sqe->opcode = 250;
	}
	note("submit returned %d", io_uring_submit(ring));
	note("submit again returned %d", io_uring_submit(ring));
	reap_print_sorted(ring, 4);
}

int main(void)
{
	struct io_uring a, b;
	struct io_uring_params p;

	memset(&p, 0, sizeof(p));
	if (setup("default", 5, &a, &p) < 0)
		die("default ring");
	note("features 0x%x", p.features);
	nops_print(&a, 1, 2);
	note("default ring stops at the failing SQE");
	bad_batch(&a, 10);

	memset(&p, 0, sizeof(p));
	p.flags = IORING_SETUP_CQSIZE;
	p.cq_entries = 100;
	if (setup("cqsize 100", 4, &b, &p) < 0)
		die("cqsize ring");
	nops_print(&b, 20, 3);
	io_uring_queue_exit(&b);

	memset(&p, 0, sizeof(p));
	setup("no clamp", 1u << 20, &b, &p);
	memset(&p, 0, sizeof(p));
	p.flags = IORING_SETUP_CLAMP | IORING_SETUP_CQSIZE;
	p.cq_entries = 1u << 24;
	if (setup("clamp sq and cq", 1u << 20, &b, &p) < 0)
		die("clamp ring");
	nops_print(&b, 30, 3);
	io_uring_queue_exit(&b);

	struct { const char *name; unsigned entries, flags, cq; } bad[] = {
		{ "zero entries", 0, 0, 0 },
		{ "unknown flag bit 31", 4, 1u << 31, 0 },
		{ "cqsize smaller than sq", 8, IORING_SETUP_CQSIZE, 4 },
		{ "cqsize zero", 8, IORING_SETUP_CQSIZE, 0 },
		{ "defer_taskrun without single_issuer", 4, IORING_SETUP_DEFER_TASKRUN, 0 },
	};
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&p, 0, sizeof(p));
		p.flags = bad[i].flags;
		p.cq_entries = bad[i].cq;
		if (setup(bad[i].name, bad[i].entries, &b, &p) >= 0)
			die("%s: accepted", bad[i].name);
	}

	memset(&p, 0, sizeof(p));
	p.flags = IORING_SETUP_SUBMIT_ALL;
	if (setup("submit_all", 8, &b, &p) < 0)
		die("submit_all ring");
	bad_batch(&b, 40);
	io_uring_queue_exit(&b);

	memset(&p, 0, sizeof(p));
	p.flags = IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG;
	if (setup("coop_taskrun|taskrun_flag", 8, &b, &p) < 0)
		die("coop ring");
	nops_print(&b, 50, 4);
	io_uring_queue_exit(&b);

	memset(&p, 0, sizeof(p));
	p.flags = IORING_SETUP_ATTACH_WQ;
	p.wq_fd = (unsigned)a.ring_fd;
	if (setup("attach_wq to the default ring", 8, &b, &p) < 0)
		die("attach_wq ring");
	nops_print(&b, 60, 2);
	nops_print(&a, 70, 2);
	io_uring_queue_exit(&b);

	memset(&p, 0, sizeof(p));
	p.flags = IORING_SETUP_ATTACH_WQ;
	p.wq_fd = 0;
	setup("attach_wq to stdin", 8, &b, &p);
	memset(&p, 0, sizeof(p));
	p.flags = IORING_SETUP_ATTACH_WQ;
	int stale = dup(0);
	if (stale < 0 || close(stale) < 0)
		die("dup: %s", strerror(errno));
	p.wq_fd = (unsigned)stale;
	setup("attach_wq to a closed fd", 8, &b, &p);

	io_uring_queue_exit(&a);
	return 0;
}
