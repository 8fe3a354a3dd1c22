/*
 * What kind of file is about to be exec'd.  LD_PRELOAD only works through the
 * dynamic loader, so a program without a PT_INTERP header (static or
 * static-pie) or built for another ABI would run with bufsel silently absent;
 * the launcher inspects the file first and refuses those with a clear message.
 * Everything here reads with pread() into fixed buffers and validates every
 * size against the file, because the file is arbitrary user input.
 */
#ifndef BUFSEL_LAUNCHER_ELF_H
#define BUFSEL_LAUNCHER_ELF_H

#include <stddef.h>

enum exec_kind {
	EXEC_NOT_ELF,	/* neither ELF nor #!: left to execvp (which may use /bin/sh) */
	EXEC_SCRIPT,	/* starts with #! */
	EXEC_DYNAMIC,	/* x86-64 ELF with a PT_INTERP header */
	EXEC_STATIC,	/* x86-64 ELF without PT_INTERP: static or static-pie */
	EXEC_ELF32,	/* 32-bit ELF: i386, x32 or another 32-bit machine */
	EXEC_FOREIGN,	/* 64-bit ELF for a machine other than x86-64, or big-endian */
	EXEC_MALFORMED,	/* ELF magic, but headers the kernel would reject */
};

struct exec_info {
	enum exec_kind kind;
	int elf_class;		/* ELFCLASS32/ELFCLASS64, 0 when not ELF */
	unsigned machine;	/* e_machine, 0 when unknown */
	unsigned type;		/* e_type (ET_EXEC, ET_DYN, ...), 0 when unknown */
	char why[96];		/* for EXEC_MALFORMED: what is wrong */
};

/* Inspects an open file; fills *out and returns 0, or -errno if reading failed. */
int exec_inspect_fd(int fd, struct exec_info *out);

/* Opens path read-only and inspects it; returns 0 or -errno (e.g. -EACCES). */
int exec_inspect_path(const char *path, struct exec_info *out);

/* A short name for an ELF e_machine value, for messages; NULL when unknown. */
const char *exec_machine_name(unsigned machine);

#endif
