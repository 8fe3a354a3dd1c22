/*
 * Reading and writing the program's memory without trusting its pointers:
 * a bad pointer in a syscall argument or an SQE gives -EFAULT, as the kernel
 * would, instead of a crash inside the host.  process_vm_readv on our own
 * pid is a syscall, so these are for setup-time and per-request data, not
 * per-byte loops.  Where a sandbox denies process_vm_readv/writev the copy
 * goes through a pipe (uaccess.c).
 */
#ifndef BUFSEL_PRELOAD_UACCESS_H
#define BUFSEL_PRELOAD_UACCESS_H

#include <stddef.h>
#include <stdint.h>

int copy_from_prog(void *dst, const void *src, size_t len);
int copy_to_prog(void *dst, const void *src, size_t len);
/* Memory the program gives a ring, as io_create_region checks it: 0,
 * -EFAULT, -EINVAL (not page aligned) or -EOVERFLOW. */
long uaccess_user_region(uint64_t addr, size_t len);

#endif
