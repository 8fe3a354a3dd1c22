/*
 * fork and exec while requests are in flight.  The main thread's ring has
 * buffer-select RECVs waiting for data, a buffer-select READ waiting on a
 * pipe (it holds its buffer), a chain held behind a waiting RECV, and a
 * TIMEOUT; meanwhile a second thread runs buffer-select receives on a ring
 * of its own without pause.  The main thread then forks 30 children, one at
 * a time (and more, for as long as the other thread runs), while everything
 * stays in flight:
 *
 *  - some leave at once with _exit, some with exit (destructors and bufsel's
 *    own exit report run in a copy of a process whose other thread may have
 *    been anywhere in bufsel when it forked);
 *  - some set up a ring of their own and run a buffer-select RECV on it;
 *  - one execs this program again ("child"), which runs under bufsel too
 *    and prints its completions while the parent waits.
 *
 * Then the parent sends the data and reaps every completion it is owed:
 * none lost, none twice, all printed by user_data.  The other thread's
 * totals are printed at the end.  A watchdog ends a hang with a diagnosis.
 * argv[1] multiplies the children and the other thread's rounds.  Every
 * receive names its buffer's length: before 6.0 a length of 0 reads nothing.
 */
#include "test/prog/stress.h"

#include <signal.h>
#include <sys/wait.h>

#define CHILDREN 30
#define NBUF 16
#define BUFLEN 64
#define WAITING 4
#define BUSY_ROUNDS 6000

static struct io_uring ring;

/*
 * GCC 12's AddressSanitizer takes none of its allocator's locks around
 * fork: a child can find one held for ever by the thread that held it in
 * the parent, and hang in malloc or in the leak check at exit, bufsel or
 * not.  Under ASan the busy thread therefore holds this lock while it runs a
 * round, and the main thread forks between rounds.
 */
#ifdef __SANITIZE_ADDRESS__
#define FORK_BETWEEN_ROUNDS 1
#else
#define FORK_BETWEEN_ROUNDS 0
#endif
static pthread_mutex_t round_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * LeakSanitizer asks this at exit.  A forked child's leak check sees the
 * parent's other threads, cannot stop them, and reports what they hold: the
 * children leave the check to the parent.  (Unused without ASan.)
 */
static int forked_child;
int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void)
{
	return forked_child;
}

/* PROVIDE_BUFFERS without a line of output: 0 or the error. */
static int provide_quiet(struct io_uring *r, const struct arena *a, unsigned bgid, unsigned nr)
{
	struct io_uring_sqe *sqe = get_sqe(r);
	prep_provide_arena(sqe, a, bgid, 0, nr);
	sqe->user_data = 0;
	struct io_uring_cqe c;
	if (io_uring_submit(r) != 1)
		return -EBUSY;
	reap(r, &c, 1);
	return c.res;
}

/* ---- the busy thread ----------------------------------------------------------- */

static struct {
	struct io_uring ring;
	struct arena bufs;
	int sv[2];
	unsigned long bytes;
	unsigned rounds, total;
	atomic_int done;
} busy;

static void *busy_main(void *arg)
{
	(void)arg;
	int ret = io_uring_queue_init(8, &busy.ring, 0);
	if (ret < 0)
		die("busy: queue_init: %s", strerror(-ret));
	if (provide_quiet(&busy.ring, &busy.bufs, 1, NBUF))
		die("busy: provide failed");
	for (unsigned k = 0; k < busy.total; k++) {
		if (FORK_BETWEEN_ROUNDS)
			pthread_mutex_lock(&round_lock);
		unsigned char msg[BUFLEN];
		unsigned n = 1 + stress_mix(k) % BUFLEN;
		stress_fill(msg, 77, busy.bytes, n);
		if (k % 2)
			write_all(busy.sv[1], msg, n);
		prep_recv_sel(&busy.ring, busy.sv[0], BUFLEN, 0, 1, k + 1);
		submit_expect(&busy.ring, 1);
		if (!(k % 2))
			write_all(busy.sv[1], msg, n);
		struct io_uring_cqe c;
		reap(&busy.ring, &c, 1);
		stress_progress();
		if (c.user_data != k + 1 || c.res != (int)n || !(c.flags & IORING_CQE_F_BUFFER))
			die("busy: round %u: ud %llu res %d flags 0x%x", k, (unsigned long long)c.user_data, c.res,
			    c.flags);
		if (stress_check((unsigned char *)arena_buf(&busy.bufs, cqe_bid(&c)), 77, busy.bytes, n) >= 0)
			die("busy: round %u: wrong bytes", k);
		busy.bytes += n;
		busy.rounds++;
		struct io_uring_sqe *sqe = get_sqe(&busy.ring);
		prep_provide_arena(sqe, &busy.bufs, 1, cqe_bid(&c), 1);
		sqe->user_data = 100000 + k;
		submit_expect(&busy.ring, 1);
		reap(&busy.ring, &c, 1);
		/* 0, or before 5.18 the number of buffers added to a group
		 * that had some. */
		if (c.res < 0)
			die("busy: re-provide returned %d", c.res);
		if (FORK_BETWEEN_ROUNDS)
			pthread_mutex_unlock(&round_lock);
	}
	io_uring_queue_exit(&busy.ring);
	atomic_store(&busy.done, 1);
	return NULL;
}

/* ---- children ------------------------------------------------------------------- */

/* A ring of the child's own, one buffer-select RECV on it: 0 if all is right. */
static int child_ring(unsigned i)
{
	struct io_uring r;
	int sv[2];
	if (io_uring_queue_init(4, &r, 0) < 0 || socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) < 0)
		return 2;
	struct arena a = arena_new(16, 2);
	if (provide_quiet(&r, &a, 3, 2))
		return 3;
	char m[16];
	int n = snprintf(m, sizeof(m), "child-%u", i);
	struct io_uring_sqe *sqe = prep_recv_sel(&r, sv[0], 16, 0, 3, 2);
	(void)sqe;
	if (io_uring_submit(&r) != 1 || send(sv[1], m, (size_t)n, 0) != n)
		return 4;
	struct io_uring_cqe *cqe;
	if (io_uring_wait_cqe(&r, &cqe) != 0 || cqe->res != n || !(cqe->flags & IORING_CQE_F_BUFFER) ||
	    memcmp(arena_buf(&a, cqe_bid(cqe)), m, (size_t)n))
		return 5;
	io_uring_queue_exit(&r);
	return 0;
}

/* This program run again by exec: its own ring, its CQEs printed. */
static int exec_child(void)
{
	struct io_uring r;
	int ret = io_uring_queue_init(4, &r, 0);
	if (ret < 0)
		die("exec'd child: queue_init: %s", strerror(-ret));
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		die("socketpair: %s", strerror(errno));
	struct arena a = arena_new(16, 2);
	provide(&r, &a, 4, 0, 2, 501);
	prep_recv_sel(&r, sv[0], 16, 0, 4, 502);
	submit_expect(&r, 1);
	expect_pending(&r, "exec'd child: RECV");
	if (send(sv[1], "after-exec", 10, 0) != 10)
		die("send: %s", strerror(errno));
	reap_show(&r, 1, &a);
	io_uring_queue_exit(&r);
	return 0;
}

static atomic_int current_child;	/* the child being waited for, for the watchdog */

static void describe(void)
{
	fprintf(stderr, "  busy thread: %u of %u rounds\n", busy.rounds, busy.total);
	pid_t child = atomic_load(&current_child);
	if (child > 0) {
		fprintf(stderr, "  waiting for child %d, which is killed now\n", (int)child);
		kill(child, SIGKILL);
	}
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "child"))
		return exec_child();
	unsigned scale = stress_scale(argc, argv);
	busy.total = BUSY_ROUNDS * scale;

	int ret = io_uring_queue_init(16, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	stress_watchdog_start(10, describe);
	busy.bufs = arena_new(BUFLEN, NBUF);
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, busy.sv) < 0)
		die("socketpair: %s", strerror(errno));
	pthread_t bt;
	if (pthread_create(&bt, NULL, busy_main, NULL) != 0)
		die("pthread_create");

	struct arena a = arena_new(BUFLEN, NBUF);
	provide(&ring, &a, 1, 0, NBUF, 1);
	int sv[WAITING][2], pip[2], cv[2];
	for (unsigned i = 0; i < WAITING; i++)
		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv[i]) < 0)
			die("socketpair: %s", strerror(errno));
	if (pipe2(pip, O_CLOEXEC) < 0 || socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, cv) < 0)
		die("pipe: %s", strerror(errno));
	note("in flight: %u RECVs, a READ, a RECV with a NOP linked behind it, a TIMEOUT", WAITING);
	for (unsigned i = 0; i < WAITING; i++)
		prep_recv_sel(&ring, sv[i][0], BUFLEN, 0, 1, 10 + i);
	prep_read_sel(&ring, pip[0], BUFLEN, 1, 0, 20);
	struct io_uring_sqe *sqe = prep_recv_sel(&ring, cv[0], BUFLEN, 0, 1, 30);
	sqe->flags |= IOSQE_IO_LINK;
	sqe = get_sqe(&ring);
	io_uring_prep_nop(sqe);
	sqe->user_data = 31;
	struct __kernel_timespec ts = { .tv_sec = 30 };
	sqe = get_sqe(&ring);
	io_uring_prep_timeout(sqe, &ts, 0, 0);
	sqe->user_data = 40;
	submit_expect(&ring, WAITING + 4);
	expect_no_cqe(&ring, "before the forks");

	/* At least CHILDREN, and as long as the busy thread runs. */
	unsigned forked = 0;
	for (unsigned i = 0; i < CHILDREN * scale || !atomic_load(&busy.done); i++) {
		fflush(stdout);
		if (FORK_BETWEEN_ROUNDS)
			pthread_mutex_lock(&round_lock);
		pid_t pid = fork();
		if (pid > 0 && FORK_BETWEEN_ROUNDS)
			pthread_mutex_unlock(&round_lock);
		if (pid < 0)
			die("fork: %s", strerror(errno));
		if (pid == 0) {
			forked_child = 1;
			switch (i % 4) {
			case 0:
				_exit(0);
			case 1:
				exit(0);
			case 2:
				_exit(child_ring(i));
			default:
				exit(child_ring(i));
			}
		}
		atomic_store(&current_child, pid);
		int status;
		if (waitpid(pid, &status, 0) != pid)
			die("waitpid: %s", strerror(errno));
		if (!WIFEXITED(status))
			die("child %u killed by signal %d", i, WTERMSIG(status));
		if (WEXITSTATUS(status))
			die("child %u exited %d", i, WEXITSTATUS(status));
		forked++;
		stress_progress();
	}
	fprintf(stderr, "%u children forked\n", forked);
	note("at least %u children, forked while the busy thread ran: every one exited 0", CHILDREN * scale);

	note("an exec'd child while the requests are still in flight:");
	pid_t pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	atomic_store(&current_child, pid);
	if (pid == 0) {
		char *args[] = { argv[0], "child", NULL };
		execv("/proc/self/exe", args);
		die("execv: %s", strerror(errno));
	}
	int status;
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		die("exec'd child failed");
	note("exec'd child exited %d", WEXITSTATUS(status));
	expect_no_cqe(&ring, "after the children");

	note("the data comes; every request completes");
	for (unsigned i = 0; i < WAITING; i++) {
		char m[16];
		int n = snprintf(m, sizeof(m), "waited-%u", i);
		if (send(sv[i][1], m, (size_t)n, 0) != n)
			die("send: %s", strerror(errno));
	}
	write_all(pip[1], "pipe-data", 9);
	if (send(cv[1], "chain", 5, 0) != 5)
		die("send: %s", strerror(errno));
	struct io_uring_cqe c[WAITING + 3];
	reap(&ring, c, WAITING + 3);
	qsort(c, WAITING + 3, sizeof(c[0]), cqe_cmp_full);
	for (unsigned i = 0; i < WAITING + 3; i++) {
		stress_progress();
		show(&c[i], &a);
	}
	sqe = get_sqe(&ring);
	io_uring_prep_timeout_remove(sqe, 40, 0);
	sqe->user_data = 41;
	submit_expect(&ring, 1);
	reap_print_sorted(&ring, 2);
	expect_no_cqe(&ring, "at the end");

	pthread_join(bt, NULL);
	stress_watchdog_stop();
	note("scale %u: busy thread: %u rounds, %lu bytes, every byte checked", scale, busy.rounds, busy.bytes);
	io_uring_queue_exit(&ring);
	return 0;
}
