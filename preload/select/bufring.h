/*
 * Buffer rings bufsel keeps itself (emulated): IORING_REGISTER_PBUF_RING,
 * IORING_UNREGISTER_PBUF_RING, IORING_REGISTER_PBUF_STATUS and the mmap of
 * an IOU_PBUF_RING_MMAP ring, answered with Linux 6.18's results on any
 * kernel.  Selection from such a ring is the pool's (pool/ring.c), reached
 * through the same rewrite as a legacy group's.
 */
#ifndef BUFSEL_PRELOAD_BUFRING_H
#define BUFSEL_PRELOAD_BUFRING_H

#include <stdint.h>

struct ring;
struct bufring_reg;

/* The register opcodes bufsel may answer for buffer rings: 1 or 0. */
int bufring_opcode(unsigned opcode);
/* Every buffer ring the program registers will be bufsel's (BUFSEL_RINGS=
 * emulate, or auto on a kernel without rings): bundles, which bufsel runs
 * on its groups of either kind, are then the program's on any kernel. */
int bufring_keeps_all(void);
/* The kernel's ring just registered (reg as the program passed it), and
 * the program's mmap of one at off (addr: what mmap returned), watched for
 * statistics when they are wanted. */
void bufring_watch(struct ring *r, const struct bufring_reg *reg);
void bufring_watch_mmap(struct ring *r, uint64_t off, long addr);
/* io_uring_register for one of them on a shadowed ring: the result, or
 * -ENOSYS when the kernel answers (its ring, or rings left to it). */
long bufring_register(struct ring *r, unsigned opcode, const long a[6]);
/* mmap at IORING_OFF_PBUF_RING: the mapping, -ENOSYS for the kernel's, or
 * -ENOMEM where neither keeps a ring (not_ours). */
long bufring_mmap(struct ring *r, const long a[6]);
/* The ring goes in this process: bufsel's mappings of its rings go too. */
void bufring_release(struct ring *r);
/* In a fork's child: the program's pinned rings become its own again. */
void bufring_after_fork(struct ring *r);

#endif
