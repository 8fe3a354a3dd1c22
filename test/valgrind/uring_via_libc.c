/*
 * liburing's ring functions, as liburing 2.3 implements them, issuing their
 * system calls through libc: syscall() for io_uring_setup, io_uring_enter and
 * io_uring_register, mmap() for the rings, close() for the ring fd.
 *
 * Preloaded (ahead of liburing.so.2, which stays loaded for anything not
 * defined here) into an unmodified test program run under valgrind.  There
 * bufsel installs no seccomp filter (preload/valgrind.h), so liburing's own
 * inline `syscall` instructions would reach the kernel unseen; through these
 * definitions the same program's calls reach bufsel's libc hooks instead, and
 * memcheck watches bufsel's emulation run.  The control flow (when to enter,
 * with which flags, what to return) follows liburing 2.3 line by line, so the
 * program's output must not change: test/valgrind/run.sh compares it with the
 * native run of the same binary without this library, and refuses a program
 * that imports a liburing function this file does not define.
 */
#define _GNU_SOURCE
#include <liburing.h>

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

/* liburing's private io_uring.int_flags bit: the ring fd is registered. */
#define INT_FLAG_REG_RING 1

static int via_libc(long ret)
{
	return ret < 0 ? -errno : (int)ret;
}

static int sys_setup(unsigned entries, struct io_uring_params *p)
{
	return via_libc(syscall(__NR_io_uring_setup, entries, p));
}

static int sys_enter2(int fd, unsigned submit, unsigned wait_nr, unsigned flags, void *arg, size_t sz)
{
	return via_libc(syscall(__NR_io_uring_enter, fd, submit, wait_nr, flags, arg, sz));
}

static int sys_enter(int fd, unsigned submit, unsigned wait_nr, unsigned flags, sigset_t *sig)
{
	return sys_enter2(fd, submit, wait_nr, flags, sig, _NSIG / 8);
}

static int sys_register(int fd, unsigned opcode, const void *arg, unsigned nr)
{
	return via_libc(syscall(__NR_io_uring_register, fd, opcode, arg, nr));
}

static void *sys_mmap(size_t len, int fd, off_t off)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, off);
	return p == MAP_FAILED ? NULL : p;
}

/* ---- setup.c ---------------------------------------------------------------- */

static void unmap_rings(struct io_uring_sq *sq, struct io_uring_cq *cq)
{
	munmap(sq->ring_ptr, sq->ring_sz);
	if (cq->ring_ptr && cq->ring_ptr != sq->ring_ptr)
		munmap(cq->ring_ptr, cq->ring_sz);
}

static int map_rings(int fd, const struct io_uring_params *p, struct io_uring_sq *sq, struct io_uring_cq *cq)
{
	size_t cqe_size = sizeof(struct io_uring_cqe) * (p->flags & IORING_SETUP_CQE32 ? 2 : 1);
	size_t sqe_size = sizeof(struct io_uring_sqe) * (p->flags & IORING_SETUP_SQE128 ? 2 : 1);
	int err;

	sq->ring_sz = p->sq_off.array + p->sq_entries * sizeof(unsigned);
	cq->ring_sz = p->cq_off.cqes + p->cq_entries * cqe_size;
	if (p->features & IORING_FEAT_SINGLE_MMAP) {
		if (cq->ring_sz > sq->ring_sz)
			sq->ring_sz = cq->ring_sz;
		cq->ring_sz = sq->ring_sz;
	}
	sq->ring_ptr = sys_mmap(sq->ring_sz, fd, IORING_OFF_SQ_RING);
	if (!sq->ring_ptr)
		return -errno;
	if (p->features & IORING_FEAT_SINGLE_MMAP) {
		cq->ring_ptr = sq->ring_ptr;
	} else {
		cq->ring_ptr = sys_mmap(cq->ring_sz, fd, IORING_OFF_CQ_RING);
		if (!cq->ring_ptr) {
			err = -errno;
			unmap_rings(sq, cq);
			return err;
		}
	}

	char *s = sq->ring_ptr, *c = cq->ring_ptr;
	sq->khead = (unsigned *)(s + p->sq_off.head);
	sq->ktail = (unsigned *)(s + p->sq_off.tail);
	sq->kring_mask = (unsigned *)(s + p->sq_off.ring_mask);
	sq->kring_entries = (unsigned *)(s + p->sq_off.ring_entries);
	sq->kflags = (unsigned *)(s + p->sq_off.flags);
	sq->kdropped = (unsigned *)(s + p->sq_off.dropped);
	sq->array = (unsigned *)(s + p->sq_off.array);

	sq->sqes = sys_mmap(sqe_size * p->sq_entries, fd, IORING_OFF_SQES);
	if (!sq->sqes) {
		err = -errno;
		unmap_rings(sq, cq);
		return err;
	}

	cq->khead = (unsigned *)(c + p->cq_off.head);
	cq->ktail = (unsigned *)(c + p->cq_off.tail);
	cq->kring_mask = (unsigned *)(c + p->cq_off.ring_mask);
	cq->kring_entries = (unsigned *)(c + p->cq_off.ring_entries);
	cq->koverflow = (unsigned *)(c + p->cq_off.overflow);
	cq->cqes = (struct io_uring_cqe *)(c + p->cq_off.cqes);
	if (p->cq_off.flags)
		cq->kflags = (unsigned *)(c + p->cq_off.flags);

	sq->ring_mask = *sq->kring_mask;
	sq->ring_entries = *sq->kring_entries;
	cq->ring_mask = *cq->kring_mask;
	cq->ring_entries = *cq->kring_entries;
	return 0;
}

EXPORT int io_uring_queue_mmap(int fd, struct io_uring_params *p, struct io_uring *ring)
{
	memset(ring, 0, sizeof(*ring));
	int ret = map_rings(fd, p, &ring->sq, &ring->cq);
	if (!ret) {
		ring->flags = p->flags;
		ring->ring_fd = ring->enter_ring_fd = fd;
		ring->int_flags = 0;
	}
	return ret;
}

EXPORT int io_uring_queue_init_params(unsigned entries, struct io_uring *ring, struct io_uring_params *p)
{
	int fd = sys_setup(entries, p);
	if (fd < 0)
		return fd;
	int ret = io_uring_queue_mmap(fd, p, ring);
	if (ret) {
		close(fd);
		return ret;
	}
	/* The SQ array maps slot i to SQE i once and for all. */
	for (unsigned i = 0; i < ring->sq.ring_entries; i++)
		ring->sq.array[i] = i;
	ring->features = p->features;
	return 0;
}

EXPORT int io_uring_queue_init(unsigned entries, struct io_uring *ring, unsigned flags)
{
	struct io_uring_params p;
	memset(&p, 0, sizeof(p));
	p.flags = flags;
	return io_uring_queue_init_params(entries, ring, &p);
}

EXPORT void io_uring_queue_exit(struct io_uring *ring)
{
	struct io_uring_sq *sq = &ring->sq;
	size_t sqe_size = sizeof(struct io_uring_sqe) * (ring->flags & IORING_SETUP_SQE128 ? 2 : 1);
	munmap(sq->sqes, sqe_size * sq->ring_entries);
	unmap_rings(sq, &ring->cq);
	if (ring->int_flags & INT_FLAG_REG_RING)
		io_uring_unregister_ring_fd(ring);
	close(ring->ring_fd);
}

EXPORT struct io_uring_probe *io_uring_get_probe_ring(struct io_uring *ring)
{
	size_t len = sizeof(struct io_uring_probe) + 256 * sizeof(struct io_uring_probe_op);
	struct io_uring_probe *probe = calloc(1, len);
	if (!probe)
		return NULL;
	if (sys_register(ring->ring_fd, IORING_REGISTER_PROBE, probe, 256) >= 0)
		return probe;
	free(probe);
	return NULL;
}

EXPORT void io_uring_free_probe(struct io_uring_probe *probe)
{
	free(probe);
}

/* ---- queue.c ---------------------------------------------------------------- */

static bool sq_ring_needs_enter(const struct io_uring *ring, unsigned submit, unsigned *flags)
{
	if (!submit)
		return false;
	if (!(ring->flags & IORING_SETUP_SQPOLL))
		return true;
	io_uring_smp_mb();
	if (IO_URING_READ_ONCE(*ring->sq.kflags) & IORING_SQ_NEED_WAKEUP) {
		*flags |= IORING_ENTER_SQ_WAKEUP;
		return true;
	}
	return false;
}

static bool cq_ring_needs_flush(const struct io_uring *ring)
{
	return IO_URING_READ_ONCE(*ring->sq.kflags) & (IORING_SQ_CQ_OVERFLOW | IORING_SQ_TASKRUN);
}

static bool cq_ring_needs_enter(const struct io_uring *ring)
{
	return (ring->flags & IORING_SETUP_IOPOLL) || cq_ring_needs_flush(ring);
}

struct get_data {
	unsigned submit;
	unsigned wait_nr;
	unsigned get_flags;
	int sz;
	int has_ts;
	void *arg;
};

static int get_cqe(struct io_uring *ring, struct io_uring_cqe **cqe_ptr, struct get_data *data)
{
	struct io_uring_cqe *cqe = NULL;
	bool looped = false;
	int err = 0;

	for (;;) {
		bool need_enter = false;
		unsigned flags = 0, nr_available;
		int ret = __io_uring_peek_cqe(ring, &cqe, &nr_available);
		if (ret) {
			if (!err)
				err = ret;
			break;
		}
		if (!cqe && !data->wait_nr && !data->submit) {
			/* Entered once already, with nothing to submit or wait for. */
			if (looped || !cq_ring_needs_enter(ring)) {
				if (!err)
					err = -EAGAIN;
				break;
			}
			need_enter = true;
		}
		if (data->wait_nr > nr_available || need_enter) {
			flags = IORING_ENTER_GETEVENTS | data->get_flags;
			need_enter = true;
		}
		if (sq_ring_needs_enter(ring, data->submit, &flags))
			need_enter = true;
		if (!need_enter)
			break;
		if (looped && data->has_ts) {
			const struct io_uring_getevents_arg *arg = data->arg;
			if (!cqe && arg->ts && !err)
				err = -ETIME;
			break;
		}
		if (ring->int_flags & INT_FLAG_REG_RING)
			flags |= IORING_ENTER_REGISTERED_RING;
		ret = sys_enter2(ring->enter_ring_fd, data->submit, data->wait_nr, flags, data->arg,
				 (size_t)data->sz);
		if (ret < 0) {
			if (!err)
				err = ret;
			break;
		}
		data->submit -= (unsigned)ret;
		if (cqe)
			break;
		if (!looped) {
			looped = true;
			err = ret;
		}
	}
	*cqe_ptr = cqe;
	return err;
}

EXPORT int __io_uring_get_cqe(struct io_uring *ring, struct io_uring_cqe **cqe_ptr, unsigned submit,
			      unsigned wait_nr, sigset_t *sigmask)
{
	struct get_data data = {
		.submit = submit, .wait_nr = wait_nr, .get_flags = 0, .sz = _NSIG / 8, .arg = sigmask,
	};
	return get_cqe(ring, cqe_ptr, &data);
}

EXPORT int io_uring_get_events(struct io_uring *ring)
{
	unsigned flags = IORING_ENTER_GETEVENTS;
	if (ring->int_flags & INT_FLAG_REG_RING)
		flags |= IORING_ENTER_REGISTERED_RING;
	return sys_enter(ring->enter_ring_fd, 0, 0, flags, NULL);
}

EXPORT unsigned io_uring_peek_batch_cqe(struct io_uring *ring, struct io_uring_cqe **cqes, unsigned count)
{
	bool overflow_checked = false;
	int shift = ring->flags & IORING_SETUP_CQE32 ? 1 : 0;

	for (;;) {
		unsigned ready = io_uring_cq_ready(ring);
		if (ready) {
			unsigned head = *ring->cq.khead, mask = ring->cq.ring_mask;
			count = count > ready ? ready : count;
			for (unsigned i = 0; i < count; i++, head++)
				cqes[i] = &ring->cq.cqes[(head & mask) << shift];
			return count;
		}
		if (overflow_checked || !cq_ring_needs_flush(ring))
			return 0;
		io_uring_get_events(ring);
		overflow_checked = true;
	}
}

/* Publishes the SQEs taken since the last call; returns how many wait in the SQ. */
static unsigned flush_sq(struct io_uring *ring)
{
	struct io_uring_sq *sq = &ring->sq;
	unsigned tail = sq->sqe_tail;
	if (sq->sqe_head != tail) {
		sq->sqe_head = tail;
		if (!(ring->flags & IORING_SETUP_SQPOLL))
			IO_URING_WRITE_ONCE(*sq->ktail, tail);
		else
			io_uring_smp_store_release(sq->ktail, tail);
	}
	return tail - *sq->khead;
}

/* Kernels without IORING_FEAT_EXT_ARG wait with a timeout SQE of liburing's own. */
static int submit_timeout(struct io_uring *ring, unsigned wait_nr, struct __kernel_timespec *ts)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	if (!sqe) {
		int ret = io_uring_submit(ring);
		if (ret < 0)
			return ret;
		sqe = io_uring_get_sqe(ring);
		if (!sqe)
			return -EAGAIN;
	}
	io_uring_prep_timeout(sqe, ts, wait_nr, 0);
	sqe->user_data = LIBURING_UDATA_TIMEOUT;
	return (int)flush_sq(ring);
}

static int wait_ext_arg(struct io_uring *ring, struct io_uring_cqe **cqe_ptr, unsigned submit,
			unsigned wait_nr, struct __kernel_timespec *ts, sigset_t *sigmask)
{
	struct io_uring_getevents_arg arg = {
		.sigmask = (unsigned long)sigmask, .sigmask_sz = _NSIG / 8, .ts = (unsigned long)ts,
	};
	struct get_data data = {
		.submit = submit, .wait_nr = wait_nr, .get_flags = IORING_ENTER_EXT_ARG,
		.sz = sizeof(arg), .has_ts = ts != NULL, .arg = &arg,
	};
	return get_cqe(ring, cqe_ptr, &data);
}

EXPORT int io_uring_wait_cqes(struct io_uring *ring, struct io_uring_cqe **cqe_ptr, unsigned wait_nr,
			      struct __kernel_timespec *ts, sigset_t *sigmask)
{
	int to_submit = 0;
	if (ts) {
		if (ring->features & IORING_FEAT_EXT_ARG)
			return wait_ext_arg(ring, cqe_ptr, 0, wait_nr, ts, sigmask);
		to_submit = submit_timeout(ring, wait_nr, ts);
		if (to_submit < 0)
			return to_submit;
	}
	return __io_uring_get_cqe(ring, cqe_ptr, (unsigned)to_submit, wait_nr, sigmask);
}

EXPORT int io_uring_submit_and_wait_timeout(struct io_uring *ring, struct io_uring_cqe **cqe_ptr,
					    unsigned wait_nr, struct __kernel_timespec *ts,
					    sigset_t *sigmask)
{
	int to_submit;
	if (ts) {
		if (ring->features & IORING_FEAT_EXT_ARG)
			return wait_ext_arg(ring, cqe_ptr, flush_sq(ring), wait_nr, ts, sigmask);
		to_submit = submit_timeout(ring, wait_nr, ts);
		if (to_submit < 0)
			return to_submit;
	} else {
		to_submit = (int)flush_sq(ring);
	}
	return __io_uring_get_cqe(ring, cqe_ptr, (unsigned)to_submit, wait_nr, sigmask);
}

EXPORT int io_uring_wait_cqe_timeout(struct io_uring *ring, struct io_uring_cqe **cqe_ptr,
				     struct __kernel_timespec *ts)
{
	return io_uring_wait_cqes(ring, cqe_ptr, 1, ts, NULL);
}

static int submit(struct io_uring *ring, unsigned submitted, unsigned wait_nr, bool getevents)
{
	bool cq_needs_enter = getevents || wait_nr || cq_ring_needs_enter(ring);
	unsigned flags = 0;
	if (!sq_ring_needs_enter(ring, submitted, &flags) && !cq_needs_enter)
		return (int)submitted;
	if (cq_needs_enter)
		flags |= IORING_ENTER_GETEVENTS;
	if (ring->int_flags & INT_FLAG_REG_RING)
		flags |= IORING_ENTER_REGISTERED_RING;
	return sys_enter(ring->enter_ring_fd, submitted, wait_nr, flags, NULL);
}

EXPORT int io_uring_submit(struct io_uring *ring)
{
	return submit(ring, flush_sq(ring), 0, false);
}

EXPORT int io_uring_submit_and_wait(struct io_uring *ring, unsigned wait_nr)
{
	return submit(ring, flush_sq(ring), wait_nr, false);
}

EXPORT int io_uring_submit_and_get_events(struct io_uring *ring)
{
	return submit(ring, flush_sq(ring), 0, true);
}

/* ---- register.c ------------------------------------------------------------- */

static int zero_or_err(int ret)
{
	return ret < 0 ? ret : 0;
}

EXPORT int io_uring_register_buffers(struct io_uring *ring, const struct iovec *iovecs, unsigned nr)
{
	return zero_or_err(sys_register(ring->ring_fd, IORING_REGISTER_BUFFERS, iovecs, nr));
}

EXPORT int io_uring_unregister_buffers(struct io_uring *ring)
{
	return zero_or_err(sys_register(ring->ring_fd, IORING_UNREGISTER_BUFFERS, NULL, 0));
}

/* liburing raises RLIMIT_NOFILE once when the kernel says EMFILE. */
static void raise_nofile(unsigned nr)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < nr) {
		rl.rlim_cur += nr;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

EXPORT int io_uring_register_files(struct io_uring *ring, const int *files, unsigned nr)
{
	int ret = sys_register(ring->ring_fd, IORING_REGISTER_FILES, files, nr);
	if (ret == -EMFILE) {
		raise_nofile(nr);
		ret = sys_register(ring->ring_fd, IORING_REGISTER_FILES, files, nr);
	}
	return ret;
}

EXPORT int io_uring_register_files_update(struct io_uring *ring, unsigned off, const int *files, unsigned nr)
{
	struct io_uring_files_update up = { .offset = off, .fds = (unsigned long)files };
	return sys_register(ring->ring_fd, IORING_REGISTER_FILES_UPDATE, &up, nr);
}

EXPORT int io_uring_unregister_files(struct io_uring *ring)
{
	return zero_or_err(sys_register(ring->ring_fd, IORING_UNREGISTER_FILES, NULL, 0));
}

/* liburing returns the personality id (or -errno) as the kernel does. */
EXPORT int io_uring_register_personality(struct io_uring *ring)
{
	return sys_register(ring->ring_fd, IORING_REGISTER_PERSONALITY, NULL, 0);
}

EXPORT int io_uring_unregister_personality(struct io_uring *ring, int id)
{
	return sys_register(ring->ring_fd, IORING_UNREGISTER_PERSONALITY, NULL, (unsigned)id);
}

EXPORT int io_uring_register_eventfd(struct io_uring *ring, int fd)
{
	return zero_or_err(sys_register(ring->ring_fd, IORING_REGISTER_EVENTFD, &fd, 1));
}

EXPORT int io_uring_unregister_eventfd(struct io_uring *ring)
{
	return zero_or_err(sys_register(ring->ring_fd, IORING_UNREGISTER_EVENTFD, NULL, 0));
}

EXPORT int io_uring_register_ring_fd(struct io_uring *ring)
{
	struct io_uring_rsrc_update up = { .data = (__u64)ring->ring_fd, .offset = -1U };
	int ret = sys_register(ring->ring_fd, IORING_REGISTER_RING_FDS, &up, 1);
	if (ret == 1) {
		ring->enter_ring_fd = (int)up.offset;
		ring->int_flags |= INT_FLAG_REG_RING;
	}
	return ret;
}

EXPORT int io_uring_unregister_ring_fd(struct io_uring *ring)
{
	struct io_uring_rsrc_update up = { .offset = (__u32)ring->enter_ring_fd };
	int ret = sys_register(ring->ring_fd, IORING_UNREGISTER_RING_FDS, &up, 1);
	if (ret == 1) {
		ring->enter_ring_fd = ring->ring_fd;
		ring->int_flags &= (__u8)~INT_FLAG_REG_RING;
	}
	return ret;
}

EXPORT int io_uring_register_buf_ring(struct io_uring *ring, struct io_uring_buf_reg *reg, unsigned flags)
{
	(void)flags;
	return sys_register(ring->ring_fd, IORING_REGISTER_PBUF_RING, reg, 1);
}

EXPORT int io_uring_unregister_buf_ring(struct io_uring *ring, int bgid)
{
	struct io_uring_buf_reg reg = { .bgid = (__u16)bgid };
	return sys_register(ring->ring_fd, IORING_UNREGISTER_PBUF_RING, &reg, 1);
}

EXPORT int io_uring_register_sync_cancel(struct io_uring *ring, struct io_uring_sync_cancel_reg *reg)
{
	return sys_register(ring->ring_fd, IORING_REGISTER_SYNC_CANCEL, reg, 1);
}
