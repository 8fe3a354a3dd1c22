/*
 * The file an SQE names, as the kernel finds it when the request runs,
 * before it selects a buffer: open or not (a fixed-file index past the
 * ring's table), a socket or not, a file that can poll, readable now, bytes
 * queued; and whether a receive that polls first can wait on it.  Each
 * answer is one system call on the program's fd at drain time (or, for a
 * waiting receive, when its poll fires), made with bufsel's own calls
 * (sys.h).
 */
#define _GNU_SOURCE
#include "preload/select/fd.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "preload/select/opdef.h"
#include "preload/select/req.h"
#include "preload/shadow/ring.h"
#include "preload/shadow/ring_io.h"
#include "preload/sys.h"

/* The last fd asked about in a program's enter, while ring_io.h's epoch
 * says nothing can have opened or closed one since (this thread's). */
static __thread struct {
	unsigned epoch;
	int fd, closed;
} open_memo __attribute__((tls_model("initial-exec")));

static int fd_closed(int fd)
{
	if (ring_enter_depth && open_memo.epoch == ring_kernel_epoch && open_memo.fd == fd)
		return open_memo.closed;
	int closed = sys_call3(SYS_fcntl, fd, F_GETFD, 0) < 0;
	if (ring_enter_depth) {
		open_memo.epoch = ring_kernel_epoch;
		open_memo.fd = fd;
		open_memo.closed = closed;
	}
	return closed;
}

/* A descriptor the kernel cannot resolve: a plain fd that is not open, or a
 * fixed-file index past the ring's table (io_file_get_fixed: -EBADF). */
int rewrite_bad_file(const struct ring *r, const struct io_uring_sqe *sqe)
{
	if (sqe->flags & IOSQE_FIXED_FILE)
		return (unsigned)sqe->fd >= r->files_nr;
	return fd_closed(sqe->fd);
}

/* SO_TYPE (SOCK_STREAM, SOCK_DGRAM, ...), or -errno. */
int fd_sock_type(int fd)
{
	int type;
	socklen_t len = sizeof(type);
	long err = sys_call6(SYS_getsockopt, fd, SOL_SOCKET, SO_TYPE, (long)&type, (long)&len, 0);
	return err ? (int)err : type;
}

/* A receive asks about its socket at every completion where the kernel it
 * stands in for would just know: once is enough, since the file behind a
 * request cannot change type. */
int req_sock_type(struct req *q)
{
	if (!q->sock_type)
		req_sock_known(q, (q->orig.flags & IOSQE_FIXED_FILE) ? -EBADF : fd_sock_type(q->orig.fd));
	return q->sock_type;
}

void req_sock_known(struct req *q, int type)
{
	q->sock_type = type > 0 ? (int8_t)type : -1;
}

int req_sock_tcp(struct req *q)
{
	if (!q->sock_tcp) {
		int v = 0;
		socklen_t len = sizeof(v);
		int tcp = req_sock_type(q) == SOCK_STREAM &&
			  !sys_call6(SYS_getsockopt, q->orig.fd, SOL_SOCKET, SO_PROTOCOL, (long)&v, (long)&len, 0) &&
			  v == IPPROTO_TCP;
		q->sock_tcp = tcp ? 2 : 1;
	}
	return q->sock_tcp == 2;
}

/*
 * The kernel looks at the file before it selects a buffer: a request that
 * needs a socket fails on anything else with -ENOTSOCK at issue, taking no
 * buffer.  A RECV that polls first finds out only once its poll fires, so
 * it waits like any other (rewrite_bind_recv then gives the error).
 */
static int fd_not_socket(int fd)
{
	return fd_sock_type(fd) == -ENOTSOCK;
}

int rewrite_not_a_socket(const struct io_uring_sqe *sqe, const struct opdef *def)
{
	return def->sock && !(sqe->flags & IOSQE_FIXED_FILE) && fd_not_socket(sqe->fd);
}

/* file_can_poll: epoll_ctl refuses a file without ->poll with EPERM. */
int rewrite_cannot_poll(int fd)
{
	int ep = (int)sys_call3(SYS_epoll_create1, O_CLOEXEC, 0, 0);
	if (ep < 0)
		return 0;
	struct epoll_event ev = { .events = EPOLLIN };
	long err = sys_call6(SYS_epoll_ctl, ep, EPOLL_CTL_ADD, fd, (long)&ev, 0, 0);
	sys_close(ep);
	return err == -EPERM;
}

/*
 * io_wq_submit_work polls for a multishot request only on a file that is
 * O_NONBLOCK or FMODE_NOWAIT; on another it drops multishot and makes one
 * blocking attempt.  Sockets and pipes are FMODE_NOWAIT; a ring's own file
 * is not (a multishot RECV there fails with -ENOTSOCK at once).
 */
int rewrite_wq_single_shot(int fd)
{
	long fl = sys_call3(SYS_fcntl, fd, F_GETFL, 0);
	return fl >= 0 && !(fl & O_NONBLOCK) && ring_is_fd(fd);
}

int rewrite_polls_first(const struct io_uring_sqe *sqe)
{
	return sqe->opcode == IORING_OP_RECV && (sqe->ioprio & IORING_RECVSEND_POLL_FIRST);
}

/* IORING_RECVSEND_POLL_FIRST with MSG_DONTWAIT: the attempt that would poll
 * may not wait, so the request ends at once with -EAGAIN, data or not. */
int rewrite_polling_without_waiting(const struct io_uring_sqe *sqe)
{
	return (sqe->ioprio & IORING_RECVSEND_POLL_FIRST) && (sqe->msg_flags & MSG_DONTWAIT);
}

/* The same for a single-shot receive on a file that cannot poll
 * (io_arm_poll_handler refuses it, and io-wq's attempt is -EAGAIN again),
 * and from io-wq (IOSQE_ASYNC or IOSQE_IO_DRAIN, or the head of a chain the
 * batch leaves open), which arms a poll only for the first two, which
 * io_init_req marks REQ_F_FORCE_ASYNC (io_wq_submit_work's
 * needs_poll): otherwise the first attempt's -EAGAIN, which POLL_FIRST
 * makes before anything is read, is final.  (A multishot one io-wq polls
 * for itself.) */
int rewrite_poll_first_ends_at_once(const struct ring *r, const struct io_uring_sqe *sqe)
{
	if (rewrite_polling_without_waiting(sqe))
		return 1;
	if (!(sqe->ioprio & IORING_RECVSEND_POLL_FIRST))
		return 0;
	if (r->to_wq && !r->forced_async)
		return 1;
	/* A socket always polls: one getsockopt, no probe fd (which would
	 * take a number the program's next open might get natively). */
	return !(sqe->flags & IOSQE_FIXED_FILE) && fd_not_socket(sqe->fd) && rewrite_cannot_poll(sqe->fd);
}

/* A bad plain fd, for requests the kernel cannot be handed without
 * IOSQE_BUFFER_SELECT (a multishot one fails prep without it). */
int rewrite_bad_fd(const struct ring *r, const struct io_uring_sqe *sqe)
{
	return rewrite_bad_file(r, sqe);
}

/* Has a socket data (or an end) for a receive now?  The poll events, 0 if
 * none. */
int fd_readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN | POLLRDHUP };
	return sys_call3(SYS_poll, (long)&p, 1, 0) == 1 && !(p.revents & POLLNVAL) ? p.revents : 0;
}

/* The socket's queued bytes, as msg_inq reports them to io_recv_finish. */
uint32_t rewrite_sock_queued(int fd)
{
	int v = 0;
	if (sys_call3(SYS_ioctl, fd, FIONREAD, (long)&v) || v < 0)
		return 0;
	return (uint32_t)v;
}

/* A RECVMSG whose copy into its entry faults has taken the datagram off
 * the queue (unix_dgram_recvmsg, udp_recvmsg free it); a stream keeps its
 * bytes. */
void rewrite_drop_faulted_datagram(const struct io_uring_sqe *sqe)
{
	if (sqe->flags & IOSQE_FIXED_FILE || (sqe->msg_flags & MSG_PEEK))
		return;
	int type = fd_sock_type(sqe->fd);
	if (type == SOCK_DGRAM || type == SOCK_SEQPACKET)
		sys_call6(SYS_recvfrom, sqe->fd, 0, 0, MSG_DONTWAIT, 0, 0);
}

/*
 * A RECVMSG on an entry the kernel cannot write: its iovec is not checked
 * (io_recvmsg's iov_iter_ubuf), so it faults only if there are bytes to
 * copy; an end of file or an empty datagram completes as on any entry,
 * which bind_buffer hands on as an empty iovec.  -EFAULT or 0.
 */
int rewrite_msghdr_entry_unreachable(const struct io_uring_sqe *sqe)
{
	if ((sqe->flags & IOSQE_FIXED_FILE) || rewrite_sock_queued(sqe->fd)) {
		rewrite_drop_faulted_datagram(sqe);
		return -EFAULT;
	}
	return 0;
}

/* A file open for writing only: a READ fails on it with -EBADF
 * (io_rw_init_file). */
int rewrite_write_only(int fd)
{
	long fl = sys_call3(SYS_fcntl, fd, F_GETFL, 0);
	return fl >= 0 && (fl & O_ACCMODE) == O_WRONLY;
}

int fd_is_pipe(int fd)
{
	struct stat st;
	return !sys_call3(SYS_fstat, fd, (long)&st, 0) && S_ISFIFO(st.st_mode);
}
