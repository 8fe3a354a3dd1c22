/*
 * The launcher's ELF check (launcher/elf.c): static and static-pie programs
 * must be refused, dynamic ones and scripts let through, and no file, however
 * truncated or hostile, may crash the inspection or pass as dynamic.
 */
#include "launcher/elf.h"

#include <criterion/criterion.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[] = "/tmp/bufsel-elf-XXXXXX";

static void setup(void)
{
	strcpy(dir, "/tmp/bufsel-elf-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[64];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(launcher_elf, .init = setup, .fini = teardown);

static const char *tmp_path(const char *name)
{
	static char path[256];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return path;
}

static const char *write_file(const char *name, const void *buf, size_t len)
{
	const char *path = tmp_path(name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	cr_assert_geq(fd, 0, "open %s: %s", path, strerror(errno));
	cr_assert_eq(write(fd, buf, len), (ssize_t)len);
	close(fd);
	return path;
}

static struct exec_info inspect(const char *path)
{
	struct exec_info info;
	int r = exec_inspect_path(path, &info);
	cr_assert_eq(r, 0, "inspect %s: %s", path, strerror(-r));
	return info;
}

static struct exec_info inspect_buf(const void *buf, size_t len)
{
	return inspect(write_file("crafted", buf, len));
}

/*
 * A minimal x86-64 ELF image: header, program headers from offset 64 (a
 * PT_LOAD, then PT_INTERP when interp is set), the interpreter path at 0x400.
 */
#define IMG_SIZE 0x1000
#define INTERP_OFF 0x400
static const char interp_path[] = "/lib64/ld-linux-x86-64.so.2";

struct image {
	union {
		unsigned char bytes[IMG_SIZE];
		Elf64_Ehdr eh;
	};
};

static Elf64_Phdr *phdr(struct image *img, unsigned i)
{
	return (Elf64_Phdr *)(img->bytes + img->eh.e_phoff + i * sizeof(Elf64_Phdr));
}

static void build(struct image *img, unsigned type, int interp)
{
	memset(img, 0, sizeof(*img));
	Elf64_Ehdr *eh = &img->eh;
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = (Elf64_Half)type;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_phoff = sizeof(Elf64_Ehdr);
	eh->e_ehsize = sizeof(Elf64_Ehdr);
	eh->e_phentsize = sizeof(Elf64_Phdr);
	eh->e_phnum = interp ? 2 : 1;
	*phdr(img, 0) = (Elf64_Phdr){ .p_type = PT_LOAD, .p_flags = PF_R | PF_X,
				       .p_filesz = IMG_SIZE, .p_memsz = IMG_SIZE, .p_align = 0x1000 };
	if (interp) {
		memcpy(img->bytes + INTERP_OFF, interp_path, sizeof(interp_path));
		*phdr(img, 1) = (Elf64_Phdr){ .p_type = PT_INTERP, .p_flags = PF_R,
					       .p_offset = INTERP_OFF, .p_filesz = sizeof(interp_path),
					       .p_memsz = sizeof(interp_path), .p_align = 1 };
	}
}

static void expect_kind(struct image *img, size_t len, enum exec_kind kind)
{
	struct exec_info info = inspect_buf(img->bytes, len);
	cr_assert_eq(info.kind, kind, "kind %d, expected %d (%s)", info.kind, kind, info.why);
}

/* ---- crafted headers ---- */

Test(launcher_elf, crafted_static_exec)
{
	struct image img;
	build(&img, ET_EXEC, 0);
	struct exec_info info = inspect_buf(img.bytes, sizeof(img.bytes));
	cr_assert_eq(info.kind, EXEC_STATIC);
	cr_assert_eq(info.elf_class, ELFCLASS64);
	cr_assert_eq(info.machine, EM_X86_64);
	cr_assert_eq(info.type, ET_EXEC);
}

Test(launcher_elf, crafted_static_pie)
{
	struct image img;
	build(&img, ET_DYN, 0);
	struct exec_info info = inspect_buf(img.bytes, sizeof(img.bytes));
	cr_assert_eq(info.kind, EXEC_STATIC);
	cr_assert_eq(info.type, ET_DYN);
}

Test(launcher_elf, crafted_dynamic)
{
	struct image img;
	build(&img, ET_DYN, 1);
	expect_kind(&img, sizeof(img.bytes), EXEC_DYNAMIC);
	build(&img, ET_EXEC, 1);
	expect_kind(&img, sizeof(img.bytes), EXEC_DYNAMIC);
}

Test(launcher_elf, interp_found_past_first_batch_of_headers)
{
	struct image img;
	build(&img, ET_DYN, 1);
	Elf64_Phdr interp = *phdr(&img, 1);
	img.eh.e_phnum = 40;
	for (unsigned i = 1; i < 39; i++)
		*phdr(&img, i) = (Elf64_Phdr){ .p_type = PT_NOTE };
	*phdr(&img, 39) = interp;
	cr_assert_lt(img.eh.e_phoff + 40 * sizeof(Elf64_Phdr), (uint64_t)INTERP_OFF + 0x800);
	memmove(img.bytes + 0x800, img.bytes + INTERP_OFF, sizeof(interp_path));
	phdr(&img, 39)->p_offset = 0x800;
	expect_kind(&img, sizeof(img.bytes), EXEC_DYNAMIC);
}

Test(launcher_elf, i386_and_x32_are_elf32)
{
	Elf32_Ehdr eh = { 0 };
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS32;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_type = ET_EXEC;
	eh.e_machine = EM_386;
	struct exec_info info = inspect_buf(&eh, sizeof(eh));
	cr_assert_eq(info.kind, EXEC_ELF32);
	cr_assert_eq(info.machine, EM_386);

	eh.e_machine = EM_X86_64;
	info = inspect_buf(&eh, sizeof(eh));
	cr_assert_eq(info.kind, EXEC_ELF32);
	cr_assert_eq(info.machine, EM_X86_64);
}

Test(launcher_elf, other_machines_are_foreign)
{
	struct image img;
	build(&img, ET_DYN, 1);
	img.eh.e_machine = EM_AARCH64;
	struct exec_info info = inspect_buf(img.bytes, sizeof(img.bytes));
	cr_assert_eq(info.kind, EXEC_FOREIGN);
	cr_assert_str_eq(exec_machine_name(info.machine), "aarch64");

	/* Big-endian: e_type and e_machine must be decoded in that byte order. */
	build(&img, ET_EXEC, 1);
	img.eh.e_ident[EI_DATA] = ELFDATA2MSB;
	img.bytes[16] = 0, img.bytes[17] = ET_EXEC;
	img.bytes[18] = 0, img.bytes[19] = EM_PPC64;
	info = inspect_buf(img.bytes, sizeof(img.bytes));
	cr_assert_eq(info.kind, EXEC_FOREIGN);
	cr_assert_eq(info.machine, EM_PPC64);
	cr_assert_eq(info.type, ET_EXEC);
}

Test(launcher_elf, non_executable_elf_types_are_malformed)
{
	static const unsigned types[] = { ET_NONE, ET_REL, ET_CORE, 0xfe00 };
	struct image img;
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		build(&img, types[i], 1);
		expect_kind(&img, sizeof(img.bytes), EXEC_MALFORMED);
	}
}

Test(launcher_elf, bad_identification_is_malformed)
{
	struct image img;
	build(&img, ET_DYN, 1);
	img.eh.e_ident[EI_CLASS] = ELFCLASSNONE;
	expect_kind(&img, sizeof(img.bytes), EXEC_MALFORMED);
	img.eh.e_ident[EI_CLASS] = 3;
	expect_kind(&img, sizeof(img.bytes), EXEC_MALFORMED);
	build(&img, ET_DYN, 1);
	img.eh.e_ident[EI_DATA] = ELFDATANONE;
	expect_kind(&img, sizeof(img.bytes), EXEC_MALFORMED);
}

Test(launcher_elf, hostile_program_header_table)
{
	struct image img;
	static const uint64_t offsets[] = {
		UINT64_MAX, UINT64_MAX - 8, (uint64_t)INT64_MAX, (uint64_t)INT64_MAX - 100,
		IMG_SIZE, IMG_SIZE - sizeof(Elf64_Phdr) + 1,
	};
	for (size_t i = 0; i < sizeof(offsets) / sizeof(offsets[0]); i++) {
		build(&img, ET_DYN, 1);
		img.eh.e_phoff = offsets[i];
		expect_kind(&img, sizeof(img.bytes), EXEC_MALFORMED);
	}

	static const unsigned counts[] = { 0, 1171, PN_XNUM };
	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		build(&img, ET_DYN, 1);
		img.eh.e_phnum = (Elf64_Half)counts[i];
		expect_kind(&img, sizeof(img.bytes), EXEC_MALFORMED);
	}

	static const unsigned sizes[] = { 0, 1, sizeof(Elf32_Phdr), sizeof(Elf64_Phdr) + 8, 0xffff };
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		build(&img, ET_DYN, 1);
		img.eh.e_phentsize = (Elf64_Half)sizes[i];
		expect_kind(&img, sizeof(img.bytes), EXEC_MALFORMED);
	}

	/* The largest table the kernel accepts, all of it past the end of the file. */
	build(&img, ET_DYN, 1);
	img.eh.e_phnum = 1170;
	expect_kind(&img, sizeof(img.bytes), EXEC_MALFORMED);
}

Test(launcher_elf, hostile_interpreter_header)
{
	struct image img;
	static const uint64_t sizes[] = { 0, 1, 4097, UINT64_MAX, (uint64_t)INT64_MAX };
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		build(&img, ET_DYN, 1);
		phdr(&img, 1)->p_filesz = sizes[i];
		expect_kind(&img, sizeof(img.bytes), EXEC_MALFORMED);
	}
	static const uint64_t offsets[] = { IMG_SIZE, IMG_SIZE - 4, UINT64_MAX, (uint64_t)INT64_MAX };
	for (size_t i = 0; i < sizeof(offsets) / sizeof(offsets[0]); i++) {
		build(&img, ET_DYN, 1);
		phdr(&img, 1)->p_offset = offsets[i];
		expect_kind(&img, sizeof(img.bytes), EXEC_MALFORMED);
	}
	build(&img, ET_DYN, 1);
	phdr(&img, 1)->p_filesz = sizeof(interp_path) - 1;
	expect_kind(&img, sizeof(img.bytes), EXEC_MALFORMED);
}

Test(launcher_elf, every_truncation_of_a_crafted_dynamic_image)
{
	struct image img;
	build(&img, ET_DYN, 1);
	size_t whole = INTERP_OFF + sizeof(interp_path);
	for (size_t len = 0; len < whole; len++) {
		struct exec_info info = inspect_buf(img.bytes, len);
		enum exec_kind want = len < SELFMAG ? EXEC_NOT_ELF : EXEC_MALFORMED;
		cr_assert_eq(info.kind, want, "length %zu: kind %d (%s)", len, info.kind, info.why);
	}
	expect_kind(&img, whole, EXEC_DYNAMIC);
}

Test(launcher_elf, random_corruption_never_crashes)
{
	struct image img, bad;
	build(&img, ET_DYN, 1);
	srand(12345);
	for (int iter = 0; iter < 3000; iter++) {
		bad = img;
		int flips = 1 + rand() % 8;
		for (int f = 0; f < flips; f++) {
			/* Mostly hit the headers, where the offsets and counts live. */
			size_t at = rand() % 4 ? (size_t)rand() % (64 + 2 * sizeof(Elf64_Phdr))
					       : (size_t)rand() % IMG_SIZE;
			bad.bytes[at] = (unsigned char)rand();
		}
		size_t len = rand() % 4 ? IMG_SIZE : (size_t)rand() % IMG_SIZE;
		struct exec_info info = inspect_buf(bad.bytes, len);
		cr_assert(info.kind >= EXEC_NOT_ELF && info.kind <= EXEC_MALFORMED);
		cr_assert(memchr(info.why, '\0', sizeof(info.why)));
	}
}

/* ---- scripts and other files ---- */

Test(launcher_elf, scripts)
{
	static const char sh[] = "#!/bin/sh\necho hi\n";
	cr_assert_eq(inspect_buf(sh, sizeof(sh) - 1).kind, EXEC_SCRIPT);
	cr_assert_eq(inspect_buf("#!", 2).kind, EXEC_SCRIPT);
	cr_assert_eq(inspect_buf("#! /usr/bin/env python3\n", 24).kind, EXEC_SCRIPT);
}

Test(launcher_elf, not_elf)
{
	cr_assert_eq(inspect_buf("", 0).kind, EXEC_NOT_ELF);
	cr_assert_eq(inspect_buf("#", 1).kind, EXEC_NOT_ELF);
	cr_assert_eq(inspect_buf("\177EL", 3).kind, EXEC_NOT_ELF);
	cr_assert_eq(inspect_buf("\177elf and more text", 18).kind, EXEC_NOT_ELF);
	cr_assert_eq(inspect_buf("echo hello\n", 11).kind, EXEC_NOT_ELF);
	static const unsigned char zeros[128];
	cr_assert_eq(inspect_buf(zeros, sizeof(zeros)).kind, EXEC_NOT_ELF);
}

Test(launcher_elf, elf_magic_alone_is_malformed)
{
	cr_assert_eq(inspect_buf(ELFMAG, SELFMAG).kind, EXEC_MALFORMED);
}

Test(launcher_elf, unreadable_paths_report_errors)
{
	struct exec_info info;
	cr_assert_eq(exec_inspect_path(tmp_path("missing"), &info), -ENOENT);
	cr_assert_lt(exec_inspect_path(dir, &info), 0);
}

Test(launcher_elf, machine_names)
{
	cr_assert_str_eq(exec_machine_name(EM_386), "i386");
	cr_assert_str_eq(exec_machine_name(EM_X86_64), "x86-64");
	cr_assert_null(exec_machine_name(0xbeef));
}

/* ---- real binaries ---- */

static const char *copy_prefix(const char *src, size_t len)
{
	static unsigned char buf[8192];
	int fd = open(src, O_RDONLY);
	cr_assert_geq(fd, 0);
	cr_assert_leq(len, sizeof(buf));
	cr_assert_eq(read(fd, buf, len), (ssize_t)len);
	close(fd);
	return write_file("prefix", buf, len);
}

Test(launcher_elf, bin_true_is_dynamic)
{
	if (access("/bin/true", R_OK))
		cr_skip_test("/bin/true is not readable here");
	struct exec_info info = inspect("/bin/true");
	cr_assert_eq(info.kind, EXEC_DYNAMIC, "kind %d (%s)", info.kind, info.why);
	cr_assert_eq(info.machine, EM_X86_64);
}

Test(launcher_elf, truncated_bin_true)
{
	struct stat st;
	if (stat("/bin/true", &st) || access("/bin/true", R_OK))
		cr_skip_test("/bin/true is not readable here");
	static const size_t lens[] = { 4, 10, 16, 20, 40, 63, 64, 100 };
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		struct exec_info info = inspect(copy_prefix("/bin/true", lens[i]));
		cr_assert_eq(info.kind, EXEC_MALFORMED, "length %zu: kind %d", lens[i], info.kind);
	}
	/* Any prefix either still lacks something or already holds the PT_INTERP path. */
	size_t max = st.st_size < 8192 ? (size_t)st.st_size : 8192;
	for (size_t len = 0; len <= max; len += 7) {
		struct exec_info info = inspect(copy_prefix("/bin/true", len));
		cr_assert(info.kind == EXEC_NOT_ELF || info.kind == EXEC_MALFORMED ||
			  info.kind == EXEC_DYNAMIC, "length %zu: kind %d", len, info.kind);
		if (len < sizeof(Elf64_Ehdr))
			cr_assert_neq(info.kind, EXEC_DYNAMIC);
	}
}

static int compile(const char *flags, const char *out)
{
	char src[256], cmd[1024];
	snprintf(src, sizeof(src), "%s", tmp_path("prog.c"));
	static const char prog[] = "int main(void) { return 0; }\n";
	write_file("prog.c", prog, sizeof(prog) - 1);
	snprintf(cmd, sizeof(cmd), "cc %s -o '%s' '%s' >/dev/null 2>&1", flags, tmp_path(out), src);
	return system(cmd);
}

Test(launcher_elf, real_static_executable)
{
	if (compile("-static", "static"))
		cr_skip_test("cc -static is unavailable (no static libc?)");
	struct exec_info info = inspect(tmp_path("static"));
	cr_assert_eq(info.kind, EXEC_STATIC, "kind %d (%s)", info.kind, info.why);
	cr_assert_eq(info.type, ET_EXEC);
}

Test(launcher_elf, real_static_pie_executable)
{
	if (compile("-static-pie", "static-pie"))
		cr_skip_test("cc -static-pie is unavailable");
	struct exec_info info = inspect(tmp_path("static-pie"));
	cr_assert_eq(info.kind, EXEC_STATIC, "kind %d (%s)", info.kind, info.why);
	cr_assert_eq(info.type, ET_DYN);
}

Test(launcher_elf, real_dynamic_executable)
{
	if (compile("", "dynamic"))
		cr_skip_test("cc is unavailable");
	cr_assert_eq(inspect(tmp_path("dynamic")).kind, EXEC_DYNAMIC);
}
