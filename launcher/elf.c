/*
 * ELF and #! inspection for the launcher.  The checks mirror what the kernel's
 * ELF loader insists on (e_type, e_phentsize, e_phnum bounds, a NUL-terminated
 * PT_INTERP of sane length), so a file reported as EXEC_DYNAMIC really would be
 * handed to a program interpreter, which is what makes LD_PRELOAD take effect.
 */
#include "launcher/elf.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The kernel refuses program header tables larger than this (fs/binfmt_elf.c). */
#define PHDR_TABLE_MAX 65536u
#define PHDR_BATCH 32

static ssize_t read_at(int fd, void *buf, size_t len, uint64_t off)
{
	size_t got = 0;
	if (off > (uint64_t)INT64_MAX - len)
		return 0;
	while (got < len) {
		ssize_t n = pread(fd, (char *)buf + got, len - got, (off_t)(off + got));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

/* Decoding by hand keeps a big-endian header readable on a little-endian host. */
static unsigned get16(const unsigned char *p, int msb)
{
	return msb ? (unsigned)p[0] << 8 | p[1] : (unsigned)p[1] << 8 | p[0];
}

static int malformed(struct exec_info *out, const char *fmt, ...)
{
	va_list ap;
	out->kind = EXEC_MALFORMED;
	va_start(ap, fmt);
	vsnprintf(out->why, sizeof(out->why), fmt, ap);
	va_end(ap);
	return 0;
}

static int inspect_phdrs(int fd, const Elf64_Ehdr *eh, struct exec_info *out)
{
	Elf64_Phdr ph[PHDR_BATCH];
	char interp[PATH_MAX];

	if (eh->e_phentsize != sizeof(Elf64_Phdr))
		return malformed(out, "program header entry size %u, expected %zu",
				 (unsigned)eh->e_phentsize, sizeof(Elf64_Phdr));
	if (eh->e_phnum < 1 || eh->e_phnum > PHDR_TABLE_MAX / sizeof(Elf64_Phdr))
		return malformed(out, "%u program headers", (unsigned)eh->e_phnum);
	if (eh->e_phoff > (uint64_t)INT64_MAX - PHDR_TABLE_MAX)
		return malformed(out, "program header offset out of range");
	/* The kernel reads the whole table before using any of it, so must we. */
	unsigned char last;
	ssize_t got = read_at(fd, &last, 1, eh->e_phoff + (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr) - 1);
	if (got < 0)
		return (int)got;
	if (got != 1)
		return malformed(out, "program header table runs past the end of the file");

	for (unsigned i = 0; i < eh->e_phnum; i += PHDR_BATCH) {
		unsigned n = eh->e_phnum - i < PHDR_BATCH ? eh->e_phnum - i : PHDR_BATCH;
		size_t want = n * sizeof(Elf64_Phdr);
		got = read_at(fd, ph, want, eh->e_phoff + (uint64_t)i * sizeof(Elf64_Phdr));
		if (got < 0)
			return (int)got;
		if ((size_t)got != want)
			return malformed(out, "program header table runs past the end of the file");
		for (unsigned j = 0; j < n; j++) {
			/* got == want: read_at filled all n entries. */
			if (ph[j].p_type != PT_INTERP) // NOLINT(clang-analyzer-core.UndefinedBinaryOperatorResult)
				continue;
			/* Same limits as the kernel, which fails the exec otherwise. */
			if (ph[j].p_filesz < 2 || ph[j].p_filesz > sizeof(interp))
				return malformed(out, "program interpreter path of %llu bytes",
						 (unsigned long long)ph[j].p_filesz);
			got = read_at(fd, interp, (size_t)ph[j].p_filesz, ph[j].p_offset);
			if (got < 0)
				return (int)got;
			if ((uint64_t)got != ph[j].p_filesz)
				return malformed(out, "program interpreter path runs past the end of the file");
			if (interp[ph[j].p_filesz - 1] != '\0')
				return malformed(out, "program interpreter path is not NUL-terminated");
			out->kind = EXEC_DYNAMIC;
			return 0;
		}
	}
	out->kind = EXEC_STATIC;
	return 0;
}

int exec_inspect_fd(int fd, struct exec_info *out)
{
	unsigned char id[sizeof(Elf64_Ehdr)];

	memset(out, 0, sizeof(*out));
	ssize_t got = read_at(fd, id, sizeof(id), 0);
	if (got < 0)
		return (int)got;
	if (got >= 2 && id[0] == '#' && id[1] == '!') {
		out->kind = EXEC_SCRIPT;
		return 0;
	}
	if (got < SELFMAG || memcmp(id, ELFMAG, SELFMAG)) {
		out->kind = EXEC_NOT_ELF;
		return 0;
	}
	if (got < EI_NIDENT)
		return malformed(out, "truncated ELF identification");

	out->elf_class = id[EI_CLASS];
	if (id[EI_CLASS] != ELFCLASS32 && id[EI_CLASS] != ELFCLASS64)
		return malformed(out, "unknown ELF class %u", id[EI_CLASS]);
	if (id[EI_DATA] != ELFDATA2LSB && id[EI_DATA] != ELFDATA2MSB)
		return malformed(out, "unknown ELF data encoding %u", id[EI_DATA]);

	int msb = id[EI_DATA] == ELFDATA2MSB;
	/* e_type and e_machine sit at the same offsets in both classes. */
	if (got < (ssize_t)offsetof(Elf64_Ehdr, e_version))
		return malformed(out, "truncated ELF header");
	out->type = get16(id + offsetof(Elf64_Ehdr, e_type), msb);
	out->machine = get16(id + offsetof(Elf64_Ehdr, e_machine), msb);

	if (out->type != ET_EXEC && out->type != ET_DYN)
		return malformed(out, "ELF type %u is not an executable%s", out->type,
				 out->type == ET_REL ? " (relocatable object)" :
				 out->type == ET_CORE ? " (core dump)" : "");
	if (id[EI_CLASS] == ELFCLASS32) {
		out->kind = EXEC_ELF32;
		return 0;
	}
	if (msb || out->machine != EM_X86_64) {
		out->kind = EXEC_FOREIGN;
		return 0;
	}
	if (got < (ssize_t)sizeof(Elf64_Ehdr))
		return malformed(out, "truncated ELF header");

	Elf64_Ehdr eh;
	memcpy(&eh, id, sizeof(eh));
	return inspect_phdrs(fd, &eh, out);
}

int exec_inspect_path(const char *path, struct exec_info *out)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		memset(out, 0, sizeof(*out));
		return -errno;
	}
	int r = exec_inspect_fd(fd, out);
	close(fd);
	return r;
}

const char *exec_machine_name(unsigned machine)
{
	switch (machine) {
	case EM_386: return "i386";
	case EM_X86_64: return "x86-64";
	case EM_ARM: return "arm";
	case EM_AARCH64: return "aarch64";
	case EM_RISCV: return "riscv";
	case EM_PPC: return "powerpc";
	case EM_PPC64: return "powerpc64";
	case EM_S390: return "s390";
	case EM_MIPS: return "mips";
	case EM_SPARCV9: return "sparc64";
	case EM_LOONGARCH: return "loongarch";
	default: return NULL;
	}
}
