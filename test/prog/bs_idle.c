/*
 * The point of deferred buffer binding: 10,000 RECVs with buffer select wait
 * on idle AF_UNIX stream sockets, sharing one group of 16 buffers, and hold
 * none of them. While they wait, 16 READs with buffer select on a pipe take
 * all 16 buffers (bids 0..15, a 17th gets -ENOBUFS), which are then provided
 * again. Then 32 of the sockets get data: exactly 16 receives complete with
 * data (one buffer each, the 16 bids) and 16 with -ENOBUFS, and the rest stay
 * pending until an ASYNC_CANCEL with ANY | ALL ends them.
 *
 * The far ends of the socket pairs live in a child process (handed over with
 * SCM_RIGHTS), so that neither process needs more than about 10,000
 * descriptors; RLIMIT_NOFILE is raised toward that, within the hard limit.
 * If the hard limit is lower, fewer sockets are used; nothing printed depends
 * on how many. Which 16 of the 32 receives get a buffer is up to the order of
 * wakeups, so only the counts, the sorted bids and a payload check are
 * printed.
 */
#include "test/prog/bs_bufs.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

#define WANT 10000
#define NBUF 16
#define HOT 32
#define BATCH 200 /* descriptors per SCM_RIGHTS message */

static struct io_uring ring;

/* Blocks on the control socket: one command byte, optionally with descriptors. */
static char ctl_recv(int ctl, int *fds, int *nfds)
{
	char cmd = 0;
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(BATCH * sizeof(int))];
	} c;
	struct iovec iov = { &cmd, 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.b, .msg_controllen = sizeof(c.b) };
	ssize_t n;
	do
		n = recvmsg(ctl, &m, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return 0;
	*nfds = 0;
	for (struct cmsghdr *h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h))
		if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS) {
			int k = (int)((h->cmsg_len - CMSG_LEN(0)) / sizeof(int));
			memcpy(fds + *nfds, CMSG_DATA(h), (size_t)k * sizeof(int));
			*nfds += k;
		}
	return cmd;
}

static void ctl_send(int ctl, char cmd, const int *fds, int nfds)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(BATCH * sizeof(int))];
	} c;
	struct iovec iov = { &cmd, 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	if (nfds > 0) {
		m.msg_control = c.b;
		m.msg_controllen = CMSG_SPACE((size_t)nfds * sizeof(int));
		struct cmsghdr *h = CMSG_FIRSTHDR(&m);
		h->cmsg_level = SOL_SOCKET;
		h->cmsg_type = SCM_RIGHTS;
		h->cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
		memcpy(CMSG_DATA(h), fds, (size_t)nfds * sizeof(int));
	}
	if (sendmsg(ctl, &m, MSG_NOSIGNAL) != 1)
		die("control sendmsg: %s", strerror(errno));
}

/*
 * The child keeps the far ends: 'f' adds descriptors, 's' sends one payload
 * on each of the first HOT, 'x' (or the parent going away) ends it. Every
 * command is acknowledged with 'k' so the parent knows it took effect.
 */
static void child(int ctl, int max)
{
	int *far = malloc((size_t)max * sizeof(int));
	int nfar = 0, got[BATCH];
	if (!far)
		_exit(2);
	for (;;) {
		int n = 0;
		char cmd = ctl_recv(ctl, got, &n);
		if (cmd == 'f') {
			if (nfar + n > max)
				_exit(3);
			memcpy(far + nfar, got, (size_t)n * sizeof(int));
			nfar += n;
		} else if (cmd == 's') {
			for (int i = 0; i < HOT && i < nfar; i++) {
				char msg[16];
				snprintf(msg, sizeof(msg), "m%05d", i);
				if (send(far[i], msg, 6, MSG_NOSIGNAL) != 6)
					_exit(4);
			}
		} else {
			free(far);
			_exit(0);
		}
		ctl_send(ctl, 'k', NULL, 0);
	}
}

static void expect_ack(int ctl)
{
	int n;
	if (ctl_recv(ctl, NULL, &n) != 'k')
		die("the child did not acknowledge");
}

static void reap_timed(struct io_uring_cqe *out)
{
	struct io_uring_cqe *cqe;
	struct __kernel_timespec ts = { .tv_sec = 5 };
	int ret = io_uring_wait_cqe_timeout(&ring, &cqe, &ts);
	if (ret < 0)
		die("wait_cqe: %s", strerror(-ret));
	*out = *cqe;
	io_uring_cqe_seen(&ring, cqe);
}

static int cmp_uint(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
	return x < y ? -1 : x > y;
}

int main(void)
{
	/* Room for the sockets, the batch in flight, the ring and stdio. */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		die("getrlimit: %s", strerror(errno));
	rlim_t need = WANT + BATCH + 64;
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need)
		need = rl.rlim_max;
	if (rl.rlim_cur < need) {
		rl.rlim_cur = need;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
			die("setrlimit: %s", strerror(errno));
	}
	int n = (int)need - BATCH - 64 < WANT ? (int)need - BATCH - 64 : WANT;
	n -= n % BATCH;
	if (n < 4 * HOT)
		die("RLIMIT_NOFILE hard limit %llu is too low", (unsigned long long)rl.rlim_max);

	int ctlp[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ctlp) < 0)
		die("socketpair: %s", strerror(errno));
	pid_t pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		close(ctlp[0]);
		child(ctlp[1], n);
	}
	close(ctlp[1]);
	int ctl = ctlp[0];

	int *near = malloc((size_t)n * sizeof(int));
	if (!near)
		die("out of memory");
	for (int i = 0; i < n; i += BATCH) {
		int far[BATCH];
		for (int k = 0; k < BATCH; k++) {
			int sv[2];
			if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
				die("socketpair %d: %s", i + k, strerror(errno));
			near[i + k] = sv[0];
			far[k] = sv[1];
		}
		ctl_send(ctl, 'f', far, BATCH);
		expect_ack(ctl);
		for (int k = 0; k < BATCH; k++)
			close(far[k]);
	}
	note("socket pairs ready, far ends in the child");

	struct io_uring_params p = { .flags = IORING_SETUP_CQSIZE, .cq_entries = 2 * WANT };
	int ret = io_uring_queue_init_params(1024, &ring, &p);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	struct arena g = arena_new(64, NBUF);
	provide(&ring, &g, 1, 0, NBUF, 1);

	for (int i = 0; i < n; i++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
		if (!sqe) {
			if (io_uring_submit(&ring) < 0)
				die("submit failed");
			sqe = get_sqe(&ring);
		}
		io_uring_prep_recv(sqe, near[i], NULL, 0, 0);
		sqe->flags |= IOSQE_BUFFER_SELECT;
		sqe->buf_group = 1;
		sqe->user_data = 1000 + (unsigned long long)i;
	}
	ret = io_uring_submit(&ring);
	if (ret < 0)
		die("submit: %s", strerror(-ret));
	note("every RECV submitted");
	expect_pending(&ring, "RECVs on idle sockets");

	note("while they wait, READs on a pipe take all %d buffers", NBUF);
	int pp[2];
	if (pipe(pp) < 0)
		die("pipe: %s", strerror(errno));
	write_all(pp[1], "0123456789abcdefX", NBUF + 1);
	for (int i = 0; i <= NBUF; i++)
		run_one(&ring, prep_read_sel(&ring, pp[0], 1, 1, 0, 0), 100 + (unsigned)i, &g);
	note("and give them back");
	provide(&ring, &g, 1, 0, NBUF, 2);
	expect_pending(&ring, "RECVs on idle sockets");

	note("data for %d sockets", HOT);
	ctl_send(ctl, 's', NULL, 0);
	expect_ack(ctl);
	unsigned bids[HOT], nbids = 0, nobufs = 0, well_formed = 1;
	unsigned long seen = 0;
	for (int i = 0; i < HOT; i++) {
		struct io_uring_cqe c;
		reap_timed(&c);
		long idx = (long)c.user_data - 1000;
		if (idx < 0 || idx >= HOT)
			die("completion for socket %ld, which got no data (res %d)", idx, c.res);
		if (c.res == -ENOBUFS && !(c.flags & IORING_CQE_F_BUFFER)) {
			nobufs++;
			continue;
		}
		if (c.res != 6 || !(c.flags & IORING_CQE_F_BUFFER))
			die("socket %ld: res %d flags 0x%x", idx, c.res, c.flags);
		char want[16];
		snprintf(want, sizeof(want), "m%05ld", idx);
		well_formed &= !memcmp(arena_buf(&g, cqe_bid(&c)), want, 6);
		bids[nbids++] = cqe_bid(&c);
		seen |= 1UL << cqe_bid(&c);
	}
	note("%u completed with data, %u with -ENOBUFS", nbids, nobufs);
	qsort(bids, nbids, sizeof(bids[0]), cmp_uint);
	char list[256];
	size_t k = 0;
	for (unsigned i = 0; i < nbids; i++)
		k += (size_t)snprintf(list + k, sizeof(list) - k, "%s%u", i ? " " : "", bids[i]);
	note("bids: %s", list);
	note("each bid once: %s", yesno(nbids == NBUF && seen == (1UL << NBUF) - 1));
	note("each payload in its own socket's buffer: %s", yesno(well_formed));
	expect_pending(&ring, "the other RECVs");

	note("cancel the rest");
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_cancel64(sqe, 0, IORING_ASYNC_CANCEL_ANY | IORING_ASYNC_CANCEL_ALL);
	sqe->user_data = 3;
	submit_expect(&ring, 1);
	int cancelled = 0, cancel_res = 0, others = 0;
	for (int i = 0; i < n - HOT + 1; i++) {
		struct io_uring_cqe c;
		reap_timed(&c);
		if (c.user_data == 3)
			cancel_res = c.res;
		else if (c.res == -ECANCELED && !(c.flags & IORING_CQE_F_BUFFER) &&
			 c.user_data >= 1000 + HOT && c.user_data < 1000 + (unsigned long long)n)
			cancelled++;
		else
			others++;
	}
	note("cancel res is the number pending: %s", yesno(cancel_res == n - HOT));
	note("each pending RECV ended -ECANCELED without a buffer: %s", yesno(cancelled == n - HOT && !others));
	note("every buffer went to a receive; REMOVE finds none");
	remove_bufs(&ring, 1, 65536, 4);

	ctl_send(ctl, 'x', NULL, 0);
	int status;
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		die("child failed (status 0x%x)", status);
	for (int i = 0; i < n; i++)
		close(near[i]);
	free(near);
	io_uring_queue_exit(&ring);
	return 0;
}
