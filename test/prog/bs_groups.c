/*
 * Many groups side by side, and the edges of IOSQE_BUFFER_SELECT:
 *  - 64 legacy groups, bgids spread over 0..65535, each with its own buffer
 *    size and count; READs on a pipe and RECVs on a socketpair select from
 *    them in round-robin order until each group gives -ENOBUFS: every
 *    selection takes its own group's next bid and length;
 *  - IOSQE_FIXED_FILE with buffer select: READ and RECV on registered files,
 *    a pending fixed-file RECV holding no buffer, a pending READ holding one;
 *  - a ring-mapped group (IORING_REGISTER_PBUF_RING) used beside legacy
 *    groups, with its own CQEs; PROVIDE and REMOVE on it are -EINVAL;
 *    registering a ring over a legacy group that has buffers is -EEXIST, over
 *    one that was emptied is 0 (the ring replaces it), and after unregistering
 *    the id is free again;
 *  - IORING_REGISTER_PROBE: whether PROVIDE_BUFFERS and REMOVE_BUFFERS are
 *    flagged IO_URING_OP_SUPPORTED;
 *  - every other opcode with IOSQE_BUFFER_SELECT, and the ones Linux 6.18
 *    accepts it on besides the receive family (SEND, READ_MULTISHOT,
 *    URING_CMD), with their results.
 * Every request is submitted and reaped alone, so CQEs print as reaped.
 */
#include "test/prog/bs_bufs.h"

#include <sys/uio.h>

#define NGROUPS 64

static struct io_uring ring;

/* Opcodes newer than the installed headers, numbered as in Linux 6.18. */
enum {
	OP_READ_MULTISHOT = 49,
	OP_LAST_618 = 63,
};

static const char *const op_names[OP_LAST_618] = {
	"NOP", "READV", "WRITEV", "FSYNC", "READ_FIXED", "WRITE_FIXED", "POLL_ADD", "POLL_REMOVE",
	"SYNC_FILE_RANGE", "SENDMSG", "RECVMSG", "TIMEOUT", "TIMEOUT_REMOVE", "ACCEPT",
	"ASYNC_CANCEL", "LINK_TIMEOUT", "CONNECT", "FALLOCATE", "OPENAT", "CLOSE", "FILES_UPDATE",
	"STATX", "READ", "WRITE", "FADVISE", "MADVISE", "SEND", "RECV", "OPENAT2", "EPOLL_CTL",
	"SPLICE", "PROVIDE_BUFFERS", "REMOVE_BUFFERS", "TEE", "SHUTDOWN", "RENAMEAT", "UNLINKAT",
	"MKDIRAT", "SYMLINKAT", "LINKAT", "MSG_RING", "FSETXATTR", "SETXATTR", "FGETXATTR",
	"GETXATTR", "SOCKET", "URING_CMD", "SEND_ZC", "SENDMSG_ZC", "READ_MULTISHOT", "WAITID",
	"FUTEX_WAIT", "FUTEX_WAKE", "FUTEX_WAITV", "FIXED_FD_INSTALL", "FTRUNCATE", "BIND",
	"LISTEN", "RECV_ZC", "EPOLL_WAIT", "READV_FIXED", "WRITEV_FIXED", "PIPE",
};

/* Deterministic bytes for group g's k-th selection. */
static void fill(char *buf, unsigned n, unsigned g, unsigned k)
{
	for (unsigned i = 0; i < n; i++)
		buf[i] = (char)('a' + (g * 7 + k * 3 + i) % 26);
}

static void many_groups(int pr, int pw, int sr, int sw)
{
	static struct arena ga[NGROUPS];
	unsigned bgid[NGROUPS], count[NGROUPS];
	note("%d groups", NGROUPS);
	for (unsigned g = 0; g < NGROUPS; g++) {
		bgid[g] = g * 1021;
		count[g] = 1 + g % 4;
		ga[g] = arena_new(8 + g, count[g]);
		provide(&ring, &ga[g], bgid[g], 0, count[g], 100 + g);
	}
	/*
	 * Round k: every group that still has buffers gives one to a READ (k even)
	 * or a RECV (k odd) of exactly its buffer size; a group whose buffers are
	 * all taken answers -ENOBUFS once, with no data written for it.
	 */
	char data[128];
	for (unsigned k = 0; k <= 4; k++) {
		for (unsigned g = 0; g < NGROUPS; g++) {
			if (k > count[g])
				continue;
			unsigned len = ga[g].len;
			bool is_read = k % 2 == 0;
			if (k < count[g]) {
				fill(data, len, g, k);
				write_all(is_read ? pw : sw, data, len);
			}
			struct io_uring_sqe *sqe = is_read ? prep_read_sel(&ring, pr, 0, bgid[g], 0, 0)
							   : prep_recv_sel(&ring, sr, 0, 0, bgid[g], 0);
			note("group %u (len %u, %u buffers): %s", bgid[g], len, count[g], is_read ? "READ" : "RECV");
			if (!is_read && k < count[g])
				wait_queued(sr, (int)len);
			run_one(&ring, sqe, 1000 + g * 10 + k, &ga[g]);
		}
	}
}

static void fixed_files(int pr, int pw, int sr, int sw)
{
	note("fixed files: 0 = pipe read end, 1 = socket");
	int files[2] = { pr, sr };
	int ret = io_uring_register_files(&ring, files, 2);
	if (ret < 0)
		die("register_files: %s", strerror(-ret));
	struct arena f = arena_new(16, 1);
	provide(&ring, &f, 70, 0, 1, 2000);
	write_all(pw, "fixed-read", 10);
	struct io_uring_sqe *sqe = prep_read_sel(&ring, 0, 0, 70, 0, 0);
	sqe->flags |= IOSQE_FIXED_FILE;
	run_one(&ring, sqe, 2001, &f);
	note("pending RECV on fixed file 1 holds no buffer");
	provide(&ring, &f, 70, 0, 1, 2002);
	prep_recv_sel(&ring, 1, 0, 0, 70, 2003)->flags |= IOSQE_FIXED_FILE;
	submit_expect(&ring, 1);
	expect_pending(&ring, "fixed-file RECV");
	write_all(pw, "meanwhile", 9);
	sqe = prep_read_sel(&ring, 0, 0, 70, 0, 0);
	sqe->flags |= IOSQE_FIXED_FILE;
	run_one(&ring, sqe, 2004, &f);
	provide(&ring, &f, 70, 0, 1, 2005);
	write_all(sw, "fixed-recv", 10);
	reap_show(&ring, 1, &f);
	note("pending READ on fixed file 0 holds the only buffer");
	provide(&ring, &f, 70, 0, 1, 2006);
	prep_read_sel(&ring, 0, 0, 70, 0, 2007)->flags |= IOSQE_FIXED_FILE;
	submit_expect(&ring, 1);
	expect_pending(&ring, "fixed-file READ");
	write_all(sw, "no-buffer", 9);
	wait_queued(sr, 9);
	sqe = prep_recv_sel(&ring, 1, 0, 0, 70, 0);
	sqe->flags |= IOSQE_FIXED_FILE;
	run_one(&ring, sqe, 2008, &f);
	write_all(pw, "late", 4);
	reap_show(&ring, 1, &f);
	char junk[16];
	if (recv(sr, junk, sizeof(junk), 0) != 9)
		die("recv: %s", strerror(errno));
	ret = io_uring_unregister_files(&ring);
	if (ret < 0)
		die("unregister_files: %s", strerror(-ret));
}

static struct io_uring_buf_ring *new_buf_ring(unsigned bgid, unsigned entries, int *ret)
{
	struct io_uring_buf_ring *br;
	if (posix_memalign((void **)&br, 4096, 4096))
		die("posix_memalign failed");
	memset(br, 0, 4096);
	struct io_uring_buf_reg reg = { .ring_addr = (unsigned long)br, .ring_entries = entries, .bgid = (__u16)bgid };
	*ret = io_uring_register_buf_ring(&ring, &reg, 0);
	return br;
}

static void ring_mapped(int pr, int pw, int sr, int sw)
{
	note("ring-mapped group 500 beside legacy group 501");
	int ret;
	struct io_uring_buf_ring *br = new_buf_ring(500, 8, &ret);
	note("register buffer ring 500: %d", ret);
	struct arena rb = arena_new(32, 8), lg = arena_new(16, 4);
	io_uring_buf_ring_init(br);
	for (unsigned i = 0; i < 8; i++)
		io_uring_buf_ring_add(br, arena_buf(&rb, i), rb.len, (unsigned short)i,
				      io_uring_buf_ring_mask(8), (int)i);
	io_uring_buf_ring_advance(br, 8);
	provide(&ring, &lg, 501, 0, 4, 3000);
	write_all(pw, "ring-read", 9);
	run_one(&ring, prep_read_sel(&ring, pr, 0, 500, 0, 0), 3001, &rb);
	write_all(pw, "legacy-read", 11);
	run_one(&ring, prep_read_sel(&ring, pr, 0, 501, 0, 0), 3002, &lg);
	write_all(sw, "ring-recv", 9);
	wait_queued(sr, 9);
	run_one(&ring, prep_recv_sel(&ring, sr, 0, 0, 500, 0), 3003, &rb);
	note("a pending RECV on the ring group, then data");
	prep_recv_sel(&ring, sr, 0, 0, 500, 3004);
	submit_expect(&ring, 1);
	expect_pending(&ring, "RECV on the ring group");
	write_all(sw, "ring-late", 9);
	reap_show(&ring, 1, &rb);
	note("PROVIDE and REMOVE on the ring group");
	provide(&ring, &lg, 500, 0, 1, 3005);
	remove_bufs(&ring, 500, 1, 3006);
	note("legacy group 501 is untouched");
	write_all(pw, "legacy-again", 12);
	run_one(&ring, prep_read_sel(&ring, pr, 0, 501, 0, 0), 3007, &lg);
	note("unregister 500: %d", io_uring_unregister_buf_ring(&ring, 500));
	free(br);
	note("after unregistering, the id is free: REMOVE, then PROVIDE");
	remove_bufs(&ring, 500, 1, 3008);
	provide(&ring, &lg, 500, 3, 1, 3009);
	remove_bufs(&ring, 500, 1, 3010);

	note("register a buffer ring over legacy group 501, which has buffers");
	struct io_uring_buf_ring *br2 = new_buf_ring(501, 8, &ret);
	note("register: %d", ret);
	note("empty group 501, then register again");
	remove_bufs(&ring, 501, 65536, 3011);
	free(br2);
	br2 = new_buf_ring(501, 8, &ret);
	note("register: %d", ret);
	io_uring_buf_ring_init(br2);
	io_uring_buf_ring_add(br2, arena_buf(&rb, 7), rb.len, 7, io_uring_buf_ring_mask(8), 0);
	io_uring_buf_ring_advance(br2, 1);
	note("group 501 is now ring-mapped: PROVIDE, then a READ from its ring");
	provide(&ring, &lg, 501, 0, 1, 3012);
	write_all(pw, "replaced", 8);
	run_one(&ring, prep_read_sel(&ring, pr, 0, 501, 0, 0), 3013, &rb);
	note("unregister 501: %d", io_uring_unregister_buf_ring(&ring, 501));
	free(br2);
}

static void probe(void)
{
	struct io_uring_probe *p = io_uring_get_probe_ring(&ring);
	if (!p)
		die("get_probe_ring failed");
	note("probe: PROVIDE_BUFFERS supported=%s, REMOVE_BUFFERS supported=%s",
	     yesno(io_uring_opcode_supported(p, IORING_OP_PROVIDE_BUFFERS)),
	     yesno(io_uring_opcode_supported(p, IORING_OP_REMOVE_BUFFERS)));
	io_uring_free_probe(p);
}

/*
 * Every opcode Linux 6.18 knows, except the four receive opcodes, with
 * IOSQE_BUFFER_SELECT and otherwise zero fields but fd: the flag is checked
 * before anything else, so none of them runs. The fd is a spare /dev/null,
 * so that even an opcode that did run could harm nothing else.
 */
static void other_opcodes(int pr, int pw, int sr, int sw)
{
	int spare = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (spare < 0)
		die("open /dev/null: %s", strerror(errno));
	struct arena o = arena_new(16, 8);
	provide(&ring, &o, 80, 0, 8, 4000);
	for (unsigned op = 0; op < OP_LAST_618; op++) {
		if (op == IORING_OP_READV || op == IORING_OP_RECVMSG || op == IORING_OP_READ ||
		    op == IORING_OP_RECV || op == IORING_OP_SEND || op == OP_READ_MULTISHOT ||
		    op == IORING_OP_URING_CMD)
			continue;
		struct io_uring_sqe *sqe = get_sqe(&ring);
		memset(sqe, 0, sizeof(*sqe));
		sqe->opcode = (__u8)op;
		sqe->fd = spare;
		sqe->flags = IOSQE_BUFFER_SELECT;
		sqe->buf_group = 80;
		note("opcode %u %s with IOSQE_BUFFER_SELECT", op, op_names[op]);
		run_one(&ring, sqe, 4100 + op, &o);
	}
	note("group 80 is untouched");
	remove_bufs(&ring, 80, 65536, 4001);

	note("SEND with IOSQE_BUFFER_SELECT sends a buffer from the group");
	provide(&ring, &o, 81, 0, 2, 4002);
	memcpy(arena_buf(&o, 0), "buffer-0-content", 16);
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_send(sqe, sw, NULL, 0, 0);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = 81;
	run_one(&ring, sqe, 4003, &o);
	char got[32];
	ssize_t n = recv(sr, got, sizeof(got), MSG_DONTWAIT);
	note("the peer received %zd bytes: \"%.*s\"", n, n > 0 ? (int)n : 0, got);
	remove_bufs(&ring, 81, 65536, 4004);

	note("READ_MULTISHOT on a pipe with a legacy group, data queued");
	provide(&ring, &o, 82, 0, 2, 4005);
	write_all(pw, "multishot", 9);
	sqe = get_sqe(&ring);
	io_uring_prep_read(sqe, pr, NULL, 0, 0);
	sqe->opcode = OP_READ_MULTISHOT;
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = 82;
	if (!(run_one(&ring, sqe, 4006, &o) < 0)) {
		/* Still armed: end it, and print what ending it posts. */
		sqe = get_sqe(&ring);
		io_uring_prep_cancel64(sqe, 4006, 0);
		sqe->user_data = 4011;
		submit_expect(&ring, 1);
		reap_show_sorted(&ring, 2, &o);
	}
	remove_bufs(&ring, 82, 65536, 4007);

	note("URING_CMD with IOSQE_BUFFER_SELECT on /dev/null");
	provide(&ring, &o, 83, 0, 2, 4008);
	sqe = get_sqe(&ring);
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = spare;
	sqe->flags = IOSQE_BUFFER_SELECT;
	sqe->buf_group = 83;
	run_one(&ring, sqe, 4009, &o);
	remove_bufs(&ring, 83, 65536, 4010);
	close(spare);
}

int main(void)
{
	int ret = io_uring_queue_init(16, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	int p[2], sv[2];
	if (pipe(p) < 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		die("pipe/socketpair: %s", strerror(errno));

	many_groups(p[0], p[1], sv[0], sv[1]);
	fixed_files(p[0], p[1], sv[0], sv[1]);
	ring_mapped(p[0], p[1], sv[0], sv[1]);
	probe();
	other_opcodes(p[0], p[1], sv[0], sv[1]);

	close(p[0]);
	close(p[1]);
	close(sv[0]);
	close(sv[1]);
	io_uring_queue_exit(&ring);
	return 0;
}
