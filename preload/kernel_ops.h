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

/* The pool's rules for legacy groups (pool.h): POOL_NEWEST_FIRST on a
 * kernel with PROVIDE_BUFFERS (5.7) older than 5.18, whose groups select
 * the newest first (make vm-test shows it on 5.10).  BUFSEL_KERNEL does not
 * change them yet: the suites that run it compare with this kernel's
 * native runs (docs/ARCHITECTURE.md). */
unsigned kernel_legacy_rules(void);
/* Does the kernel set IORING_CQE_F_SOCK_NONEMPTY (5.19, with
 * IORING_OP_SOCKET), or the one BUFSEL_KERNEL names? */
int kernel_sets_sock_nonempty(void);
/* Of the setup flags in flags, those the kernel beneath does not know (a
 * ring asked for with each refused with -EINVAL), each asked once. */
unsigned kernel_setup_unknown(unsigned flags);

#endif
