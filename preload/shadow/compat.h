/*
 * BUFSEL_KERNEL=X.Y: io_uring as a kernel of that version shows it.  Each
 * call is a no-op (0, or its argument unchanged) when no kernel is emulated.
 */
#ifndef BUFSEL_PRELOAD_COMPAT_H
#define BUFSEL_PRELOAD_COMPAT_H

#include <linux/io_uring.h>
#include <stdint.h>

struct bufsel_conf;

/* Takes the emulated kernel from the configuration (constructor only);
 * report is told, once per item, what the emulated kernel refused. */
void compat_init(const struct bufsel_conf *c,
		 void (*report)(const char *kind, const char *name, unsigned since));
/* Is a kernel emulated at all? */
int compat_emulating(void);
/* The emulated kernel (major << 8 | minor), 0 when none is. */
unsigned compat_kernel(void);

/* The release that brought opcode last_op or one before it, the latest of
 * them: what IORING_REGISTER_PROBE's last_op says of a kernel (a floor). */
unsigned compat_release_of_last_op(unsigned last_op);
/* Does the emulated kernel know every setup flag in flags (1 when none is
 * emulated)?  A question bufsel asks for its own rings: nothing is logged. */
int compat_has_setup(unsigned flags);
/* -EINVAL if a setup flag, enter flag or register opcode is newer. */
int compat_setup_flags(unsigned flags);
int compat_enter_flags(unsigned flags);
int compat_register_opcode(unsigned opcode);
/* The argument to hand the kernel for io_uring_register(opcode, arg,
 * nr_args): arg, or one never read.  Before 5.19 IORING_REGISTER_BUFFERS
 * and FILES look at the count before the array (no array and no count:
 * -EINVAL, or -EBUSY with a table there), 5.19 first refuses a NULL array
 * (-EFAULT). */
unsigned long compat_register_arg(unsigned opcode, unsigned long arg, unsigned nr_args);
/* IORING_REGISTER_USE_REGISTERED_RING (6.3) in io_uring_register's opcode
 * argument raw: before 6.3 an opcode past the last, -EINVAL before the fd
 * is looked at. */
int compat_register_by_index(unsigned raw);
/* The setup flags among flags that the emulated kernel lacks and the
 * shadow ring gives instead (accepted by compat_setup_flags, kept from the
 * kernel beneath). */
unsigned compat_setup_shadowed(unsigned flags);
/* With no kernel emulated, the flags among flags that the shadow gives if
 * the kernel beneath refuses them (its -EINVAL for the ring with them:
 * Linux 5.10 knows none of them, as make vm-test shows), 0 otherwise. */
unsigned compat_setup_lacked(unsigned flags);
/* The feature bits of a ring of the kernel beneath (kernel_ops.c's probe). */
void compat_note_kernel_features(unsigned f);
/* Is IOSQE_CQE_SKIP_SUCCESS one the emulated kernel, or with none emulated
 * the kernel beneath (5.10 to 5.16: no IORING_FEAT_CQE_SKIP), lacks and
 * bufsel gives (its SQEs reach the kernel without it, the hooks' skip drops
 * the CQE)? */
int compat_sqe_skip_shadowed(void);
/* IORING_ENTER_EXT_ARG before 6.12, which made io_getevents_arg's pad
 * min_wait_usec and reads the timeout before it waits: pad must be 0
 * (-EINVAL, as on 5.10.223), and a wait the CQ already satisfies returns
 * before the timeout is read.  0 when no kernel is emulated. */
int compat_ext_arg_before_min_wait(void);
/* The feature bits that kernel reports. */
unsigned compat_features(unsigned f);
/* Does that kernel know the request opcode? */
int compat_op_known(unsigned opcode);
/* An SQE on its way to the kernel: an opcode or flag the emulated kernel
 * lacks is made one no kernel knows, so it fails at prep with -EINVAL; a
 * field that kernel reads and refuses (a flag newer than it) fails as its
 * prep fails, with -EINVAL; a field it never reads is cleared.  in_chain:
 * an earlier SQE of this submit links to it.  offered: ioprio bits bufsel
 * itself gives this SQE their meaning (a receive on a buffer ring bufsel
 * keeps), so that kernel's lack of them does not matter, and
 * COMPAT_OFFER_OPCODE when bufsel runs the opcode itself (READ_MULTISHOT on
 * a group of its own). */
#define COMPAT_OFFER_OPCODE (1U << 31)
void compat_sqe(struct io_uring_sqe *sqe, int in_chain, uint32_t offered);
/* A probe the kernel filled, cut to that kernel's opcodes. */
void compat_probe(struct io_uring_probe *p, unsigned nr_ops);
/* ... and op, which bufsel runs itself, marked supported. */
void compat_probe_add(struct io_uring_probe *p, unsigned nr_ops, unsigned op);

#endif
