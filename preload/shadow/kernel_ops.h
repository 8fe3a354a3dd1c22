/*
 * What the kernel beneath knows, asked once with IORING_REGISTER_PROBE on a
 * ring of bufsel's own, where no feature bit tells: not read from uname,
 * which distribution kernels with io_uring backported would make wrong,
 * and not learnt by trying the feature, which the kernel's tracepoints
 * would show as the program's.  Each opcode stands for the release that
 * brought it.
 */
#ifndef BUFSEL_PRELOAD_KERNEL_OPS_H
#define BUFSEL_PRELOAD_KERNEL_OPS_H

/*
 * The kernel's rules for legacy groups where they are not 6.18's, for the
 * kernel the program meets (the one BUFSEL_KERNEL names, else the kernel
 * beneath, a release told by its opcodes), from 5.7 on (before, there are
 * no legacy groups of the kernel's to be like: bufsel's are 6.18's).  The
 * pool's own (pool.h: POOL_NEWEST_FIRST, POOL_PREP_5_10) and these, which
 * the emulation applies, each as make vm-test shows it on 5.10:
 */
/* 5.7-5.17: PROVIDE_BUFFERS into a group that has buffers gives the number
 * added (io_add_buffers' count); one that starts a group gives 0 (the
 * group's insertion, xa_insert). */
#define LEGACY_PROVIDE_COUNT (1u << 8)
/* 5.7-5.17: a single-shot RECV or RECVMSG selects its buffer at its first
 * attempt and holds it while it waits for data (no recycling: 5.18). */
#define LEGACY_BIND_AT_FIRST_ATTEMPT (1u << 9)
/* 5.7-5.19: a length of 0 reads 0 bytes into the selected buffer. */
#define LEGACY_LEN0_READS_NOTHING (1u << 10)
/* 5.7-5.19: a request that selected a buffer keeps it and reports it
 * whatever its result (an error, end of file); one cancelled loses it. */
#define LEGACY_KEEPS_ON_FAILURE (1u << 11)
/* 5.7-5.18: no IORING_CQE_F_SOCK_NONEMPTY on such a receive (bufsel gives
 * the flag only to the receives those kernels lack). */
#define LEGACY_NO_SOCK_NONEMPTY (1u << 12)
/* 5.7-5.18: a READ or READV checks that its file is open for reading at
 * prep (io_read_prep), before it selects: -EBADF, the batch stopped there,
 * the group untouched. */
#define LEGACY_READ_MODE_AT_PREP (1u << 13)
/* 5.7-5.18: a buffer at address 0 is a buffer like any other (5.19's
 * io_buffer_select returns the address, and 0 means none left). */
#define LEGACY_NULL_IS_A_BUFFER (1u << 14)
unsigned kernel_legacy_rules(void);
/* Asks the kernel beneath now, before the program's ring exists: the answer
 * does not depend on a descriptor being free when a rule is first needed. */
void kernel_ops_probe(void);
/* Does the kernel set IORING_CQE_F_SOCK_NONEMPTY (5.19, with
 * IORING_OP_SOCKET), or the one BUFSEL_KERNEL names? */
int kernel_sets_sock_nonempty(void);
/*
 * The kernel's rules outside legacy groups where they are not 6.18's, for
 * the kernel the program meets, each kept by the part of bufsel that acts
 * in the kernel's place (kernel_rule):
 */
/* Before 5.18 ("io_uring: defer file assignment") io_init_req looks the
 * request's file up at submission: a bad fd (or fixed-file slot) fails the
 * SQE there with -EBADF, and with it the chain it is in. */
#define KERNEL_FILE_AT_SUBMIT (1u << 0)
/* Before 5.18 a TIMEOUT_REMOVE posts the removed TIMEOUT's -ECANCELED
 * before its own CQE (io_timeout_cancel fills it at once; since, task work
 * posts it after). */
#define KERNEL_TIMEOUT_CANCEL_FIRST (1u << 1)
/* Before 5.12 pipes lack FMODE_NOWAIT: io_uring cannot try a pipe without
 * blocking, so a read polls first, and RWF_NOWAIT is refused at prep
 * (-EOPNOTSUPP). */
#define KERNEL_PIPES_BLOCK (1u << 2)
/* Before 5.16 ("io_uring: optimise io_submit_sqes" added the early return
 * for an empty SQ) an enter with to_submit writes the kernel's own SQ head
 * back (io_commit_sqring) even when there is nothing to submit, over one
 * the program moved. */
#define KERNEL_EMPTY_SQ_COMMIT (1u << 3)
/* Before 6.15 io_prep_rw never reads attr_type_mask. */
#define KERNEL_RW_ATTR_UNREAD (1u << 4)
/* Does the kernel the program meets (BUFSEL_KERNEL's, else the kernel
 * beneath) follow rule? */
int kernel_rule(unsigned rule);
/* Of the setup flags in flags, those the kernel beneath does not know (a
 * ring asked for with each refused with -EINVAL), each asked once. */
unsigned kernel_setup_unknown(unsigned flags);

#endif
