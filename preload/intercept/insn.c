#include "preload/intercept/insn.h"

#include <stdbool.h>

/* One bit per opcode of a 256-entry map. */
#define BIT(tab, op) (((tab)[(op) >> 5] >> ((op) & 31)) & 1u)

/*
 * One-byte map: opcodes with a ModRM byte.  00-3f: the ALU rows' first four
 * columns; 62/c4/c5 never get here (EVEX/VEX in 64-bit mode).
 */
static const uint32_t one_modrm[8] = {
	0x0f0f0f0f, 0x0f0f0f0f,	/* 00-3f */
	0x00000000,		/* 40-5f: REX, push, pop */
	0x00000a08,		/* 63 movsxd, 69 imul, 6b imul */
	0x0000ffff,		/* 80-8f (82 is invalid and never emitted) */
	0x00000000,		/* a0-bf */
	0xff0f00c3,		/* c0 c1 c6 c7, d0-d3, d8-df */
	0xc0c00000,		/* f6 f7, fe ff */
};

/* Two-byte map (0f xx): opcodes WITHOUT a ModRM byte; everything else has one. */
static const uint32_t two_no_modrm[8] = {
	0x00004be0,		/* 05 06 07 08 09 0b 0e */
	0x00ff0000,		/* 30-37 */
	0x00000000,		/* 40-5f */
	0x00800000,		/* 77 emms */
	0x0000ffff,		/* 80-8f jcc */
	0x00000707,		/* a0 a1 a2, a8 a9 aa */
	0x0000ff00,		/* c8-cf bswap */
	0,
};

/* Two-byte map: opcodes with an imm8 (70-73, a4, ac, ba, c2, c4-c6). */
static const uint32_t two_imm8[8] = {
	0, 0, 0, 0x000f0000, 0, 0x04001010, 0x00000074, 0,
};

/* Bytes taken by ModRM, SIB and displacement starting at p, or -1. */
static int modrm_length(const uint8_t *p, size_t avail)
{
	if (avail < 1)
		return -1;
	unsigned m = p[0], mod = m >> 6, rm = m & 7;
	int n = 1;
	if (mod == 3)
		return n;
	if (rm == 4) {
		if (avail < 2)
			return -1;
		if (mod == 0 && (p[1] & 7) == 5)
			n += 4;
		n++;
	} else if (mod == 0 && rm == 5) {
		n += 4;		/* RIP-relative */
	}
	if (mod == 1)
		n += 1;
	else if (mod == 2)
		n += 4;
	return n;
}

/* VEX/EVEX-encoded instruction: map (1: 0f, 2: 0f38, 3: 0f3a), opcode at p. */
static int vex_tail(const uint8_t *p, size_t avail, unsigned map)
{
	if (avail < 1 || map < 1 || map > 3)
		return -1;
	unsigned op = p[0];
	if (map == 1 && op == 0x77)
		return 1;	/* vzeroupper / vzeroall */
	int m = modrm_length(p + 1, avail - 1);
	if (m < 0)
		return -1;
	int imm = map == 3 || (map == 1 && BIT(two_imm8, op)) ? 1 : 0;
	return 1 + m + imm;
}

int insn_length(const uint8_t *p, size_t avail)
{
	size_t i = 0;
	bool opsize = false, rex_w = false, addr32 = false;
	for (;; i++) {
		if (i >= avail || i >= 14)
			return -1;
		uint8_t b = p[i];
		if (b == 0x66)
			opsize = true;
		else if (b == 0x67)
			addr32 = true;
		else if (!(b == 0xf0 || b == 0xf2 || b == 0xf3 || b == 0x2e || b == 0x36 || b == 0x3e ||
			   b == 0x26 || b == 0x64 || b == 0x65))
			break;
	}
	if ((p[i] & 0xf0) == 0x40) {
		rex_w = p[i] & 8;
		if (++i >= avail)
			return -1;
	}
	unsigned op = p[i++];
	int r, immz = opsize ? 2 : 4;

	if (op == 0xc5 || op == 0xc4 || op == 0x62) {
		size_t payload = op == 0xc5 ? 1 : op == 0xc4 ? 2 : 3;
		if (i + payload > avail)
			return -1;
		unsigned map = op == 0xc5 ? 1 : p[i] & (op == 0x62 ? 0x07 : 0x1f);
		r = vex_tail(p + i + payload, avail - i - payload, map);
		return r < 0 ? -1 : (int)(i + payload) + r;
	}
	if (op == 0x0f) {
		if (i >= avail)
			return -1;
		unsigned op2 = p[i++];
		if (op2 == 0x38 || op2 == 0x3a) {
			if (i >= avail)
				return -1;
			i++;
			r = modrm_length(p + i, avail - i);
			return r < 0 ? -1 : (int)i + r + (op2 == 0x3a);
		}
		if (op2 == 0x0f || op2 == 0x04 || op2 == 0x0a || op2 == 0x0c || op2 == 0x24 || op2 == 0x26)
			return -1;
		if (op2 >= 0x80 && op2 <= 0x8f)
			return (int)i + 4;
		if (BIT(two_no_modrm, op2))
			return (int)i;
		r = modrm_length(p + i, avail - i);
		return r < 0 ? -1 : (int)i + r + (int)BIT(two_imm8, op2);
	}

	/* Opcodes invalid in 64-bit mode, and ones no compiler emits. */
	if (op == 0x06 || op == 0x07 || op == 0x0e || op == 0x16 || op == 0x17 || op == 0x1e ||
	    op == 0x1f || op == 0x27 || op == 0x2f || op == 0x37 || op == 0x3f || op == 0x60 ||
	    op == 0x61 || op == 0x82 || op == 0x9a || op == 0xce || op == 0xd4 || op == 0xd5 ||
	    op == 0xd6 || op == 0xea)
		return -1;
	if (op == 0x8f && i < avail && ((p[i] >> 3) & 7))
		return -1;	/* XOP */

	int imm = 0;
	if (op < 0x40 && (op & 7) == 5)
		imm = immz;
	else if (op == 0x68 || op == 0x69 || op == 0x81 || op == 0xa9 || op == 0xc7 || op == 0xe8 ||
		 op == 0xe9)
		imm = (op == 0xe8 || op == 0xe9) ? 4 : immz;
	else if ((op < 0x40 && (op & 7) == 4) || op == 0x6a || op == 0x6b || (op >= 0x70 && op <= 0x7f) ||
		 op == 0x80 || op == 0x83 || op == 0xa8 || (op >= 0xb0 && op <= 0xb7) || op == 0xc0 ||
		 op == 0xc1 || op == 0xc6 || op == 0xcd || (op >= 0xe0 && op <= 0xe7) || op == 0xeb)
		imm = 1;
	else if (op >= 0xb8 && op <= 0xbf)
		imm = rex_w ? 8 : immz;
	else if (op == 0xc2 || op == 0xca)
		imm = 2;
	else if (op == 0xc8)
		imm = 3;
	else if (op >= 0xa0 && op <= 0xa3)
		imm = addr32 ? 4 : 8;	/* moffs */

	if (BIT(one_modrm, op)) {
		r = modrm_length(p + i, avail - i);
		if (r < 0)
			return -1;
		if ((op == 0xf6 || op == 0xf7) && ((p[i] >> 3) & 7) < 2)
			imm = op == 0xf6 ? 1 : immz;
		i += (size_t)r;
	}
	return i + (size_t)imm <= avail ? (int)i + imm : -1;
}

int insn_movable(const uint8_t *p, size_t len)
{
	size_t i = 0;
	unsigned rex = 0;
	if (len && (p[0] & 0xf0) == 0x40)
		rex = p[i++];
	if (i >= len)
		return 0;
	unsigned op = p[i++], writes;	/* writes: 1 the ModRM reg, 2 the ModRM r/m, 0 neither */
	if (op >= 0xb8 && op <= 0xbf)	/* mov $imm,%reg: the register is in the opcode */
		return ((op & 7) | (rex & 1) << 3) != 0;
	if (op == 0x0f) {
		if (i >= len)
			return 0;
		op = 0x100 | p[i++];
	}
	switch (op) {
	case 0x89: case 0x31: case 0xc7:		/* mov, xor r/m <- reg; mov r/m <- imm32 */
		writes = 2;
		break;
	case 0x8b: case 0x33: case 0x63: case 0x8d:	/* mov, xor, movsxd, lea reg <- r/m */
	case 0x1b6: case 0x1b7: case 0x1be: case 0x1bf:	/* movzx, movsx */
		writes = 1;
		break;
	case 0x85:					/* test */
		writes = 0;
		break;
	default:
		return 0;
	}
	if (i >= len)
		return 0;
	unsigned modrm = p[i], mod = modrm >> 6, reg = (modrm >> 3 & 7) | (rex & 4) << 1,
		 rm = (modrm & 7) | (rex & 1) << 3;
	if (op == 0xc7 && (modrm >> 3 & 7))
		return 0;
	if (mod == 0 && (modrm & 7) == 5)
		return 0;	/* RIP-relative */
	if (op == 0x8d && mod == 3)
		return 0;
	if ((writes == 1 && reg == 0) || (writes == 2 && mod == 3 && rm == 0))
		return 0;
	return 1;
}
