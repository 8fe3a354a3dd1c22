/*
 * The instruction-length decoder against binutils: every instruction objdump
 * finds in real compiled code (liburing, libc, libbufsel itself) must get the
 * same length, or "unknown" — never a different length, which is the one
 * answer that would let site patching corrupt code.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "preload/intercept/insn.h"

struct tally {
	unsigned long insns, unknown, wrong;
};

/* objdump -d --insn-width=16 puts each instruction's bytes on one line. */
static void check_object(const char *path, struct tally *t)
{
	char cmd[512], line[1024];
	snprintf(cmd, sizeof(cmd), "objdump -d --insn-width=16 '%s' 2>/dev/null", path);
	FILE *f = popen(cmd, "r");
	cr_assert(f, "cannot run objdump");
	while (fgets(line, sizeof(line), f)) {
		char *tab1 = strchr(line, '\t');
		char *tab2 = tab1 ? strchr(tab1 + 1, '\t') : NULL;
		if (!tab1 || !tab2 || strstr(tab2, "(bad)") || strstr(line, "<internal disassembler error>"))
			continue;
		uint8_t bytes[16];
		size_t n = 0;
		for (char *p = tab1 + 1; p < tab2 && n < sizeof(bytes);) {
			unsigned v;
			int used;
			if (sscanf(p, "%2x%n", &v, &used) != 1)
				break;
			bytes[n++] = (uint8_t)v;
			p += used;
			while (*p == ' ')
				p++;
		}
		if (!n)
			continue;
		t->insns++;
		/* objdump shows fwait (9b) joined to the x87 instruction after it. */
		size_t skip = n > 1 && bytes[0] == 0x9b && insn_length(bytes, n) == 1 ? 1 : 0;
		int len = insn_length(bytes + skip, n - skip);
		if (len >= 0)
			len += (int)skip;
		if (len < 0) {
			t->unknown++;
		} else if ((size_t)len != n) {
			if (t->wrong++ < 10)
				cr_log_error("%s: length %d, objdump %zu: %s", path, len, n, tab1 + 1);
		}
	}
	pclose(f);
}

Test(preload_insn, agrees_with_objdump_on_real_code)
{
	const char *objs[] = { "/usr/lib/x86_64-linux-gnu/liburing.so.2", "/lib/x86_64-linux-gnu/libc.so.6",
			       "/lib/x86_64-linux-gnu/libm.so.6" };
	struct tally t = { 0 };
	for (size_t i = 0; i < sizeof(objs) / sizeof(objs[0]); i++)
		check_object(objs[i], &t);
	cr_log_info("%lu instructions, %lu unknown, %lu wrong", t.insns, t.unknown, t.wrong);
	cr_assert_gt(t.insns, 100000, "objdump gave too few instructions (%lu)", t.insns);
	cr_assert_eq(t.wrong, 0, "%lu instructions decoded to a different length", t.wrong);
	/* Unknown only for encodings compilers do not emit. */
	cr_assert_lt(t.unknown * 1000, t.insns, "%lu of %lu unknown", t.unknown, t.insns);
}

Test(preload_insn, never_reads_past_the_end)
{
	/* A truncated instruction is unknown, not a length beyond what is there. */
	const uint8_t mov_imm[] = { 0xb8, 0xaa, 0x01, 0x00, 0x00 };
	cr_assert_eq(insn_length(mov_imm, 5), 5);
	for (size_t n = 0; n < 5; n++)
		cr_assert_eq(insn_length(mov_imm, n), -1, "avail %zu", n);
	const uint8_t movabs[] = { 0x48, 0xb8, 1, 2, 3, 4, 5, 6, 7, 8 };
	cr_assert_eq(insn_length(movabs, 10), 10);
	cr_assert_eq(insn_length(movabs, 9), -1);
}

/*
 * What a stub may run in another place between the load of the call number
 * and the syscall: the three argument loads liburing's inline enter puts
 * there, and nothing whose meaning depends on where it runs or that would
 * change the number in %eax.
 */
Test(preload_insn, movable_between_load_and_syscall)
{
	static const struct {
		uint8_t b[10];
		size_t len;
		int movable;
		const char *what;
	} c[] = {
		{ { 0x8b, 0xbd, 0xcc, 0x00, 0x00, 0x00 }, 6, 1, "mov 0xcc(%rbp),%edi" },
		{ { 0x4d, 0x8b, 0x46, 0x18 }, 4, 1, "mov 0x18(%r14),%r8" },
		{ { 0x4d, 0x63, 0x4e, 0x0c }, 4, 1, "movslq 0xc(%r14),%r9" },
		{ { 0x4c, 0x8b, 0x4c, 0x24, 0xf8 }, 5, 1, "mov -0x8(%rsp),%r9" },
		{ { 0x4d, 0x8d, 0x12 }, 3, 1, "lea (%r10),%r10" },
		{ { 0x48, 0x85, 0xff }, 3, 1, "test %rdi,%rdi" },
		{ { 0x31, 0xd2 }, 2, 1, "xor %edx,%edx" },
		{ { 0x41, 0xb8, 0x08, 0x00, 0x00, 0x00 }, 6, 1, "mov $8,%r8d" },
		{ { 0x0f, 0xb6, 0xd1 }, 3, 1, "movzbl %cl,%edx" },
		{ { 0x44, 0x89, 0xc0 }, 3, 0, "mov %r8d,%eax" },
		{ { 0x8b, 0x3d, 0x00, 0x10, 0x00, 0x00 }, 6, 0, "mov 0x1000(%rip),%edi" },
		{ { 0x48, 0x8d, 0x35, 0x00, 0x10, 0x00, 0x00 }, 7, 0, "lea 0x1000(%rip),%rsi" },
		{ { 0x31, 0xc0 }, 2, 0, "xor %eax,%eax" },
		{ { 0x8b, 0x07 }, 2, 0, "mov (%rdi),%eax" },
		{ { 0xb8, 0x01, 0x00, 0x00, 0x00 }, 5, 0, "mov $1,%eax" },
		{ { 0x49, 0xb8, 1, 2, 3, 4, 5, 6, 7, 8 }, 10, 1, "movabs $...,%r8" },
		{ { 0x75, 0x02 }, 2, 0, "jne" },
		{ { 0xe8, 0, 0, 0, 0 }, 5, 0, "call" },
		{ { 0x41, 0x54 }, 2, 0, "push %r12" },
		{ { 0x66, 0x89, 0xd7 }, 3, 0, "mov %dx,%di (a 66 prefix)" },
		{ { 0xc7, 0xc2, 1, 0, 0, 0 }, 6, 1, "mov $1,%edx (c7 /0)" },
		{ { 0xc7, 0xc0, 1, 0, 0, 0 }, 6, 0, "mov $1,%eax (c7 /0)" },
		{ { 0x48, 0x8d, 0xc7 }, 3, 0, "lea with a register operand (invalid)" },
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		cr_expect_eq(insn_length(c[i].b, c[i].len), (int)c[i].len, "%s: length", c[i].what);
		cr_expect_eq(insn_movable(c[i].b, c[i].len), c[i].movable, "%s", c[i].what);
	}
}
