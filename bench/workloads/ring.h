/*
 * The io_uring side every workload shares, in plain liburing: setup flags
 * stay plain (CQSIZE only) and only 5.6-era requests are used (READ, RECV,
 * SEND, ACCEPT, PROVIDE_BUFFERS), so the same program runs natively, under
 * bufsel and under bufsel's 5.6 arm.
 */
#ifndef BUFSEL_BENCH_RING_H
#define BUFSEL_BENCH_RING_H

#include <liburing.h>
#include <stdint.h>

/*
 * What a CQE is for: the top 32 bits of user_data pick a handler in the
 * caller's table, the low 32 bits are its argument (an fd, a buffer id).
 */
static inline uint64_t ring_ud(unsigned kind, unsigned arg)
{
	return (uint64_t)kind << 32 | arg;
}

typedef void ring_handler(void *ctx, unsigned arg, const struct io_uring_cqe *cqe);

/*
 * Submits what is queued, waits for at least one CQE, and hands every CQE
 * there to its handler in order, counting each off *inflight. A CQE of a
 * kind with no handler fails the program.
 */
void ring_reap(struct io_uring *ring, ring_handler *const *table, unsigned nkinds, void *ctx,
	       unsigned long *inflight);

/* sq_entries SQEs, a CQ of cq_entries (both rounded up by the kernel). */
void ring_init(struct io_uring *ring, unsigned sq_entries, unsigned cq_entries);

/* The next free SQE, submitting what is queued when the SQ is full. */
struct io_uring_sqe *ring_sqe(struct io_uring *ring);

/* PROVIDE_BUFFERS of nr buffers of len bytes from addr, ids bid.., in group bgid. */
void ring_provide(struct io_uring *ring, void *addr, unsigned len, unsigned nr, unsigned bgid, unsigned bid,
		  uint64_t user_data);

/* The buffer id of a CQE that carries IORING_CQE_F_BUFFER. */
static inline unsigned ring_cqe_bid(const struct io_uring_cqe *cqe)
{
	return cqe->flags >> IORING_CQE_BUFFER_SHIFT;
}

/*
 * At the end of a run, with nothing else in flight: REMOVE_BUFFERS on group
 * bgid must find exactly nbufs buffers, i.e. every buffer the program
 * provided came back to the group once (a lost or doubled one shows here).
 */
void ring_check_group(struct io_uring *ring, unsigned bgid, unsigned nbufs);

/*
 * A fixed-size record from a load generator, read from a pipe by READs on the
 * ring, so that the server's single wait also notices a generator that died
 * (EOF) instead of hanging on connections that never come.
 */
struct ring_record {
	int fd;
	void *buf;
	unsigned len, got;
	uint64_t user_data;
};

void ring_record_arm(struct io_uring *ring, struct ring_record *rec);
/*
 * For the record's CQE: 1 when a whole record is in buf (got reset), 0 when
 * re-armed for the rest; fails the program at EOF.
 */
int ring_record_cqe(struct io_uring *ring, struct ring_record *rec, int res);

#endif
