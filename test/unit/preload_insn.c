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
