#define _GNU_SOURCE
#include "preload/kernel_ops.h"

#include <errno.h>
#include <linux/io_uring.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>

#include "pool/pool.h"
#include "preload/state.h"
#include "preload/sys.h"

#define OP_PROVIDE_BUFFERS_NR 31	/* 5.7 */
#define OP_MSG_RING_NR 40		/* 5.18: "manage provided buffers strictly ordered" */
#define OP_SOCKET_NR 45			/* 5.19: IORING_CQE_F_SOCK_NONEMPTY */
#define KERNEL_SOCK_NONEMPTY 0x513	/* 5.19 */

enum {
	KO_PROBED = 1,
	KO_PROVIDE = 2,
	KO_MSG_RING = 4,
	KO_SOCKET = 8,
};

static int supported(const struct io_uring_probe *head, const struct io_uring_probe_op *ops, unsigned op)
{
	return head->last_op >= op && (ops[op].flags & IO_URING_OP_SUPPORTED);
}

static unsigned probe(void)
{
	struct io_uring_params p;
	memset(&p, 0, sizeof(p));
	unsigned k = KO_PROBED;
	long fd = sys_call3(__NR_io_uring_setup, 1, (long)&p, 0);
	if (fd < 0)
		return k;
	struct {
		struct io_uring_probe head;
		struct io_uring_probe_op ops[OP_SOCKET_NR + 1];
	} pr;
	memset(&pr, 0, sizeof(pr));
	if (!sys_call6(__NR_io_uring_register, fd, IORING_REGISTER_PROBE, (long)&pr, OP_SOCKET_NR + 1, 0, 0)) {
		k |= supported(&pr.head, pr.ops, OP_PROVIDE_BUFFERS_NR) ? KO_PROVIDE : 0;
		k |= supported(&pr.head, pr.ops, OP_MSG_RING_NR) ? KO_MSG_RING : 0;
		k |= supported(&pr.head, pr.ops, OP_SOCKET_NR) ? KO_SOCKET : 0;
	}
	sys_close((int)fd);
	return k;
}

static unsigned kernel_ops(void)
{
	unsigned k = atomic_load_explicit(&bufsel.kernel_ops, memory_order_acquire);
	if (!k) {
		k = probe();
		atomic_store_explicit(&bufsel.kernel_ops, k, memory_order_release);
	}
	return k;
}

unsigned kernel_legacy_rules(void)
{
	unsigned k = kernel_ops();
	return (k & KO_PROVIDE) && !(k & KO_MSG_RING) ? POOL_NEWEST_FIRST : 0;
}

/* A ring of one entry with flag (and what it needs to be valid); NO_MMAP is
 * asked without memory, which a kernel that knows it refuses with -EFAULT. */
static int setup_known(unsigned flag)
{
	struct io_uring_params p;
	memset(&p, 0, sizeof(p));
	p.flags = flag;
	if (flag == IORING_SETUP_DEFER_TASKRUN)
		p.flags |= IORING_SETUP_SINGLE_ISSUER;
	long fd = sys_call3(__NR_io_uring_setup, 1, (long)&p, 0);
	if (fd >= 0)
		sys_close((int)fd);
	return fd != -EINVAL;
}

unsigned kernel_setup_unknown(unsigned flags)
{
	unsigned asked = atomic_load_explicit(&bufsel.setup_asked, memory_order_acquire);
	for (unsigned bit = 1; bit && (flags & ~asked); bit <<= 1) {
		if (!(flags & bit) || (asked & bit))
			continue;
		if (!setup_known(bit))
			atomic_fetch_or_explicit(&bufsel.setup_unknown, bit, memory_order_relaxed);
		asked = atomic_fetch_or_explicit(&bufsel.setup_asked, bit, memory_order_release) | bit;
	}
	return flags & atomic_load_explicit(&bufsel.setup_unknown, memory_order_relaxed);
}

int kernel_sets_sock_nonempty(void)
{
	if (bufsel.conf.kernel)
		return bufsel.conf.kernel >= KERNEL_SOCK_NONEMPTY;
	return !!(kernel_ops() & KO_SOCKET);
}
