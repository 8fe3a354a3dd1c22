/*
 * io_uring ABI constants newer than the system's <linux/io_uring.h> (Debian
 * 12 ships 6.1 headers).  Values are the kernel's uapi; only defined here
 * when the header lacks them.
 */
#ifndef BUFSEL_PRELOAD_URING_ABI_H
#define BUFSEL_PRELOAD_URING_ABI_H

#include <linux/io_uring.h>
#include <stdint.h>

#ifndef IORING_OFF_PBUF_RING
#define IORING_OFF_PBUF_RING 0x80000000ULL
#endif
#ifndef IORING_REGISTER_PBUF_STATUS
#define IORING_REGISTER_PBUF_STATUS 26
#endif

/* Kernel versions (major << 8 | minor) where features bufsel cares about
 * arrived, for BUFSEL_KERNEL. */
#define KERNEL_PBUF_RING 0x513		/* 5.19: IORING_REGISTER_PBUF_RING */
#define KERNEL_PBUF_RING_MMAP 0x604	/* 6.4: IOU_PBUF_RING_MMAP */
#define KERNEL_PBUF_RING_INC 0x60c	/* 6.12: IOU_PBUF_RING_INC */

/* Buffer rings as 6.18 has them (6.1's header names the flags field pad). */
#define BUFRING_MMAP 1u			/* IOU_PBUF_RING_MMAP */
#define BUFRING_INC 2u			/* IOU_PBUF_RING_INC */
#define BUFRING_OFF_SHIFT 16		/* IORING_OFF_PBUF_SHIFT */
#define BUFRING_OFF_MASK 0xf8000000ULL	/* IORING_OFF_MMAP_MASK */
#define FEAT_RECVSEND_BUNDLE (1U << 14)	/* IORING_FEAT_RECVSEND_BUNDLE, 6.10 */
#define OP_READ_MULTISHOT_NR 49		/* IORING_OP_READ_MULTISHOT, 6.7 */
#ifndef IORING_RECVSEND_BUNDLE
#define IORING_RECVSEND_BUNDLE (1U << 4)	/* 6.10 */
#endif
#ifndef IORING_CQE_F_BUF_MORE
#define IORING_CQE_F_BUF_MORE (1U << 4)	/* 6.12: an incremental entry stays */
#endif

struct bufring_reg {			/* struct io_uring_buf_reg */
	uint64_t ring_addr;
	uint32_t ring_entries;
	uint16_t bgid;
	uint16_t flags;
	uint32_t min_left;		/* IOU_PBUF_RING_INC only: the least a partly
					 * used buffer keeps before it is retired */
	uint32_t resv[5];
};

struct bufring_status {			/* struct io_uring_buf_status */
	uint32_t buf_group;
	uint32_t head;
	uint32_t resv[8];
};
#ifndef IORING_REGISTER_USE_REGISTERED_RING
#define IORING_REGISTER_USE_REGISTERED_RING (1U << 31)
#endif
#ifndef IORING_SETUP_NO_MMAP
#define IORING_SETUP_NO_MMAP (1U << 14)
#endif
#ifndef IORING_SETUP_NO_SQARRAY
#define IORING_SETUP_NO_SQARRAY (1U << 16)	/* 6.6 */
#endif
/* 6.13: new SQ and CQ rings for a live ring; the program maps them again. */
#define IORING_REGISTER_RESIZE_RINGS_NR 33

#endif
