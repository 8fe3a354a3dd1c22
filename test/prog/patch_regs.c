/*
 * Every register a system call preserves, across io_uring calls made inline
 * the way liburing makes them (`mov $nr,%eax; syscall` in the program's own
 * code).  A syscall changes rax (the result), rcx and r11 and nothing else:
 * not the other general registers, not the flags (the direction flag
 * included), not the x87 stack and control word, MXCSR, the xmm/ymm/zmm
 * registers or the AVX-512 mask registers.  Under bufsel such a call site is
 * trapped once and then rewritten into a call into bufsel's C code, which
 * must give the program the same guarantee.
 *
 * Each call loads its own pattern into all of them, makes the call from a
 * site of its own (setup, enter, register, and an enter whose call number
 * is loaded before its arguments), stores them back and compares.
 * Enters submit PROVIDE_BUFFERS, buffer-select READs on a pipe and NOPs, so
 * bufsel's pool allocates and copies while the program's registers are live;
 * a register probe and failing enters run the other paths.  The output is
 * the same on every CPU (the widest vector state the CPU has is used) and
 * natively and under bufsel.
 */
#include <cpuid.h>
#include <errno.h>
#include <liburing.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "test/prog/cqe_print.h"

enum { VEC_SSE, VEC_AVX, VEC_AVX512 };

#define NGPR 12		/* rdi rsi rdx r10 r8 r9 rbx rbp r12 r13 r14 r15 */
static const char *const gpr_name[NGPR] = { "rdi", "rsi", "rdx", "r10", "r8",  "r9",
					    "rbx", "rbp", "r12", "r13", "r14", "r15" };

/* The asm below addresses these fields by the offsets checked after it. */
struct call_state {
	uint64_t gpr_in[NGPR];		/* 0 */
	uint64_t gpr_out[NGPR];		/* 96 */
	uint64_t ret;			/* 192 */
	uint64_t rflags;		/* 200 */
	uint64_t rsp_in;		/* 208 */
	uint64_t rsp_out;		/* 216 */
	double st_in[2];		/* 224 */
	double st_out[2];		/* 240 */
	uint32_t mxcsr_in;		/* 256 */
	uint32_t mxcsr_out;		/* 260 */
	uint32_t mxcsr_default;		/* 264 */
	uint16_t fcw_in;		/* 268 */
	uint16_t fcw_out;		/* 270 */
	uint16_t fcw_default;		/* 272 */
	uint16_t k_in[8];		/* 274 */
	uint16_t k_out[8];		/* 290 */
	uint32_t vec;			/* 308 */
	uint8_t pad[8];
	uint8_t v_in[32 * 64] __attribute__((aligned(64)));	/* 320 */
	uint8_t v_out[32 * 64] __attribute__((aligned(64)));	/* 2368 */
};
_Static_assert(offsetof(struct call_state, gpr_out) == 96, "layout");
_Static_assert(offsetof(struct call_state, ret) == 192, "layout");
_Static_assert(offsetof(struct call_state, st_in) == 224, "layout");
_Static_assert(offsetof(struct call_state, mxcsr_in) == 256, "layout");
_Static_assert(offsetof(struct call_state, fcw_in) == 268, "layout");
_Static_assert(offsetof(struct call_state, k_in) == 274, "layout");
_Static_assert(offsetof(struct call_state, k_out) == 290, "layout");
_Static_assert(offsetof(struct call_state, vec) == 308, "layout");
_Static_assert(offsetof(struct call_state, v_in) == 320, "layout");
_Static_assert(offsetof(struct call_state, v_out) == 2368, "layout");

/* Read by the call sites through rip: every general register carries a pattern. */
__attribute__((used)) static struct call_state *cur;

#define X16(m) m(0) m(1) m(2) m(3) m(4) m(5) m(6) m(7) m(8) m(9) m(10) m(11) m(12) m(13) m(14) m(15)
#define X32(m) X16(m) m(16) m(17) m(18) m(19) m(20) m(21) m(22) m(23) m(24) m(25) m(26) m(27) \
	m(28) m(29) m(30) m(31)
#define X8(m) m(0) m(1) m(2) m(3) m(4) m(5) m(6) m(7)

#define LD_XMM(n) "	movdqu 320+" #n "*64(%rax), %xmm" #n "\n"
#define LD_YMM(n) "	vmovdqu 320+" #n "*64(%rax), %ymm" #n "\n"
#define LD_ZMM(n) "	vmovdqu64 320+" #n "*64(%rax), %zmm" #n "\n"
#define LD_K(n) "	kmovw 274+" #n "*2(%rax), %k" #n "\n"
#define ST_XMM(n) "	movdqu %xmm" #n ", 2368+" #n "*64(%rcx)\n"
#define ST_YMM(n) "	vmovdqu %ymm" #n ", 2368+" #n "*64(%rcx)\n"
#define ST_ZMM(n) "	vmovdqu64 %zmm" #n ", 2368+" #n "*64(%rcx)\n"
#define ST_K(n) "	kmovw %k" #n ", 290+" #n "*2(%rcx)\n"

/*
 * One call site per system call, as a function with unwind information
 * (bufsel rewrites only sites whose function it can delimit).  The
 * callee-saved registers are the caller's; everything else is free.
 * LOAD loads the call number and makes the call: right before the
 * `syscall`, or as a compiler may, with arguments filled in between.
 */
#define LOAD_NEXT(nr) "	mov $" #nr ", %eax\n	syscall\n"
/* r9's pattern comes back from the red zone after the load, r10 and rdi
 * pass through an lea and a test: each runs where bufsel's stub runs it. */
#define LOAD_BEFORE(nr)								\
	"	mov %r9, -8(%rsp)\n"						\
	"	movabs $0x5a5a5a5a5a5a5a5a, %r9\n"				\
	"	mov $" #nr ", %eax\n"						\
	"	mov -8(%rsp), %r9\n"						\
	"	lea (%r10), %r10\n"						\
	"	test %rdi, %rdi\n"						\
	"	syscall\n"
#define CALL_SITE(name, LOAD)							\
	__asm__(".text\n"							\
		".globl " #name "\n"						\
		".type " #name ",@function\n"					\
		#name ":\n"							\
		"	.cfi_startproc\n"					\
		"	push %rbx\n	.cfi_adjust_cfa_offset 8\n"		\
		"	push %rbp\n	.cfi_adjust_cfa_offset 8\n"		\
		"	push %r12\n	.cfi_adjust_cfa_offset 8\n"		\
		"	push %r13\n	.cfi_adjust_cfa_offset 8\n"		\
		"	push %r14\n	.cfi_adjust_cfa_offset 8\n"		\
		"	push %r15\n	.cfi_adjust_cfa_offset 8\n"		\
		"	mov cur(%rip), %rax\n"					\
		"	mov %rsp, 208(%rax)\n"					\
		"	cmpl $2, 308(%rax)\n"					\
		"	je 2f\n"						\
		"	cmpl $1, 308(%rax)\n"					\
		"	je 1f\n"						\
		X16(LD_XMM)							\
		"	jmp 3f\n"						\
		"1:\n"								\
		X16(LD_YMM)							\
		"	jmp 3f\n"						\
		"2:\n"								\
		X32(LD_ZMM)							\
		X8(LD_K)							\
		"3:\n"								\
		"	fldcw 268(%rax)\n"					\
		"	fldl 232(%rax)\n"					\
		"	fldl 224(%rax)\n"					\
		"	ldmxcsr 256(%rax)\n"					\
		"	mov 8(%rax), %rsi\n"					\
		"	mov 16(%rax), %rdx\n"					\
		"	mov 24(%rax), %r10\n"					\
		"	mov 32(%rax), %r8\n"					\
		"	mov 40(%rax), %r9\n"					\
		"	mov 48(%rax), %rbx\n"					\
		"	mov 56(%rax), %rbp\n"					\
		"	mov 64(%rax), %r12\n"					\
		"	mov 72(%rax), %r13\n"					\
		"	mov 80(%rax), %r14\n"					\
		"	mov 88(%rax), %r15\n"					\
		"	mov 0(%rax), %rdi\n"					\
		"	std\n"							\
		LOAD								\
		"	pushfq\n"						\
		"	pop %r11\n"						\
		"	cld\n"							\
		"	mov cur(%rip), %rcx\n"					\
		"	mov %rax, 192(%rcx)\n"					\
		"	mov %r11, 200(%rcx)\n"					\
		"	mov %rsp, 216(%rcx)\n"					\
		"	mov %rdi, 96(%rcx)\n"					\
		"	mov %rsi, 104(%rcx)\n"					\
		"	mov %rdx, 112(%rcx)\n"					\
		"	mov %r10, 120(%rcx)\n"					\
		"	mov %r8, 128(%rcx)\n"					\
		"	mov %r9, 136(%rcx)\n"					\
		"	mov %rbx, 144(%rcx)\n"					\
		"	mov %rbp, 152(%rcx)\n"					\
		"	mov %r12, 160(%rcx)\n"					\
		"	mov %r13, 168(%rcx)\n"					\
		"	mov %r14, 176(%rcx)\n"					\
		"	mov %r15, 184(%rcx)\n"					\
		"	stmxcsr 260(%rcx)\n"					\
		"	fnstcw 270(%rcx)\n"					\
		"	fstpl 240(%rcx)\n"					\
		"	fstpl 248(%rcx)\n"					\
		"	ldmxcsr 264(%rcx)\n"					\
		"	fldcw 272(%rcx)\n"					\
		"	cmpl $2, 308(%rcx)\n"					\
		"	je 2f\n"						\
		"	cmpl $1, 308(%rcx)\n"					\
		"	je 1f\n"						\
		X16(ST_XMM)							\
		"	jmp 3f\n"						\
		"1:\n"								\
		X16(ST_YMM)							\
		"	vzeroupper\n"						\
		"	jmp 3f\n"						\
		"2:\n"								\
		X32(ST_ZMM)							\
		X8(ST_K)							\
		"	vzeroupper\n"						\
		"3:\n"								\
		"	pop %r15\n	.cfi_adjust_cfa_offset -8\n"		\
		"	pop %r14\n	.cfi_adjust_cfa_offset -8\n"		\
		"	pop %r13\n	.cfi_adjust_cfa_offset -8\n"		\
		"	pop %r12\n	.cfi_adjust_cfa_offset -8\n"		\
		"	pop %rbp\n	.cfi_adjust_cfa_offset -8\n"		\
		"	pop %rbx\n	.cfi_adjust_cfa_offset -8\n"		\
		"	ret\n"							\
		"	.cfi_endproc\n"						\
		".size " #name ", .-" #name "\n");				\
	void name(void)

CALL_SITE(site_setup, LOAD_NEXT(425));
CALL_SITE(site_enter, LOAD_NEXT(426));
CALL_SITE(site_register, LOAD_NEXT(427));
CALL_SITE(site_enter_apart, LOAD_BEFORE(426));

static struct call_state st;
static uint64_t rng = 0x9e3779b97f4a7c15ull;
static unsigned long calls, bad;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static unsigned vector_level(void)
{
	unsigned a, b, c, d;
	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE) || !(c & bit_AVX))
		return VEC_SSE;
	unsigned lo, hi;
	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	if ((lo & 0x6) != 0x6)
		return VEC_SSE;
	if (__get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & bit_AVX512F) && (lo & 0xe0) == 0xe0)
		return VEC_AVX512;
	return VEC_AVX;
}

/* A fresh pattern in every register the call must keep, then the call. */
static long call(void (*site)(void), long a0, long a1, long a2, long a3, long a4, long a5)
{
	const long args[6] = { a0, a1, a2, a3, a4, a5 };
	for (int i = 0; i < NGPR; i++)
		st.gpr_in[i] = i < 6 ? (uint64_t)args[i] : next();
	for (size_t i = 0; i < sizeof(st.v_in); i += 8) {
		uint64_t v = next();
		memcpy(st.v_in + i, &v, 8);
	}
	for (int i = 0; i < 8; i++)
		st.k_in[i] = (uint16_t)next();
	st.st_in[0] = (double)(next() >> 11) / 7.0;
	st.st_in[1] = -(double)(next() >> 11) / 3.0;
	/* Round toward zero, flush to zero, denormals are zero, all masked: not the default. */
	st.mxcsr_in = 0xffc0;
	/* Round toward zero, 53-bit precision, all exceptions masked. */
	st.fcw_in = 0x0e7f;
	memset(st.v_out, 0, sizeof(st.v_out));
	memset(st.gpr_out, 0, sizeof(st.gpr_out));
	cur = &st;
	site();
	calls++;

	char what[64];
	snprintf(what, sizeof(what), "call %lu (nr %s)", calls,
		 site == site_setup ? "setup" : site == site_register ? "register" : "enter");
	for (int i = 0; i < NGPR; i++)
		if (st.gpr_out[i] != st.gpr_in[i]) {
			printf("%s: %s changed from %#llx to %#llx\n", what, gpr_name[i],
			       (unsigned long long)st.gpr_in[i], (unsigned long long)st.gpr_out[i]);
			bad++;
		}
	if (!(st.rflags & 0x400)) {
		printf("%s: the direction flag was cleared\n", what);
		bad++;
	}
	if (st.rsp_out != st.rsp_in) {
		printf("%s: rsp moved by %lld\n", what, (long long)(st.rsp_out - st.rsp_in));
		bad++;
	}
	if (st.mxcsr_out != st.mxcsr_in || st.fcw_out != st.fcw_in) {
		printf("%s: MXCSR %#x -> %#x, x87 control word %#x -> %#x\n", what, st.mxcsr_in, st.mxcsr_out,
		       st.fcw_in, st.fcw_out);
		bad++;
	}
	if (memcmp(st.st_in, st.st_out, sizeof(st.st_in))) {
		printf("%s: the x87 stack changed\n", what);
		bad++;
	}
	size_t width = st.vec == VEC_AVX512 ? 64 : st.vec == VEC_AVX ? 32 : 16;
	unsigned nvec = st.vec == VEC_AVX512 ? 32 : 16;
	for (unsigned r = 0; r < nvec; r++)
		if (memcmp(st.v_in + r * 64, st.v_out + r * 64, width)) {
			printf("%s: vector register %u changed\n", what, r);
			bad++;
		}
	if (st.vec == VEC_AVX512 && memcmp(st.k_in, st.k_out, sizeof(st.k_in))) {
		printf("%s: a mask register changed\n", what);
		bad++;
	}
	return (long)st.ret;
}

static void flush_sq(struct io_uring *ring)
{
	io_uring_smp_store_release(ring->sq.ktail, ring->sq.sqe_tail);
	ring->sq.sqe_head = ring->sq.sqe_tail;
}

int main(void)
{
	st.vec = vector_level();
	st.mxcsr_default = 0x1f80;
	st.fcw_default = 0x037f;

	/* A ring set up from the program's own site, and closed. */
	struct io_uring_params p = { 0 };
	long fd = call(site_setup, 4, (long)&p, 0, 0, 0, 0);
	if (fd < 0)
		die("setup: %s", strerror((int)-fd));
	close((int)fd);
	for (int i = 0; i < 20; i++) {
		memset(&p, 0, sizeof(p));
		p.flags = 1u << 31;	/* no kernel has it: -EINVAL */
		long r = call(site_setup, 4, (long)&p, 0, 0, 0, 0);
		if (i == 0)
			note("setup with an unknown flag: %ld", r);
	}

	struct io_uring ring;
	int ret = io_uring_queue_init(8, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	int pfd[2];
	if (pipe(pfd) < 0)
		die("pipe: %s", strerror(errno));
	static char bufs[64][32];
	unsigned long read_bytes = 0, selected = 0;
	for (int round = 0; round < 64; round++) {
		char msg[16];
		int n = snprintf(msg, sizeof(msg), "round-%d", round);
		if (write(pfd[1], msg, (size_t)n) != n)
			die("write: %s", strerror(errno));
		struct io_uring_sqe *sqe = get_sqe(&ring);
		io_uring_prep_provide_buffers(sqe, bufs[round], sizeof(bufs[round]), 1, 7, round);
		sqe->user_data = 1;
		sqe->flags |= IOSQE_IO_LINK;
		sqe = get_sqe(&ring);
		io_uring_prep_read(sqe, pfd[0], NULL, sizeof(bufs[0]), 0);
		sqe->flags |= IOSQE_BUFFER_SELECT;
		sqe->buf_group = 7;
		sqe->user_data = 2;
		sqe = get_sqe(&ring);
		io_uring_prep_nop(sqe);
		sqe->user_data = 3;
		flush_sq(&ring);
		long r = call(round & 1 ? site_enter_apart : site_enter, ring.ring_fd, 3, 3, IORING_ENTER_GETEVENTS, 0,
			      0);
		if (r != 3)
			die("round %d: enter returned %ld", round, r);
		struct io_uring_cqe c[3];
		reap(&ring, c, 3);
		if (round == 0)
			for (int i = 0; i < 3; i++)
				cqe_print(&c[i]);
		for (int i = 0; i < 3; i++) {
			if (c[i].user_data != 2)
				continue;
			if (c[i].res != n || !(c[i].flags & IORING_CQE_F_BUFFER))
				die("round %d: read res=%d flags=%#x", round, c[i].res, c[i].flags);
			unsigned bid = c[i].flags >> IORING_CQE_BUFFER_SHIFT;
			if (bid != (unsigned)round || memcmp(bufs[bid], msg, (size_t)n))
				die("round %d: bid %u holds \"%.*s\"", round, bid, n, bufs[bid]);
			read_bytes += (unsigned long)c[i].res;
			selected++;
		}
	}
	note("64 rounds: %lu buffers selected, %lu bytes read", selected, read_bytes);

	/* Enters that fail: bad flags on the ring, and a descriptor that is no ring. */
	for (int i = 0; i < 20; i++) {
		long r1 = call(i & 1 ? site_enter_apart : site_enter, ring.ring_fd, 0, 0, 1u << 30, 0, 0);
		long r2 = call(i & 1 ? site_enter : site_enter_apart, pfd[0], 0, 0, 0, 0, 0);
		if (i == 0)
			note("enter with an unknown flag: %ld; on a pipe: %ld", r1, r2);
	}

	/* A probe, which bufsel answers itself for the opcodes it emulates. */
	static union {
		struct io_uring_probe probe;
		char bytes[sizeof(struct io_uring_probe) + 256 * sizeof(struct io_uring_probe_op)];
	} pb;
	struct io_uring_probe *pr = &pb.probe;
	for (int i = 0; i < 20; i++) {
		memset(&pb, 0, sizeof(pb));
		long r = call(site_register, ring.ring_fd, IORING_REGISTER_PROBE, (long)pr, 256, 0, 0);
		if (r < 0)
			die("probe: %s", strerror((int)-r));
	}
	for (int i = 0; i < 20; i++) {
		long r = call(site_register, ring.ring_fd, 9999, 0, 0, 0, 0);
		if (i == 0)
			note("register with an unknown opcode: %ld", r);
	}
	note("probe: PROVIDE_BUFFERS %s, REMOVE_BUFFERS %s",
	     pr->ops_len > IORING_OP_PROVIDE_BUFFERS && (pr->ops[IORING_OP_PROVIDE_BUFFERS].flags & IO_URING_OP_SUPPORTED)
		     ? "supported" : "missing",
	     pr->ops_len > IORING_OP_REMOVE_BUFFERS && (pr->ops[IORING_OP_REMOVE_BUFFERS].flags & IO_URING_OP_SUPPORTED)
		     ? "supported" : "missing");

	io_uring_queue_exit(&ring);
	note("%lu calls, %lu registers or flags not preserved", calls, bad);
	return bad ? 1 : 0;
}
