/*
 * What bufsel needs to know about each io_uring opcode, in one table (as the
 * kernel's io_uring/opdef.c does): the drain loop and the completion path
 * read a row, they do not switch on opcodes.  A new opcode is a new row.
 */
#ifndef BUFSEL_PRELOAD_OPDEF_H
#define BUFSEL_PRELOAD_OPDEF_H

#include <stdint.h>
#include <linux/io_uring.h>

/* How bufsel treats IOSQE_BUFFER_SELECT on a legacy group for this opcode. */
enum opdef_select {
	SELECT_REFUSED = 0,	/* -EOPNOTSUPP at submission, as the kernel says */
	SELECT_AT_ISSUE,	/* READ, READV: bound at the first attempt, kept while waiting */
	SELECT_WHEN_READABLE,	/* RECV, RECVMSG: bound only once the socket has data */
	SELECT_NEWER_KERNEL,	/* accepted only by kernels newer than the emulation:
				 * refused with the error an older kernel gives */
	SELECT_MULTISHOT,	/* READ_MULTISHOT: a stream of reads, each on a buffer */
	SELECT_INVALID,		/* URING_CMD: 6.18 rejects a selecting command at prep (-EINVAL)
				 * unless it is multishot, which only ring-mapped groups feed */
};

/* Where the program's buffer address and length live in the SQE. */
enum opdef_buf {
	BUF_NONE = 0,
	BUF_ADDR_LEN,		/* sqe->addr, sqe->len */
	BUF_IOVEC,		/* one struct iovec at sqe->addr, sqe->len = iovcnt */
	BUF_MSGHDR,		/* struct msghdr at sqe->addr, one iovec in it */
};

/* An opcode bufsel answers itself; the kernel never sees it on a legacy group. */
enum opdef_emulated {
	EMU_NONE = 0,
	EMU_PROVIDE_BUFFERS,
	EMU_REMOVE_BUFFERS,
};

struct opdef {
	const char *name;
	uint8_t select;		/* enum opdef_select */
	uint8_t buf;		/* enum opdef_buf */
	uint8_t emulated;	/* enum opdef_emulated */
	uint8_t pollin;		/* readiness that means "data to bind a buffer to" */
	uint8_t len_int;	/* the kernel reads sqe->len as an int: negative is -EINVAL at prep */
	uint8_t sock;		/* needs a socket: -ENOTSOCK at issue, before any buffer is selected */
	uint8_t needs_file;	/* io_issue_defs .needs_file: sqe->fd names the file */
	uint8_t ioprio;		/* io_issue_defs .ioprio: takes sqe->ioprio (else -EINVAL at init) */
	uint8_t rw;		/* prepared by io_prep_rw: ioprio_check_cap, attr_type_mask */
	uint8_t mshot_no_len;	/* READ_MULTISHOT: a non-zero len (2: or addr) is -EINVAL at prep */
	uint8_t bundle;		/* IORING_RECVSEND_BUNDLE selects buffer after buffer (SEND) */
	uint8_t missing_enoent;	/* selects through io_buffers_select (6.18 SEND): a group
				 * with no list is -ENOENT, not -ENOBUFS */
	uint8_t send_addr;	/* SEND: addr2 is a destination address (io_send_setup) */
	uint8_t null_putback;	/* a NULL buffer at the head is -ENOBUFS and stays there;
				 * other opcodes consume it (-ENOBUFS with F_BUFFER) */
	uint16_t sr_flags;	/* RECV, RECVMSG, SEND: the ioprio flags prep takes (else -EINVAL) */
	/* The opcode's own prep checks, for opcodes the kernel runs (so that a
	 * chain bufsel looks along fails as the kernel will): 0 or the error.
	 * NULL where bufsel does not model them. */
	int (*kernel_prep)(const struct io_uring_sqe *sqe, unsigned setup_flags);
};

/* The row for an opcode; unknown opcodes get a row that refuses selection
 * and emulates nothing, so the kernel answers them as it would. */
const struct opdef *opdef_get(uint8_t opcode);
/* Does the kernel know the opcode (else -EINVAL in io_init_req)? */
int opdef_known(uint8_t opcode);

/* The SQE flags io_init_req turns into REQ_F_FORCE_ASYNC (a drained SQE is
 * forced async too): such a request is issued from io-wq. */
#define FORCED_ASYNC (IOSQE_ASYNC | IOSQE_IO_DRAIN)

/* io_init_req turns IOSQE_IO_DRAIN off for the ring on an SQE with
 * IOSQE_CQE_SKIP_SUCCESS only past its opcode, flags and buffer-select
 * checks: does this SQE get there with the flag? */
int opdef_skip_disables_drain(const struct io_uring_sqe *sqe);
/* Does the SQE get past those checks (to the drain rules)? */
int opdef_passes_flag_checks(const struct io_uring_sqe *sqe);

/* Start-up check that every known opcode has a named row: 0 or -EINVAL. */
int opdef_check(void);

#endif
