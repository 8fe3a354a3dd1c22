/*
 * io_uring_enter on a shadowed ring.  One real enter does the submission and
 * the wait, so return values, -EINTR, -ETIME and the "fewer submitted than
 * asked means no wait" rule are the kernel's own; bufsel only translates the
 * counts: the wait asks the kernel for what the shadow CQ still lacks.
 */
#include "preload/ring_io.h"

#include <sys/syscall.h>

#include "preload/mover.h"
#include "preload/sys.h"

long ring_enter(struct ring *r, unsigned to_submit, unsigned min_complete, unsigned flags,
		const void *argp, size_t argsz)
{
	int sqpoll = r->setup_flags & IORING_SETUP_SQPOLL;
	struct submit_batch b = {0};
	unsigned kto_submit = 0, kmin = 0;
	int submitting = to_submit || sqpoll;

	if (submitting) {
		spin_lock(&r->sq_lock);
		submit_prepare(r, to_submit, &b);
		kto_submit = sqpoll ? to_submit : b.copied;
		/* Natively a short submission skips the wait. */
		if (!sqpoll && b.copied < to_submit)
			flags &= ~IORING_ENTER_GETEVENTS;
	}
	/* With a mover draining the real CQ, a kernel wait could sleep through
	 * completions it already moved: wait on the shadow instead. */
	int shadow_wait = r->has_mover && (flags & IORING_ENTER_GETEVENTS);
	unsigned wait_flags = flags;
	if (shadow_wait)
		flags &= ~(IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG);
	if (flags & IORING_ENTER_GETEVENTS) {
		unsigned ready = complete_ready(r);
		if (!ready)
			ready = complete_reap(r);
		kmin = min_complete > ready ? min_complete - ready : 0;
	}
	/* The program's CQ flags (IORING_CQ_EVENTFD_DISABLED) are its to set
	 * and the kernel's to read: carry them over on every way in. */
	complete_sync_cq_flags(r);
	long ret = 0;
	if (kto_submit || (flags & ~IORING_ENTER_REGISTERED_RING) || sqpoll)
		ret = sys_call6(__NR_io_uring_enter, r->priv_fd, kto_submit, kmin, flags,
				shadow_wait ? 0 : (long)argp, shadow_wait ? 0 : (long)argsz);
	if (submitting) {
		submit_finish(r, &b, ret);
		spin_unlock(&r->sq_lock);
	}
	if (shadow_wait && ret >= 0) {
		long w = mover_wait(r, min_complete, wait_flags, argp, argsz);
		if (w < 0 && !ret)
			ret = w;
	}
	complete_reap(r);
	/* A wait that ends in an error with completions ready reports success:
	 * the kernel decides by the CQ it shows the program, i.e. the shadow. */
	if (ret < 0 && !kto_submit && (flags & IORING_ENTER_GETEVENTS) && complete_ready(r))
		ret = 0;
	return ret;
}
