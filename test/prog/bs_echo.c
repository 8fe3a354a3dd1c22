/*
 * An echo server in the classic provided-buffer style, driven hard: the
 * server (this process) accepts 1,000 connections on 127.0.0.1 with ACCEPT,
 * receives with RECV + IOSQE_BUFFER_SELECT from one group of 256 buffers of
 * 2 KiB, SENDs the bytes straight from the selected buffer, and PROVIDEs that
 * buffer again once the SEND has completed; a RECV that finds the group empty
 * (-ENOBUFS) waits for the next PROVIDE and is issued again. One request is
 * in flight per connection at a time (RECV, then SEND, then RECV), so echoed
 * bytes keep their order.
 *
 * A forked client with plain non-blocking sockets and epoll opens the 1,000
 * connections and sends each 2 to 6 messages of 1 to 6,000 pseudo-random
 * bytes (a fixed function of connection, message and offset), checks every
 * byte echoed back before sending the next message, then shuts down its side
 * and waits for the server's close. The server prints only totals, which are
 * fixed by the workload: how the bytes were cut into receives, which buffer
 * served which, and how often the group ran dry depend on timing.
 *
 * Built with ECHO_RING (bs_ring_echo.c), the same server keeps its buffers
 * in a buffer ring of 256 entries instead: a buffer goes back by a write to
 * the ring and a move of its tail, and a receive that met -ENOBUFS is
 * issued again at once.
 */
#include "test/prog/bs_bufs.h"

#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>

#define NCONN 1000
#define NBUFS 256
#define BUFLEN 2048
#define MAXMSG 6000
#define BGID 7

static unsigned nmsgs(unsigned conn)
{
	return 2 + conn % 5;
}

static unsigned msg_len(unsigned conn, unsigned m)
{
	uint32_t x = conn * 2654435761u ^ (m + 1) * 40503u;
	x ^= x >> 13;
	x *= 0x5bd1e995u;
	x ^= x >> 15;
	return 1 + x % MAXMSG;
}

static unsigned char msg_byte(unsigned conn, unsigned m, unsigned off)
{
	uint32_t x = (conn * 131u + m * 31u + off * 7u) ^ (off >> 8) * 2246822519u;
	return (unsigned char)(x ^ x >> 11);
}

/* ---- client ---------------------------------------------------------------- */

struct cconn {
	int fd;
	unsigned msg, len, sent, got;
	bool closing;
};

struct totals {
	unsigned long messages, bytes, bad, conns;
};

static void client(const struct sockaddr_in *sa, int report)
{
	static struct cconn c[NCONN];
	struct totals t = { 0 };
	int ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0)
		die("epoll_create1: %s", strerror(errno));
	for (unsigned i = 0; i < NCONN; i++) {
		c[i].fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (c[i].fd < 0 || connect(c[i].fd, (const struct sockaddr *)sa, sizeof(*sa)) < 0)
			die("client connect %u: %s", i, strerror(errno));
		if (fcntl(c[i].fd, F_SETFL, O_NONBLOCK) < 0)
			die("fcntl: %s", strerror(errno));
		c[i].len = msg_len(i, 0);
		struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT, .data.u32 = i };
		if (epoll_ctl(ep, EPOLL_CTL_ADD, c[i].fd, &ev) < 0)
			die("epoll_ctl: %s", strerror(errno));
	}
	unsigned open_conns = NCONN;
	static struct epoll_event evs[256];
	unsigned char buf[8192];
	while (open_conns > 0) {
		int n = epoll_wait(ep, evs, 256, 10000);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			die("client: no progress for 10 s (%u connections open)", open_conns);
		for (int e = 0; e < n; e++) {
			unsigned i = evs[e].data.u32;
			struct cconn *k = &c[i];
			if (!k->closing && k->sent < k->len && (evs[e].events & EPOLLOUT)) {
				unsigned char out[MAXMSG];
				unsigned todo = k->len - k->sent;
				for (unsigned j = 0; j < todo; j++)
					out[j] = msg_byte(i, k->msg, k->sent + j);
				ssize_t w = send(k->fd, out, todo, MSG_NOSIGNAL);
				if (w < 0 && errno != EAGAIN)
					die("client send: %s", strerror(errno));
				if (w > 0)
					k->sent += (unsigned)w;
			}
			if (!(evs[e].events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
				goto interest;
			ssize_t r = recv(k->fd, buf, sizeof(buf), 0);
			if (r < 0 && errno == EAGAIN)
				goto interest;
			if (r < 0)
				die("client recv: %s", strerror(errno));
			if (r == 0) {
				if (!k->closing)
					die("connection %u closed by the server mid-message", i);
				close(k->fd);
				k->fd = -1;
				open_conns--;
				t.conns++;
				continue;
			}
			for (ssize_t j = 0; j < r; j++) {
				if (k->closing || k->got >= k->sent) {
					t.bad++;
					break;
				}
				if (buf[j] != msg_byte(i, k->msg, k->got))
					t.bad++;
				k->got++;
			}
			if (k->got == k->len) {
				t.messages++;
				t.bytes += k->len;
				if (++k->msg == nmsgs(i)) {
					k->closing = true;
					if (shutdown(k->fd, SHUT_WR) < 0)
						die("client shutdown: %s", strerror(errno));
				} else {
					k->len = msg_len(i, k->msg);
					k->sent = k->got = 0;
				}
			}
interest:;
			struct epoll_event ev = { .events = EPOLLIN, .data.u32 = i };
			if (!k->closing && k->sent < k->len)
				ev.events |= EPOLLOUT;
			if (epoll_ctl(ep, EPOLL_CTL_MOD, k->fd, &ev) < 0)
				die("epoll_ctl: %s", strerror(errno));
		}
	}
	if (write(report, &t, sizeof(t)) != (ssize_t)sizeof(t))
		die("report: %s", strerror(errno));
	exit(0);
}

/* ---- server ---------------------------------------------------------------- */

enum { ACCEPT = 1, RECV, SEND, PROVIDE };

static struct io_uring ring;
static char *bufs;

struct sconn {
	unsigned bid, off, len;
};
static struct sconn *sc; /* by fd */
static int *waitlist, nwait;
static unsigned long inflight;

#ifdef ECHO_RING
static struct io_uring_buf_ring *br;
#endif

static unsigned long long ud(int type, int fd)
{
	return (unsigned long long)type << 56 | (unsigned)fd;
}

static struct io_uring_sqe *sqe_any(void)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
	if (!sqe) {
		int ret = io_uring_submit(&ring);
		if (ret < 0)
			die("submit: %s", strerror(-ret));
		sqe = get_sqe(&ring);
	}
	inflight++;
	return sqe;
}

static void arm_recv(int fd)
{
	struct io_uring_sqe *sqe = sqe_any();
	io_uring_prep_recv(sqe, fd, NULL, BUFLEN, 0);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = BGID;
	sqe->user_data = ud(RECV, fd);
}

static void arm_send(int fd)
{
	struct sconn *k = &sc[fd];
	struct io_uring_sqe *sqe = sqe_any();
	io_uring_prep_send(sqe, fd, bufs + (size_t)k->bid * BUFLEN + k->off, k->len - k->off, MSG_NOSIGNAL);
	sqe->user_data = ud(SEND, fd);
}

static void arm_recv(int fd);

static void arm_provide(unsigned bid)
{
#ifdef ECHO_RING
	io_uring_buf_ring_add(br, bufs + (size_t)bid * BUFLEN, BUFLEN, (unsigned short)bid,
			      io_uring_buf_ring_mask(NBUFS), 0);
	io_uring_buf_ring_advance(br, 1);
	/* One buffer back: one waiting receive may have it. */
	if (nwait > 0)
		arm_recv(waitlist[--nwait]);
	return;
#endif
	struct io_uring_sqe *sqe = sqe_any();
	io_uring_prep_provide_buffers(sqe, bufs + (size_t)bid * BUFLEN, BUFLEN, 1, BGID, (int)bid);
	sqe->user_data = ud(PROVIDE, 0);
}

static void arm_accept(int ls)
{
	struct io_uring_sqe *sqe = sqe_any();
	io_uring_prep_accept(sqe, ls, NULL, NULL, SOCK_CLOEXEC);
	sqe->user_data = ud(ACCEPT, ls);
}

int main(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		die("getrlimit: %s", strerror(errno));
	if (rl.rlim_cur < NCONN + 64) {
		rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > 4096 ? 4096 : rl.rlim_max;
		if (rl.rlim_cur < NCONN + 64 || setrlimit(RLIMIT_NOFILE, &rl) < 0)
			die("RLIMIT_NOFILE: need %d descriptors", NCONN + 64);
	}
	int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET };
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t sl = sizeof(sa);
	if (ls < 0 || bind(ls, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(ls, NCONN + 24) < 0 ||
	    getsockname(ls, (struct sockaddr *)&sa, &sl) < 0)
		die("listen: %s", strerror(errno));
	int rep[2];
	if (pipe2(rep, O_CLOEXEC) < 0)
		die("pipe: %s", strerror(errno));
	pid_t pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		close(ls);
		close(rep[0]);
		client(&sa, rep[1]);
	}
	close(rep[1]);

	struct io_uring_params p = { .flags = IORING_SETUP_CQSIZE, .cq_entries = 8192 };
	int ret = io_uring_queue_init_params(256, &ring, &p);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	bufs = malloc((size_t)NBUFS * BUFLEN);
	sc = calloc((size_t)rl.rlim_cur + 1, sizeof(*sc));
	waitlist = malloc(NCONN * sizeof(int));
	if (!bufs || !sc || !waitlist)
		die("out of memory");
#ifdef ECHO_RING
	br = mmap(NULL, NBUFS * sizeof(struct io_uring_buf), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		  -1, 0);
	if (br == MAP_FAILED)
		die("mmap: %s", strerror(errno));
	io_uring_buf_ring_init(br);
	struct io_uring_buf_reg reg = { .ring_addr = (unsigned long)br, .ring_entries = NBUFS, .bgid = BGID };
	if ((ret = io_uring_register_buf_ring(&ring, &reg, 0)) < 0)
		die("register_buf_ring: %s", strerror(-ret));
	for (unsigned i = 0; i < NBUFS; i++)
		io_uring_buf_ring_add(br, bufs + (size_t)i * BUFLEN, BUFLEN, (unsigned short)i,
				      io_uring_buf_ring_mask(NBUFS), (int)i);
	io_uring_buf_ring_advance(br, NBUFS);
#else
	struct io_uring_sqe *sqe = sqe_any();
	io_uring_prep_provide_buffers(sqe, bufs, BUFLEN, NBUFS, BGID, 0);
	sqe->user_data = ud(PROVIDE, 0);
#endif
	arm_accept(ls);

	unsigned long accepted = 0, closed = 0, bytes = 0, recvs = 0, nobufs = 0;
	while (closed < NCONN || inflight > 0) {
		ret = io_uring_submit_and_wait(&ring, 1);
		if (ret < 0 && ret != -EINTR)
			die("submit_and_wait: %s", strerror(-ret));
		struct io_uring_cqe *cqe;
		unsigned head, seen = 0;
		io_uring_for_each_cqe(&ring, head, cqe) {
			seen++;
			inflight--;
			int type = (int)(cqe->user_data >> 56), fd = (int)(cqe->user_data & 0xffffffff);
			int res = cqe->res;
			switch (type) {
			case ACCEPT:
				if (res < 0)
					die("accept: %s", strerror(-res));
				if ((rlim_t)res > rl.rlim_cur)
					die("accepted fd %d out of range", res);
				accepted++;
				arm_recv(res);
				if (accepted < NCONN)
					arm_accept(ls);
				break;
			case RECV:
				if (res == -ENOBUFS) {
					nobufs++;
					waitlist[nwait++] = fd;
				} else if (res == 0) {
					/* Linux 5.10 consumes a buffer at EOF
					 * (docs/kernel-semantics.md): it goes back. */
					if (cqe->flags & IORING_CQE_F_BUFFER)
						arm_provide(cqe_bid(cqe));
					close(fd);
					closed++;
				} else if (res < 0) {
					die("recv fd %d: %s", fd, strerror(-res));
				} else {
					if (!(cqe->flags & IORING_CQE_F_BUFFER))
						die("recv of %d bytes without a buffer", res);
					sc[fd] = (struct sconn){ .bid = cqe_bid(cqe), .len = (unsigned)res };
					recvs++;
					bytes += (unsigned long)res;
					arm_send(fd);
				}
				break;
			case SEND:
				if (res <= 0)
					die("send fd %d: %d", fd, res);
				sc[fd].off += (unsigned)res;
				if (sc[fd].off < sc[fd].len) {
					arm_send(fd);
				} else {
					arm_provide(sc[fd].bid);
					arm_recv(fd);
				}
				break;
			case PROVIDE:
				/* 0, or before 5.18 the number of buffers added
				 * to a group that had some. */
				if (res < 0)
					die("provide: %d", res);
				/* One buffer back: one waiting receive may have it. */
				if (nwait > 0) {
					arm_recv(waitlist[--nwait]);
				}
				break;
			default:
				die("unknown user_data 0x%llx", (unsigned long long)cqe->user_data);
			}
		}
		io_uring_cq_advance(&ring, seen);
	}

	/* Timing-dependent, so on stderr, which the runner does not compare. */
	fprintf(stderr, "bs_echo: %lu receives with data, %lu -ENOBUFS\n", recvs, nobufs);
	struct totals t;
	if (read(rep[0], &t, sizeof(t)) != (ssize_t)sizeof(t))
		die("no report from the client");
	int status;
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		die("client failed (status 0x%x)", status);
	note("connections %lu accepted, %lu closed at EOF, %lu finished by the client", accepted, closed,
	     t.conns);
	note("messages %lu", t.messages);
	note("bytes echoed %lu, checked by the client %lu", bytes, t.bytes);
	note("all bytes intact: %s", yesno(t.bad == 0 && bytes == t.bytes));
#ifdef ECHO_RING
	note("ring unregistered: %d", io_uring_unregister_buf_ring(&ring, BGID));
#else
	note("buffers back in the group");
	struct io_uring_sqe *rm = get_sqe(&ring);
	io_uring_prep_remove_buffers(rm, 2 * NBUFS, BGID);	/* 5.10 takes at most 65535 */
	run_one(&ring, rm, 1, NULL);
#endif
	close(ls);
	io_uring_queue_exit(&ring);
	free(bufs);
	free(sc);
	free(waitlist);
	return 0;
}
