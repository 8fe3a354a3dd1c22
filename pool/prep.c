/*
 * The submission-time checks of io_provide_buffers_prep and
 * io_remove_buffers_prep (Linux 6.18 io_uring/kbuf.c), in the kernel's order,
 * because when several apply the first one decides the CQE's res.  Pure
 * functions of the SQE fields: nothing here looks at a pool.
 */
#include "pool/pool.h"

#include <errno.h>
#include <stdint.h>

/* 5.10's io_provide_buffers_prep: the count in 16 bits, then access_ok on
 * len * count (a negative len, an int there, makes it huge), then the
 * first bid. */
static int provide_prep_5_10(const struct pool_provide *r)
{
	if (r->ioprio || r->rw_flags)
		return -EINVAL;
	if (r->nbufs <= 0 || r->nbufs > UINT16_MAX)
		return -E2BIG;
	uint64_t size = (uint64_t)(int64_t)(int32_t)r->len * (uint64_t)r->nbufs, end;
	if (__builtin_add_overflow(r->addr, size, &end) || end > POOL_USER_END)
		return -EFAULT;
	if (r->off > UINT16_MAX)
		return -E2BIG;
	return 0;
}

int pool_provide_prep(const struct pool_provide *r, unsigned rules)
{
	if (rules & POOL_PREP_5_10)
		return provide_prep_5_10(r);
	/* io_init_req rejects ioprio on an opcode without it before prep runs;
	 * both are -EINVAL, so the order between them does not show. */
	if (r->ioprio || r->rw_flags || r->splice_fd_in)
		return -EINVAL;
	/* sqe->fd is signed and read into a u64: a negative count is huge. */
	if (r->nbufs <= 0 || (uint32_t)r->nbufs > POOL_MAX_BIDS)
		return -E2BIG;
	if (!r->len)
		return -EINVAL;

	/* len * nbufs stays below 2^48 here; the kernel checks it anyway, on
	 * unsigned long, and so does this for the same answer everywhere. */
	uint64_t size, end;
	if (__builtin_mul_overflow((uint64_t)r->len, (uint64_t)r->nbufs, &size) ||
	    __builtin_add_overflow(r->addr, size, &end))
		return -EOVERFLOW;
	/* access_ok() on x86-64 6.18 tests the range's last byte: the range may
	 * end exactly at TASK_SIZE_MAX.  Address 0 passes; nothing is read. */
	if (end > POOL_USER_END)
		return -EFAULT;

	if (r->off > UINT16_MAX)
		return -E2BIG;
	if (r->off + (uint32_t)r->nbufs > POOL_MAX_BIDS)
		return -EINVAL;
	return 0;
}

int pool_remove_prep(const struct pool_remove *r, unsigned rules)
{
	/* 5.10: a count in 16 bits, and no splice_fd_in check. */
	if (rules & POOL_PREP_5_10)
		return r->rw_flags || r->addr || r->len || r->off || r->nbufs <= 0 || r->nbufs > UINT16_MAX
			       ? -EINVAL
			       : 0;
	if (r->rw_flags || r->addr || r->len || r->off || r->splice_fd_in)
		return -EINVAL;
	if (r->nbufs <= 0 || (uint32_t)r->nbufs > POOL_MAX_BIDS)
		return -EINVAL;
	return 0;
}
