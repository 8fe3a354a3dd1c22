/*
 * io_uring ABI constants newer than the system's <linux/io_uring.h> (Debian
 * 12 ships 6.1 headers).  Values are the kernel's uapi; only defined here
 * when the header lacks them.
 */
#ifndef BUFSEL_PRELOAD_URING_ABI_H
#define BUFSEL_PRELOAD_URING_ABI_H

#include <linux/io_uring.h>

#ifndef IORING_OFF_PBUF_RING
#define IORING_OFF_PBUF_RING 0x80000000ULL
#ifndef IORING_REGISTER_PBUF_STATUS
#define IORING_REGISTER_PBUF_STATUS 26
#endif

/* Kernel versions (major << 8 | minor) where features bufsel cares about
 * arrived, for BUFSEL_KERNEL. */
#define KERNEL_PBUF_RING 0x513		/* 5.19: IORING_REGISTER_PBUF_RING */
#define KERNEL_SOCK_NONEMPTY 0x513	/* 5.19: IORING_CQE_F_SOCK_NONEMPTY */

#endif
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
