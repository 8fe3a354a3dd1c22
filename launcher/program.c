/*
 * Finding PROGRAM and deciding whether bufsel can reach it.  The launcher
 * resolves PATH itself, instead of leaving that to execvp(), so the file it
 * inspects is the file that gets executed.
 */
#include "launcher/program.h"

#include "launcher/elf.h"
#include "launcher/launcher.h"
#include "launcher/messages.h"

#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* 0 when path is an executable regular file, else why execve() would fail. */
static int candidate(const char *path)
{
	struct stat st;
	if (stat(path, &st))
		return errno;
	if (S_ISDIR(st.st_mode))
		return EISDIR;
	if (!S_ISREG(st.st_mode) || access(path, X_OK))
		return EACCES;
	return 0;
}

int program_resolve(const char *file, char *out, size_t len)
{
	char dflt[256];
	size_t flen = strlen(file);

	if (!flen)
		return ENOENT;
	if (strchr(file, '/')) {
		if (flen >= len)
			return ENAMETOOLONG;
		memcpy(out, file, flen + 1);
		return candidate(out);
	}

	const char *path = getenv("PATH");
	if (!path) {
		size_t n = confstr(_CS_PATH, dflt, sizeof(dflt));
		path = n && n <= sizeof(dflt) ? dflt : "/bin:/usr/bin";
	}

	int denied = 0;
	for (const char *p = path;; p++) {
		size_t dlen = strcspn(p, ":");
		int n = dlen ? snprintf(out, len, "%.*s/%s", (int)dlen, p, file)
			     : snprintf(out, len, "./%s", file);
		if (n > 0 && (size_t)n < len) {
			int err = candidate(out);
			if (!err)
				return 0;
			/* execvp() likewise skips entries it may not use and reports EACCES at the end. */
			if (err == EACCES || err == EISDIR)
				denied = 1;
		}
		p += dlen;
		if (!*p)
			break;
	}
	return denied ? EACCES : ENOENT;
}

static void refuse_elf32(const char *name, unsigned machine)
{
	if (machine == EM_386)
		fail(EXIT_CANNOT_RUN, "%s: 32-bit x86 executable: bufsel supports x86-64 programs only; "
		     "run it natively", name);
	if (machine == EM_X86_64)
		fail(EXIT_CANNOT_RUN, "%s: x32 (32-bit x86-64 ABI) executable: bufsel supports 64-bit "
		     "x86-64 programs only; run it natively", name);
	const char *m = exec_machine_name(machine);
	if (m)
		fail(EXIT_CANNOT_RUN, "%s: 32-bit %s executable: bufsel supports x86-64 programs only",
		     name, m);
	fail(EXIT_CANNOT_RUN, "%s: 32-bit executable for ELF machine %u: bufsel supports x86-64 "
	     "programs only", name, machine);
}

int program_check(const char *name, const char *path)
{
	struct exec_info info;
	struct stat st;

	int r = exec_inspect_path(path, &info);
	if (r) {
		/* Execute-only files cannot be read but can still be run. */
		say(BUFSEL_LOG_WARN, "bufsel: %s: cannot read it to check how it is linked (%s); "
		    "running it anyway", name, strerror(-r));
		return 0;
	}
	switch (info.kind) {
	case EXEC_NOT_ELF:
	case EXEC_DYNAMIC:
		break;
	case EXEC_SCRIPT:
		return 1;
	case EXEC_STATIC:
		fail(EXIT_CANNOT_RUN, "%s: statically linked executable (no program interpreter): "
		     "LD_PRELOAD cannot load bufsel into it; rebuild it dynamically or run it natively",
		     name);
	case EXEC_ELF32:
		refuse_elf32(name, info.machine);
		break;
	case EXEC_FOREIGN: {
		const char *m = exec_machine_name(info.machine);
		if (m)
			fail(EXIT_CANNOT_RUN, "%s: %s executable: bufsel supports x86-64 programs only; "
			     "run it natively", name, m);
		fail(EXIT_CANNOT_RUN, "%s: executable for ELF machine %u: bufsel supports x86-64 "
		     "programs only; run it natively", name, info.machine);
	}
	case EXEC_MALFORMED:
		fail(EXIT_CANNOT_RUN, "%s: not a valid executable: %s", name, info.why);
	}

	/* The loader runs set-ID programs in secure mode, which ignores LD_PRELOAD paths. */
	if (!stat(path, &st) && ((st.st_mode & S_ISUID && st.st_uid != getuid()) ||
				 (st.st_mode & S_ISGID && st.st_gid != getgid())))
		say(BUFSEL_LOG_WARN, "bufsel: warning: %s is set-user-ID or set-group-ID: the dynamic "
		    "loader ignores LD_PRELOAD for it, so it will run without bufsel", name);
	return 0;
}
