#include "bench/workloads/ring.h"
#include "bench/workloads/bench.h"

#include <errno.h>

void ring_init(struct io_uring *ring, unsigned sq_entries, unsigned cq_entries)
{
	struct io_uring_params p = { .flags = IORING_SETUP_CQSIZE, .cq_entries = cq_entries };
	int ret = io_uring_queue_init_params(sq_entries, ring, &p);
	if (ret < 0)
		die_err(ret, "io_uring_queue_init_params(%u, cq %u)", sq_entries, cq_entries);
}

struct io_uring_sqe *ring_sqe(struct io_uring *ring)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	while (!sqe) {
		int ret = io_uring_submit(ring);
		if (ret < 0 && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY)
			die_err(ret, "io_uring_submit");
		sqe = io_uring_get_sqe(ring);
	}
	return sqe;
}

void ring_reap(struct io_uring *ring, ring_handler *const *table, unsigned nkinds, void *ctx,
	       unsigned long *inflight)
{
	int ret = io_uring_submit_and_wait(ring, 1);
	if (ret < 0 && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY)
		die_err(ret, "io_uring_submit_and_wait");
	struct io_uring_cqe *cqe;
	unsigned head, seen = 0;
	io_uring_for_each_cqe(ring, head, cqe) {
		seen++;
		(*inflight)--;
		uint64_t d = io_uring_cqe_get_data64(cqe);
		uint64_t kind = d >> 32;
		if (kind >= nkinds || !table[kind])
			die("a completion with unknown user_data 0x%llx (res %d)", (unsigned long long)d, cqe->res);
		table[kind](ctx, (unsigned)d, cqe);
	}
	io_uring_cq_advance(ring, seen);
}

void ring_provide(struct io_uring *ring, void *addr, unsigned len, unsigned nr, unsigned bgid, unsigned bid,
		  uint64_t user_data)
{
	struct io_uring_sqe *sqe = ring_sqe(ring);
	io_uring_prep_provide_buffers(sqe, addr, (int)len, (int)nr, (int)bgid, (int)bid);
	sqe->user_data = user_data;
}

void ring_check_group(struct io_uring *ring, unsigned bgid, unsigned nbufs)
{
	const uint64_t tag = 0x52454d4f5645u;
	struct io_uring_sqe *sqe = ring_sqe(ring);
	io_uring_prep_remove_buffers(sqe, (int)nbufs + 1, (int)bgid);
	io_uring_sqe_set_data64(sqe, tag);
	int ret = io_uring_submit_and_wait(ring, 1);
	if (ret < 0)
		die_err(ret, "submit REMOVE_BUFFERS");
	struct io_uring_cqe *cqe;
	ret = io_uring_peek_cqe(ring, &cqe);
	if (ret < 0)
		die_err(ret, "REMOVE_BUFFERS completion");
	if (io_uring_cqe_get_data64(cqe) != tag)
		die("a completion (user_data 0x%llx, res %d) came after the run was over",
		    (unsigned long long)io_uring_cqe_get_data64(cqe), cqe->res);
	if (cqe->res != (int)nbufs)
		die("at the end group %u held %d buffers, expected all %u", bgid, cqe->res, nbufs);
	io_uring_cqe_seen(ring, cqe);
}

void ring_record_arm(struct io_uring *ring, struct ring_record *rec)
{
	struct io_uring_sqe *sqe = ring_sqe(ring);
	io_uring_prep_read(sqe, rec->fd, (char *)rec->buf + rec->got, rec->len - rec->got, (uint64_t)-1);
	sqe->user_data = rec->user_data;
}

int ring_record_cqe(struct io_uring *ring, struct ring_record *rec, int res)
{
	if (res < 0)
		die_err(res, "reading the load generator's pipe");
	if (res == 0)
		die("the load generator ended without its report (see its message above)");
	rec->got += (unsigned)res;
	if (rec->got < rec->len) {
		ring_record_arm(ring, rec);
		return 0;
	}
	rec->got = 0;
	return 1;
}
