/*
 * The pieces of io_uring_setup (setup.c) that a resize of a shadowed ring
 * (resize.c) builds again: the kernel's ring sizes, bufsel's memory for the
 * real rings, bufsel's view of them, and a shadow.
 */
#ifndef BUFSEL_PRELOAD_SETUP_H
#define BUFSEL_PRELOAD_SETUP_H

#include <linux/io_uring.h>
#include <stddef.h>

#include "preload/shadow/ring.h"

/* bufsel's memory for the kernel's rings and SQEs (IORING_SETUP_NO_MMAP). */
struct real_mem {
	void *rings, *sqes;
	size_t rings_len, sqes_len;
};

/* SQ and CQ sizes as io_uring_fill_params makes them from entries and
 * p->flags / p->cq_entries: 0, or the kernel's -EINVAL. */
int setup_ring_sizes(unsigned entries, const struct io_uring_params *p, unsigned *sq_out, unsigned *cq_out);
/* Memory for real rings of these sizes: 0 or -errno (*m zeroed). */
int real_mem_map(unsigned sq, unsigned cq, struct real_mem *m);
void real_mem_free(struct real_mem *m);
/* Points r's real-ring fields into rings laid out as p says. */
void setup_point_real(struct ring *r, const struct io_uring_params *p, char *s, char *c, void *sqes);
/* r's real rings are bufsel's memory m (which r takes over). */
void setup_adopt_real(struct ring *r, const struct io_uring_params *p, struct real_mem *m);
/* Maps the kernel's rings through r's own fd (r->real_*_map). */
int setup_map_real(struct ring *r, const struct io_uring_params *p);
/* A new, empty shadow of p's sizes in *sh; *mem_fd its memfd under valgrind
 * (else -1).  0 or -errno. */
int setup_map_shadow(const struct io_uring_params *p, int share_flags, struct shadow *sh, int *mem_fd);

#endif
