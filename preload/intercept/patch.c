#define _GNU_SOURCE
#include "preload/intercept/patch.h"

#include <cpuid.h>
#include <errno.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "preload/intercept/codemem.h"
#include "preload/intercept/ehframe.h"
#include "preload/intercept/emulate.h"
#include "preload/intercept/insn.h"
#include "preload/intercept/site.h"
#include "preload/log.h"
#include "preload/state.h"
#include "preload/sys.h"

/*
 * The stub's XSAVE area is a fixed 4 KiB below the saved registers: enough for
 * x87, SSE, AVX and AVX-512 state.  AMX tile state (8 KiB more) is left out of
 * the save mask: neither bufsel nor the libc it calls touches tile registers,
 * so they pass through unchanged.  A CPU whose other enabled state does not
 * fit is not patched.
 */
#define XSAVE_AREA 4096
#define STUB_PAGE 4096
#define STUB_SIZE 64
/* The stub's own code after the instructions it moved: lea, two movabs, jmp. */
#define STUB_TAIL 28
#define MAX_STUB_PAGES 32
#define MAX_REFUSED 64
/* A jump whose rel32 ends in the bytes 0f 05 leaves a `syscall` where it was. */
#define SYSCALL_DISP_HI 0x050f0000u
/* XTILECFG and XTILEDATA: AMX, never touched by bufsel's code. */
#define XFEATURE_AMX ((1ull << 17) | (1ull << 18))

struct stub_page {
	uintptr_t base;		/* where the stubs run: R-X */
	uint8_t *rw;		/* its writable twin (codemem.h); NULL: takes no more stubs */
	unsigned used;		/* bytes of stubs written */
};

static struct patch_state {
	bool enabled;
	atomic_flag busy;	/* one patcher at a time; others just trap again */
	unsigned npages;
	struct stub_page pages[MAX_STUB_PAGES];
	unsigned nrefused;
	uintptr_t refused[MAX_REFUSED];	/* sites not to look at again */
	atomic_ulong sites;
	bool xsavec;		/* the stubs enter through the XSAVEC variant */
	bool membarrier;	/* MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE registered */
	bool fork_held;		/* prepare took busy; parent and child give it back */
	long owner;		/* the process whose stub pages these are (a fork shares them) */
} patch = { .busy = ATOMIC_FLAG_INIT };

/* The components the stubs save and restore (EDX:EAX of XSAVE/XRSTOR):
 * set once by patch_init, read by the stubs. */
uint64_t bufsel_patch_xmask __attribute__((visibility("hidden"))) = ~0ull;

/*
 * The stub jumps here with the program's stack pointer moved below its red
 * zone, %rax the call number, %rcx where to resume, the arguments in the
 * system call registers.  Everything a `syscall` preserves is preserved:
 * general registers but %rax/%rcx/%r11, the flags, and the whole extended
 * state (bufsel's C code and libc's string functions use vector registers).
 */
#define PATCH_ENTRY(name, save)				\
	".text\n"						\
	".globl " name "\n"					\
	".hidden " name "\n"					\
	".type " name ",@function\n"				\
	name ":\n"						\
	"	pushfq\n"					\
	"	push %rcx\n"					\
	"	push %rbx\n"					\
	"	push %rbp\n"					\
	"	push %r9\n"					\
	"	push %r8\n"					\
	"	push %r10\n"					\
	"	push %rdx\n"					\
	"	push %rsi\n"					\
	"	push %rdi\n"					\
	"	mov %rsp, %rbx\n"				\
	"	mov %rax, %rbp\n"				\
	"	sub $4096, %rsp\n"				\
	"	and $-64, %rsp\n"				\
	"	movq $0, 512(%rsp)\n"				\
	"	movq $0, 520(%rsp)\n"				\
	"	movq $0, 528(%rsp)\n"				\
	"	movq $0, 536(%rsp)\n"				\
	"	movq $0, 544(%rsp)\n"				\
	"	movq $0, 552(%rsp)\n"				\
	"	movq $0, 560(%rsp)\n"				\
	"	movq $0, 568(%rsp)\n"				\
	"	mov bufsel_patch_xmask(%rip), %eax\n"		\
	"	mov bufsel_patch_xmask+4(%rip), %edx\n"		\
	"	" save " (%rsp)\n"				\
	"	cld\n"						\
	"	mov %rbp, %rdi\n"				\
	"	mov %rbx, %rsi\n"				\
	"	mov 64(%rbx), %rdx\n"				\
	"	call patch_dispatch\n"				\
	"	mov %rax, %rbp\n"				\
	"	mov bufsel_patch_xmask(%rip), %eax\n"		\
	"	mov bufsel_patch_xmask+4(%rip), %edx\n"		\
	"	xrstor64 (%rsp)\n"				\
	"	mov %rbp, %rax\n"				\
	"	mov %rbx, %rsp\n"				\
	"	pop %rdi\n"					\
	"	pop %rsi\n"					\
	"	pop %rdx\n"					\
	"	pop %r10\n"					\
	"	pop %r8\n"					\
	"	pop %r9\n"					\
	"	pop %rbp\n"					\
	"	pop %rbx\n"					\
	"	pop %rcx\n"					\
	"	popfq\n"					\
	"	lea 128(%rsp), %rsp\n"				\
	"	jmp *%rcx\n"					\
	".size " name ", .-" name "\n"

/*
 * XSAVEC (compacted, skipping state still in its initial configuration —
 * usually all of AVX-512) where the CPU has it; plain XSAVE otherwise.
 * XRSTOR reads either form.
 */
__asm__(PATCH_ENTRY("bufsel_patch_entry_xsave", "xsave64"));
__asm__(PATCH_ENTRY("bufsel_patch_entry_xsavec", "xsavec64"));

void bufsel_patch_entry_xsave(void);
void bufsel_patch_entry_xsavec(void);
long patch_dispatch(long nr, const long *a, void *resume) __attribute__((used));

/* a: the saved %rdi, %rsi, %rdx, %r10, %r8, %r9 — the system call's order. */
long patch_dispatch(long nr, const long *a, void *resume)
{
	int saved_errno = errno;
	struct call_site cs = { PATH_PATCH, NULL, resume };
	long r = bufsel.active && emulate_handles(nr) ? emulate_syscall(nr, a, &cs)
						     : sys_call6(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	errno = saved_errno;
	return r;
}

static void patch_fork_prepare(void)
{
	/* Bounded: a flag copied set into this process (raw clone) must not hang fork. */
	for (int i = 0; i < 100000; i++) {
		if (!atomic_flag_test_and_set_explicit(&patch.busy, memory_order_acquire)) {
			patch.fork_held = true;
			return;
		}
		sched_yield();
	}
}

static void patch_fork_done(void)
{
	if (patch.fork_held) {
		patch.fork_held = false;
		atomic_flag_clear_explicit(&patch.busy, memory_order_release);
	}
}

void patch_init(int enabled)
{
	unsigned a, b, c, d;
	patch.enabled = false;
	if (!enabled || !__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE))
		return;
	/* What the stubs save: every user component XCR0 enables, but AMX.
	 * The standard form puts component i at the offset leaf 0xd, i says;
	 * the area must reach the end of the last one saved (the compacted
	 * form is never larger). */
	unsigned xlo, xhi;
	__asm__ volatile("xgetbv" : "=a"(xlo), "=d"(xhi) : "c"(0));
	uint64_t xcr0 = (uint64_t)xhi << 32 | xlo;
	uint64_t mask = xcr0 & ~XFEATURE_AMX;
	unsigned need = 512 + 64;
	for (unsigned i = 2; i < 64; i++) {
		if (!(mask & (1ull << i)))
			continue;
		__cpuid_count(0xd, i, a, b, c, d);
		if (b + a > need)
			need = b + a;
	}
	if (need + 64 > XSAVE_AREA) {
		log_info("site patching off: %u bytes of extended state", need);
		return;
	}
	bufsel_patch_xmask = mask;
	__cpuid_count(0xd, 1, a, b, c, d);
	patch.xsavec = a & (1u << 1);
	patch.membarrier = !sys_call3(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0);
	patch.enabled = true;
	/* A fork in the middle of a rewrite would copy a half-written site. */
	pthread_atfork(patch_fork_prepare, patch_fork_done, patch_fork_done);
}

unsigned long patch_sites(void)
{
	return atomic_load_explicit(&patch.sites, memory_order_relaxed);
}

static bool refused(uintptr_t site)
{
	for (unsigned i = 0; i < patch.nrefused && i < MAX_REFUSED; i++)
		if (patch.refused[i] == site)
			return true;
	return false;
}

static void refuse(uintptr_t site, const char *why)
{
	patch.refused[patch.nrefused++ % MAX_REFUSED] = site;
	log_debug("site %#lx not patched: %s", (unsigned long)site, why);
}

/*
 * The system will not let bufsel write code (PR_SET_MDWE or a seccomp filter
 * refusing the stub mappings, /proc/self/mem closed to the process): every
 * site stays on the trap, which answers every call as well, only slower.
 * Said once, at info.
 */
static void refused_by_system(const char *what, int err)
{
	patch.enabled = false;
	log_once(BUFSEL_LOG_INFO, ONCE_NO_PATCH, "site patching off: %s: %s; io_uring calls stay on the trap path",
		 what, log_errname(err));
}

static bool system_refusal(int err)
{
	return err == -EPERM || err == -EACCES || err == -ENOENT || err == -EROFS || err == -EIO;
}

/*
 * A fork shares the stub pages with its parent but not their writable
 * twins (codemem.h): the child writes no stub into them (its twin pointers
 * name nothing of its own now, and the parent may put its next stub in the
 * same place).  Its own sites get pages of its own.
 */
static void leave_parents_pages(void)
{
	long pid = sys_call3(SYS_getpid, 0, 0, 0);
	if (patch.owner == pid)
		return;
	for (unsigned i = 0; i < patch.npages; i++) {
		patch.pages[i].rw = NULL;
		patch.pages[i].used = STUB_PAGE;
	}
	patch.owner = pid;
}

/* A new stub page at exactly want (MAP_FIXED_NOREPLACE), or 0. */
static uintptr_t map_stub_page(uintptr_t want)
{
	uint8_t *rw;
	if (patch.npages == MAX_STUB_PAGES || !patch.enabled)
		return 0;
	int err = codemem_stub_map(want, &rw);
	if (err) {
		/* -EEXIST: the address is taken, another may do; anything else
		 * would fail the same way everywhere. */
		if (err != -EEXIST)
			refused_by_system("no stub page", err);
		return 0;
	}
	patch.pages[patch.npages++] = (struct stub_page){ want, rw, 0 };
	return want;
}

/*
 * Room for one stub at an address in [lo, hi] (both within reach of the
 * jump), on a page that exists or one mapped for it; 0 if there is none.
 */
static uintptr_t stub_slot(uintptr_t lo, uintptr_t hi, uintptr_t near)
{
	for (unsigned i = 0; i < patch.npages; i++) {
		struct stub_page *pg = &patch.pages[i];
		uintptr_t at = pg->base + pg->used;
		if (pg->rw && pg->used + STUB_SIZE <= STUB_PAGE && at >= lo && at + STUB_SIZE - 1 <= hi)
			return at;
	}
	if (hi - lo < (1u << 20)) {
		for (uintptr_t at = (lo + STUB_PAGE - 1) & ~(uintptr_t)(STUB_PAGE - 1); at + STUB_SIZE - 1 <= hi;
		     at += STUB_PAGE)
			if (map_stub_page(at))
				return at;
		return 0;
	}
	/* Pages are tried outward from near, 1 MiB apart. */
	for (uintptr_t step = 1; step <= 512; step++) {
		for (int side = 0; side < 2; side++) {
			uintptr_t off = step << 20;
			uintptr_t want = side ? near + off : near - off;
			want &= ~(uintptr_t)(STUB_PAGE - 1);
			if ((side && want < near) || (!side && want > near))
				continue;
			if (want < lo)
				want = (lo + STUB_PAGE - 1) & ~(uintptr_t)(STUB_PAGE - 1);
			if (want < lo || want + STUB_SIZE - 1 > hi)
				continue;
			if (map_stub_page(want))
				return want;
		}
	}
	return 0;
}

static struct stub_page *page_of(uintptr_t stub)
{
	for (unsigned i = 0; i < patch.npages; i++)
		if (stub >= patch.pages[i].base && stub < patch.pages[i].base + STUB_PAGE)
			return &patch.pages[i];
	return NULL;
}

/* Through the page's writable alias: the page itself stays R-X throughout. */
static int write_stub(struct stub_page *pg, uintptr_t stub, const uint8_t *moved, size_t nmoved, uintptr_t resume)
{
	if (!pg)
		return -EINVAL;
	uint8_t code[STUB_SIZE], *p = code;
	uintptr_t entry = patch.xsavec ? (uintptr_t)bufsel_patch_entry_xsavec : (uintptr_t)bufsel_patch_entry_xsave;
	memset(code, 0xcc, sizeof(code));
	/* The replaced instruction first (and those moved with it), while %rsp
	 * is still the program's. */
	memcpy(p, moved, nmoved), p += nmoved;
	*p++ = 0x48; *p++ = 0x8d; *p++ = 0x64; *p++ = 0x24; *p++ = 0x80;	/* lea -128(%rsp),%rsp */
	*p++ = 0x48; *p++ = 0xb9; memcpy(p, &resume, 8), p += 8;		/* movabs $resume,%rcx */
	*p++ = 0x49; *p++ = 0xbb; memcpy(p, &entry, 8), p += 8;		/* movabs $entry,%r11 */
	*p++ = 0x41; *p++ = 0xff; *p++ = 0xe3;					/* jmp *%r11 */
	int err = codemem_stub_write(&pg->rw, stub - pg->base, code, sizeof(code));
	if (!err)
		pg->used += STUB_SIZE;
	return err;
}

/* Every thread of the process executes a serializing instruction before this returns. */
static int sync_cores(void)
{
	return (int)sys_call3(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0);
}

/*
 * n bytes inside one naturally aligned quadword, written as that whole
 * quadword in one write to /proc/self/mem: the kernel copies 8 aligned bytes
 * at once (docs/interception.md gives the measurement).
 */
static int store_in_quadword(int mem, uintptr_t at, const uint8_t *bytes, size_t n)
{
	uintptr_t q = at & ~(uintptr_t)7;
	uint8_t v[8];
	int err = codemem_text_read(mem, q, v, 8);
	if (err)
		return err;
	memcpy(v + (at - q), bytes, n);
	return codemem_text_write(mem, q, v, 8);
}

/*
 * Writes `jmp stub` (e9 rel32) over the 5 bytes at site.  Inside one aligned
 * quadword that is one atomic store.  Otherwise the kernel's text_poke
 * protocol, with a jump-to-self where it uses int3: first 2 bytes `eb fe`
 * (a thread arriving waits there), the 3 others, then the first 2; each step
 * followed by a membarrier that serializes every core of the process, so no
 * thread runs a mix of old and new bytes.  For a 3-byte load the syscall's
 * own bytes are written with the values they already hold.
 *
 * Every write goes through /proc/self/mem: the page stays r-x, so a thread
 * running anywhere else in it goes on running (with mprotect to read-write
 * it would fault), and no PROT_EXEC is ever gained, which PR_SET_MDWE and
 * MemoryDenyWriteExecute filters refuse.  -errno if the site is unchanged;
 * a failure after the jump-to-self puts the old bytes back.
 */
static int code_write(uintptr_t site, uintptr_t stub)
{
	uint8_t jmp[5] = { 0xe9 }, old[5];
	int32_t disp = (int32_t)(stub - (site + 5));
	memcpy(jmp + 1, &disp, 4);
	bool one_store = (site & 7) <= 3;
	if (!one_store && ((site & 7) == 7 || !patch.membarrier))
		return -EOPNOTSUPP;
	int mem = codemem_text_open();
	if (mem < 0)
		return mem;
	int err = codemem_text_read(mem, site, old, sizeof(old));
	if (err) {
		/* nothing written */
	} else if (one_store) {
		err = store_in_quadword(mem, site, jmp, 5);
	} else {
		static const uint8_t spin[2] = { 0xeb, 0xfe };
		err = store_in_quadword(mem, site, spin, 2);
		if (!err) {
			sync_cores();
			/* Nothing runs these three bytes while the first two spin. */
			int late = codemem_text_write(mem, site + 2, jmp + 2, 3);
			sync_cores();
			if (late) {
				codemem_text_write(mem, site + 2, old + 2, 3);
				sync_cores();
			}
			/* Until this lands the site spins: retried, for a page the
			 * kernel could not spare a moment ago. */
			int fin = store_in_quadword(mem, site, late ? old : jmp, 2);
			for (int i = 0; fin && i < 100; i++) {
				sys_call3(SYS_sched_yield, 0, 0, 0);
				fin = store_in_quadword(mem, site, late ? old : jmp, 2);
			}
			err = late ? late : fin;
			/* Written once more, after a membarrier: a CPU emulator
			 * (qemu's TCG) that translated the jump-to-self while the
			 * store landed keeps that translation until the bytes are
			 * written again, and its threads spin there for ever (a
			 * real Linux 5.10 under qemu, patch_race: 4 runs in 48).
			 * The membarrier has every core of the process done with
			 * any translation begun before the first store. */
			if (!fin) {
				sync_cores();
				store_in_quadword(mem, site, late ? old : jmp, 2);
			}
		}
	}
	sync_cores();
	sys_close(mem);
	return err;
}

/*
 * The instruction at site loads the call number into %eax and is followed by
 * `syscall`: `mov $imm32,%eax` (5 bytes), or `mov %r32,%eax` / `mov %r64,%rax`
 * from another register (REX + 89 /r, 3 bytes).  Its length, or 0.
 */
static size_t nr_load_length(const uint8_t *s, long nr)
{
	int32_t imm;
	memcpy(&imm, s + 1, 4);
	if (s[0] == 0xb8 && imm == nr && s[5] == 0x0f && s[6] == 0x05)
		return 5;
	if (s[3] != 0x0f || s[4] != 0x05)
		return 0;
	/* REX.B clear and ModRM mod=3 rm=0: `mov %reg,%eax` (89 /r). */
	if ((s[0] & 0xf1) == 0x40 && s[1] == 0x89 && (s[2] & 0xc7) == 0xc0)
		return 3;
	/* REX.R clear and ModRM mod=3 reg=0: the same move written 8b /r. */
	if ((s[0] & 0xf4) == 0x40 && s[1] == 0x8b && (s[2] & 0xf8) == 0xc0)
		return 3;
	return 0;
}

/* Walks from the function's first instruction: is site an instruction start? */
static bool on_boundary(const struct code_range *cr, uintptr_t site)
{
	uintptr_t p = cr->func_start;
	while (p < site) {
		int len = insn_length((const uint8_t *)p, cr->func_end - p);
		if (len <= 0)
			return false;
		p += (uintptr_t)len;
	}
	return p == site;
}

/*
 * A compiler may load the call number a few instructions before the
 * `syscall` at sc, and fill the argument registers in between (liburing's
 * inline enter in _io_uring_get_cqe, built into a program: `mov $426,%eax`,
 * then three loads of arguments).  That `mov $nr,%eax` can be rewritten all
 * the same: its stub runs it and the instructions after it up to the
 * syscall, which must then be ones that run anywhere (insn_movable), and a
 * thread that jumps past the load still finds them, and the syscall, where
 * they were.  The load's address, or 0.
 */
static uintptr_t load_before(const struct code_range *cr, uintptr_t sc, long nr)
{
	uintptr_t p = cr->func_start, load = 0;
	if (!p)
		return 0;
	while (p < sc) {
		const uint8_t *b = (const uint8_t *)p;
		int len = insn_length(b, cr->func_end - p);
		if (len <= 0)
			return 0;
		int32_t imm = 0;
		if (len == 5 && b[0] == 0xb8)
			memcpy(&imm, b + 1, 4);
		if (imm == nr)	/* nr is never 0: only a `mov $nr,%eax` has it */
			load = p;
		else if (load && !insn_movable(b, (size_t)len))
			load = 0;
		p += (uintptr_t)len;
	}
	return p == sc && load && sc - load <= STUB_SIZE - STUB_TAIL ? load : 0;
}

static void patch_locked(uintptr_t rip, long nr)
{
	/* The syscall is the 2 bytes before rip; the load is 5 or 3 before that. */
	uintptr_t site = 0;
	size_t len = 0;
	struct code_range cr = { 0 };
	if (refused(rip))
		return;
	leave_parents_pages();
	if (ehframe_lookup(rip - 2, &cr) || rip - 7 < cr.func_start) {
		refuse(rip, "no unwind table entry for the function");
		return;
	}
	for (size_t try = 5; try >= 3; try -= 2) {
		uintptr_t s = rip - 2 - try;
		if (s >= cr.func_start && nr_load_length((const uint8_t *)s, nr) == try) {
			site = s;
			len = try;
			break;
		}
	}
	size_t nmoved = len;
	if (!site && (site = load_before(&cr, rip - 2, nr))) {
		len = 5;
		nmoved = rip - 2 - site;
	}
	if (!site) {
		refuse(rip, "no recognised load of the call number before the syscall");
		return;
	}
	if (site + 5 > cr.seg_end || !(cr.seg_prot & PROT_EXEC)) {
		refuse(rip, "the site is not in an executable segment");
		return;
	}
	if (!on_boundary(&cr, site)) {
		refuse(rip, "the bytes before the syscall are not a whole instruction");
		return;
	}
	uintptr_t next = site + 5, stub;
	if (len == 5) {
		/* rel32 reach from the end of the jump, less a margin for the stub. */
		uintptr_t lo = next > 0x7fff0000u ? next - 0x7fff0000u : 0;
		stub = stub_slot(lo, next + 0x7fff0000u, site);
	} else {
		/* The jump's last two bytes must stay `0f 05`. */
		uintptr_t lo = next + SYSCALL_DISP_HI;
		stub = stub_slot(lo, lo + 0xffff, lo);
	}
	if (!stub || (len == 3 && (uint32_t)(stub - next) >> 16 != SYSCALL_DISP_HI >> 16)) {
		refuse(rip, "no room for a stub within reach");
		return;
	}
	int err = write_stub(page_of(stub), stub, (const uint8_t *)site, nmoved, rip);
	if (err) {
		if (err == -EPERM || err == -EACCES)
			refused_by_system("stub pages cannot be written", err);
		refuse(rip, "the stub cannot be written");
		return;
	}
	err = code_write(site, stub);
	if (err) {
		if (system_refusal(err))
			refused_by_system("/proc/self/mem", err);
		refuse(rip, "the code cannot be rewritten safely");
		return;
	}
	atomic_fetch_add_explicit(&patch.sites, 1, memory_order_relaxed);
	log_debug("site %#lx patched: stub %#lx", (unsigned long)site, (unsigned long)stub);
}

void patch_site(uintptr_t rip, long nr)
{
	if (!patch.enabled || nr < __NR_io_uring_setup || nr > __NR_io_uring_register || site_in_bufsel((void *)rip))
		return;
	/* A fork can copy a held flag into the child: it then only never patches. */
	if (atomic_flag_test_and_set_explicit(&patch.busy, memory_order_acquire))
		return;
	/* A handler that used io_uring at this site mid-rewrite would wait on its own jump-to-self. */
	uint64_t all = ~0ULL, old;
	sys_call6(SYS_rt_sigprocmask, SIG_BLOCK, (long)&all, (long)&old, 8, 0, 0);
	patch_locked(rip, nr);
	sys_call6(SYS_rt_sigprocmask, SIG_SETMASK, (long)&old, 0, 8, 0, 0);
	atomic_flag_clear_explicit(&patch.busy, memory_order_release);
}
