/*
 * The file an SQE names, as the kernel finds it before it selects a buffer
 * (preload/select/fd.c).  Each answer is a system call on the program's fd.
 */
#ifndef BUFSEL_PRELOAD_FD_H
#define BUFSEL_PRELOAD_FD_H

#include <linux/io_uring.h>
#include <stdint.h>

struct opdef;
struct req;
struct ring;

/* A plain fd that is not open, or a fixed-file index past the ring's table. */
int rewrite_bad_file(const struct ring *r, const struct io_uring_sqe *sqe);
/* The same, for a request that cannot go to the kernel without its buffer
 * select. */
int rewrite_bad_fd(const struct ring *r, const struct io_uring_sqe *sqe);
/* SO_TYPE (SOCK_STREAM, SOCK_DGRAM, ...), or -errno. */
int fd_sock_type(int fd);
/* fd_sock_type of the request's own fd, asked once for the request's life
 * (or told, req_sock_known), and whether it is TCP; -1 for a fixed file or
 * no socket. */
int req_sock_type(struct req *q);
void req_sock_known(struct req *q, int type);
int req_sock_tcp(struct req *q);
/* A request that needs a socket, on a plain fd that is none. */
int rewrite_not_a_socket(const struct io_uring_sqe *sqe, const struct opdef *def);
/* A file without ->poll (file_can_poll). */
int rewrite_cannot_poll(int fd);
/* A file io-wq drops multishot on (one blocking attempt instead). */
int rewrite_wq_single_shot(int fd);
/* IORING_RECVSEND_POLL_FIRST on a RECV. */
int rewrite_polls_first(const struct io_uring_sqe *sqe);
/* IORING_RECVSEND_POLL_FIRST with MSG_DONTWAIT. */
int rewrite_polling_without_waiting(const struct io_uring_sqe *sqe);
/* A poll-first receive whose first attempt is final (-EAGAIN at once). */
int rewrite_poll_first_ends_at_once(const struct ring *r, const struct io_uring_sqe *sqe);
/* The poll events that say a receive has data (or an end) now, 0 if none. */
int fd_readable(int fd);
/* The socket's queued bytes (FIONREAD). */
uint32_t rewrite_sock_queued(int fd);
/* A RECVMSG whose copy faulted: a datagram leaves the queue all the same. */
void rewrite_drop_faulted_datagram(const struct io_uring_sqe *sqe);
/* A RECVMSG on an entry the kernel cannot write: -EFAULT, or 0 if nothing
 * is to be copied. */
int rewrite_msghdr_entry_unreachable(const struct io_uring_sqe *sqe);
/* A file open for writing only. */
int rewrite_write_only(int fd);
/* A pipe or FIFO. */
int fd_is_pipe(int fd);

#endif
