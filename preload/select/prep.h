/*
 * The kernel's checks of an SQE at submission (preload/select/prep.c), for the SQEs
 * bufsel acts on and those it looks at along a chain.  Each returns 0 or
 * the kernel's error.
 */
#ifndef BUFSEL_PRELOAD_PREP_H
#define BUFSEL_PRELOAD_PREP_H

#include <limits.h>
#include <linux/io_uring.h>
#include <stdint.h>

struct msghdr;
struct opdef;
struct ring;

/* io_init_req's flag rules, for SQEs whose effects bufsel applies itself. */
#define SQE_VALID_FLAGS                                                                  \
	(IOSQE_FIXED_FILE | IOSQE_IO_DRAIN | IOSQE_IO_LINK | IOSQE_IO_HARDLINK |         \
	 IOSQE_ASYNC | IOSQE_BUFFER_SELECT | IOSQE_CQE_SKIP_SUCCESS)
#define SQE_LINK_FLAGS (IOSQE_IO_LINK | IOSQE_IO_HARDLINK)

#define MAX_RW_COUNT_KERNEL (INT_MAX & ~4095u)

/* io_init_req's generic checks, before the opcode's own prep. */
int rewrite_init_check(struct ring *r, const struct io_uring_sqe *sqe);
/* io_init_req: a personality the ring does not have. */
int rewrite_personality_check(const struct ring *r, uint16_t id);
/* access_ok for a range the kernel takes whole: 0 or -EFAULT. */
int rewrite_user_range_check(uint64_t addr, uint64_t len);
/* io_prep_rw for a request without buffer select. */
int rewrite_rw_kernel_prep(const struct io_uring_sqe *sqe);
/* What the kernel rejects before a buffer-select SQE selects anything. */
int rewrite_select_prep_check(const struct ring *r, const struct io_uring_sqe *sqe,
			      const struct opdef *def);
/* The SQE's bytes 44-47 (optlen, or addr_len and __pad3[0]). */
uint32_t rewrite_sqe_word44(const struct io_uring_sqe *sqe);
/* The rest of a selecting SQE's prep: what it asks for (*want, and *msg for
 * a msghdr), read as the kernel reads it. */
int rewrite_read_request(const struct io_uring_sqe *sqe, const struct opdef *def, uint32_t *want,
			 struct msghdr *msg);
/* io_recvmsg_prep and io_sendmsg_prep for a request without buffer select. */
int rewrite_net_kernel_prep(const struct io_uring_sqe *sqe, const struct opdef *def);

#endif
