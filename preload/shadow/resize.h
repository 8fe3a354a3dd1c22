/* IORING_REGISTER_RESIZE_RINGS on a shadowed ring (resize.c). */
#ifndef BUFSEL_PRELOAD_RESIZE_H
#define BUFSEL_PRELOAD_RESIZE_H

#include "preload/shadow/ring.h"

/* The register call a[] on r: the kernel's answer, the rings and the shadow
 * resized alike on success. */
long resize_rings(struct ring *r, const long a[6]);

#endif
