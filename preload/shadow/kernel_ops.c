#define _GNU_SOURCE
#include "preload/shadow/kernel_ops.h"

#include <errno.h>
#include <linux/io_uring.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>

#include "pool/pool.h"
#include "preload/log.h"
#include "preload/shadow/compat.h"
#include "preload/state.h"
#include "preload/sys.h"

#define KERNEL_PROVIDE_BUFFERS 0x507
#define KERNEL_SOCK_NONEMPTY 0x513	/* IORING_CQE_F_SOCK_NONEMPTY */
#define KERNEL_BEFORE_PROBE 0x500	/* no IORING_REGISTER_PROBE: 5.1 to 5.5 */

/*
 * The rules of legacy groups a kernel older than `until` has (kernel_ops.h,
 * pool.h), each from the commit that ended it.  Only 5.10 and 6.18 were
 * run (make vm-test); the releases between come from the kernel's history.
 */
static const struct {
	unsigned until;
	unsigned rules;
} legacy_rows[] = {
	/* "manage provided buffers strictly ordered"; io_kbuf_recycle */
	{ 0x512, POOL_NEWEST_FIRST | LEGACY_PROVIDE_COUNT | LEGACY_BIND_AT_FIRST_ATTEMPT },
	/* io_rw_init_file; io_buffer_select returning the address; SOCK_NONEMPTY */
	{ 0x513, LEGACY_READ_MODE_AT_PREP | LEGACY_NULL_IS_A_BUFFER | LEGACY_NO_SOCK_NONEMPTY },
	/* "add ->splice_fd_in checks" and the overflow checks */
	{ 0x50f, POOL_PREP_5_10 },
	/* "allow 0 length for buffer select", "recycle buffers on error" */
	{ 0x600, LEGACY_LEN0_READS_NOTHING | LEGACY_KEEPS_ON_FAILURE },
};

/* bufsel.kernel_ops: KO_PROBED, and the release the probe shows above it. */
#define KO_PROBED 1u
#define KO_RELEASE_SHIFT 8

/* The kernel's last opcode, as IORING_REGISTER_PROBE reports it (it says so
 * whatever number of entries it is given room for); 0 for a kernel without
 * the probe or without io_uring; -1 if the ring to ask on could not be had
 * (no descriptor or memory left), to be asked again. */
static long probe_last_op(void)
{
	struct io_uring_params p;
	memset(&p, 0, sizeof(p));
	long fd = sys_call3(__NR_io_uring_setup, 1, (long)&p, 0);
	if (fd == -EMFILE || fd == -ENFILE || fd == -ENOMEM)
		return -1;
	if (fd < 0)
		return 0;
	compat_note_kernel_features(p.features);
	struct io_uring_probe pr;
	memset(&pr, 0, sizeof(pr));
	long last = 0;
	if (!sys_call6(__NR_io_uring_register, fd, IORING_REGISTER_PROBE, (long)&pr, 0, 0, 0))
		last = pr.last_op;
	sys_close((int)fd);
	return last;
}

/* The release of the kernel beneath, a floor (major << 8 | minor): the
 * newest release among those whose opcodes it has. */
static unsigned kernel_release(void)
{
	unsigned k = atomic_load_explicit(&bufsel.kernel_ops, memory_order_acquire);
	if (!k) {
		long last = probe_last_op();
		if (last < 0)
			return KERNEL_BEFORE_PROBE;	/* this time only */
		k = KO_PROBED | (last ? compat_release_of_last_op((unsigned)last) : KERNEL_BEFORE_PROBE)
					<< KO_RELEASE_SHIFT;
		atomic_store_explicit(&bufsel.kernel_ops, k, memory_order_release);
		log_debug("kernel: IORING_REGISTER_PROBE's last_op %ld: the opcodes of %u.%u", last,
			  (k >> KO_RELEASE_SHIFT) >> 8, (k >> KO_RELEASE_SHIFT) & 0xff);
	}
	return k >> KO_RELEASE_SHIFT;
}

void kernel_ops_probe(void)
{
	(void)kernel_release();
}

/* The kernel the program meets: the one BUFSEL_KERNEL names, else the
 * kernel beneath. */
static unsigned kernel_met(void)
{
	return bufsel.conf.kernel ? bufsel.conf.kernel : kernel_release();
}

unsigned kernel_legacy_rules(void)
{
	if (bufsel.conf.legacy == BUFSEL_LEGACY_LATEST)
		return 0;
	unsigned v = kernel_met();
	/* A kernel without PROVIDE_BUFFERS has no rules of its own for them:
	 * bufsel's are the ones programs are written for, 6.18's. */
	if (v < KERNEL_PROVIDE_BUFFERS)
		return 0;
	unsigned rules = 0;
	for (size_t i = 0; i < sizeof(legacy_rows) / sizeof(legacy_rows[0]); i++)
		if (v < legacy_rows[i].until)
			rules |= legacy_rows[i].rules;
	return rules;
}

/* The rules of kernel_ops.h a kernel older than `until` has, each from
 * the commit that ended it. */
static const struct {
	unsigned until;
	unsigned rules;
} kernel_rows[] = {
	/* "pipe: add FMODE_NOWAIT" */
	{ 0x50c, KERNEL_PIPES_BLOCK },
	/* io_submit_sqes returns before the commit when the SQ is empty */
	{ 0x510, KERNEL_EMPTY_SQ_COMMIT },
	/* io_assign_file; io_timeout_cancel through io_req_task_queue_fail */
	{ 0x512, KERNEL_FILE_AT_SUBMIT | KERNEL_TIMEOUT_CANCEL_FIRST },
	/* io_prep_rw reads attr_type_mask (protection information) */
	{ 0x60f, KERNEL_RW_ATTR_UNREAD },
};

int kernel_rule(unsigned rule)
{
	unsigned v = kernel_met();
	for (size_t i = 0; i < sizeof(kernel_rows) / sizeof(kernel_rows[0]); i++)
		if ((kernel_rows[i].rules & rule) && v < kernel_rows[i].until)
			return 1;
	return 0;
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
	return kernel_met() >= KERNEL_SOCK_NONEMPTY;
}
