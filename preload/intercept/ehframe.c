#define _GNU_SOURCE
#include "preload/intercept/ehframe.h"

#include <errno.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>

/* DWARF pointer encodings, the subset GNU ld and gcc produce. */
enum {
	PE_ABSPTR = 0x00, PE_UDATA4 = 0x03, PE_SDATA4 = 0x0b, PE_UDATA8 = 0x04, PE_SDATA8 = 0x0c,
	PE_PCREL = 0x10, PE_DATAREL = 0x30, PE_OMIT = 0xff,
};

struct lookup {
	uintptr_t pc;
	struct code_range *out;
	int found;
};

static uint64_t uleb(const uint8_t **p, const uint8_t *end)
{
	uint64_t v = 0;
	for (unsigned shift = 0; *p < end && shift < 64; shift += 7) {
		uint8_t b = *(*p)++;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			break;
	}
	return v;
}

/* A pointer in encoding enc at *p (pc-relative to where it is stored); -1 if unsupported. */
static int read_ptr(const uint8_t **p, uint8_t enc, uintptr_t *out)
{
	uintptr_t base = (enc & 0x70) == PE_PCREL ? (uintptr_t)*p : 0;
	if ((enc & 0x70) != PE_PCREL && (enc & 0x70) != 0)
		return -1;
	int64_t v;
	switch (enc & 0x0f) {
	case PE_SDATA4: { int32_t x; memcpy(&x, *p, 4); v = x; *p += 4; break; }
	case PE_UDATA4: { uint32_t x; memcpy(&x, *p, 4); v = x; *p += 4; break; }
	case PE_ABSPTR:
	case PE_UDATA8:
	case PE_SDATA8: { memcpy(&v, *p, 8); *p += 8; break; }
	default:
		return -1;
	}
	*out = base + (uintptr_t)v;
	return 0;
}

/* The pointer encoding of an FDE's pc_begin, from its CIE's augmentation. */
static int cie_fde_encoding(const uint8_t *cie, uint8_t *enc)
{
	uint32_t len;
	memcpy(&len, cie, 4);
	if (len == 0 || len == 0xffffffffu)
		return -1;
	const uint8_t *p = cie + 8, *end = cie + 4 + len;
	uint8_t version = *p++;
	const char *aug = (const char *)p;
	p += strnlen(aug, (size_t)(end - p)) + 1;
	if (aug[0] != 'z' || strstr(aug, "eh"))
		return -1;
	uleb(&p, end);	/* code alignment */
	uleb(&p, end);	/* data alignment (sleb: only skipped) */
	if (version == 1)
		p++;
	else
		uleb(&p, end);
	uleb(&p, end);	/* augmentation data length */
	*enc = PE_ABSPTR;
	for (const char *a = aug + 1; *a && p < end; a++) {
		if (*a == 'R') {
			*enc = *p++;
		} else if (*a == 'L') {
			p++;
		} else if (*a == 'P') {
			uint8_t penc = *p++;
			uintptr_t ignored;
			if (read_ptr(&p, penc & 0x7f, &ignored))
				return -1;
		} else if (*a != 'S' && *a != 'B') {
			return -1;
		}
	}
	return 0;
}

static int search(struct dl_phdr_info *info, size_t size, void *data)
{
	struct lookup *l = data;
	const ElfW(Phdr) *load = NULL, *hdr = NULL;
	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t start = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && l->pc >= start && l->pc < start + ph->p_memsz)
			load = ph;
		else if (ph->p_type == PT_GNU_EH_FRAME)
			hdr = ph;
	}
	if (!load)
		return 0;
	l->found = -1;
	if (!hdr)
		return 1;
	const uint8_t *h = (const uint8_t *)(info->dlpi_addr + hdr->p_vaddr);
	/* version 1; the binary-search table as GNU ld writes it. */
	if (h[0] != 1 || h[2] != PE_UDATA4 || h[3] != (PE_DATAREL | PE_SDATA4))
		return 1;
	const uint8_t *p = h + 4;
	uintptr_t eh_frame;
	if (read_ptr(&p, h[1], &eh_frame))
		return 1;
	uint32_t count;
	memcpy(&count, p, 4);
	const int32_t *table = (const int32_t *)(p + 4);
	/* The last entry whose initial location is <= pc. */
	size_t lo = 0, hi = count;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if ((uintptr_t)h + (intptr_t)table[2 * mid] <= l->pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return 1;
	const uint8_t *fde = h + table[2 * (lo - 1) + 1];
	uint32_t len, cie_off;
	memcpy(&len, fde, 4);
	memcpy(&cie_off, fde + 4, 4);
	if (len == 0xffffffffu || !cie_off)
		return 1;
	uint8_t enc;
	if (cie_fde_encoding(fde + 4 - cie_off, &enc))
		return 1;
	const uint8_t *q = fde + 8;
	uintptr_t begin, range;
	if (read_ptr(&q, enc, &begin) || read_ptr(&q, enc & 0x0f, &range))
		return 1;
	if (l->pc < begin || l->pc >= begin + range)
		return 1;
	l->out->func_start = begin;
	l->out->func_end = begin + range;
	l->out->seg_start = info->dlpi_addr + load->p_vaddr;
	l->out->seg_end = l->out->seg_start + load->p_memsz;
	l->out->seg_prot = (load->p_flags & PF_R ? PROT_READ : 0) | (load->p_flags & PF_W ? PROT_WRITE : 0) |
			   (load->p_flags & PF_X ? PROT_EXEC : 0);
	l->found = 1;
	return 1;
}

int ehframe_lookup(uintptr_t pc, struct code_range *out)
{
	struct lookup l = { pc, out, 0 };
	dl_iterate_phdr(search, &l);
	return l.found == 1 ? 0 : -ENOENT;
}
