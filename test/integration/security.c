/*
 * Safe to load into any process (docs/security.md): each test runs a program
 * natively and under bufsel in a hostile setting and asks that the program's
 * stdout and exit status be the native ones, and that bufsel read or write
 * nothing it must not.
 *
 *   stats        BUFSEL_STATS naming a symbolic link (its target untouched),
 *                a FIFO (no hang), /dev/full, a directory, a path under
 *                ulimit -f 1, a name with control bytes; a regular file is
 *                0600 and no temporary file is left beside it;
 *   limits       ulimit -f 1 at io_uring_setup, ulimit -s 64 in the
 *                constructor; (the process_vm_readv-denying sandbox is
 *                sec_novm in compare's table); a child whose bufsel cannot
 *                initialise under its parent's filter (init_fail);
 *   wx           no mapping writable and executable at once: programs
 *                under PR_SET_MDWE and under a MemoryDenyWriteExecute
 *                filter (sec_mdwe, sec_wx_filter, also in compare's table)
 *                get their sites rewritten; where /proc/self/mem is closed
 *                to the program, its calls stay on the trap, said once;
 *   exec         what bufsel installs does not outlive execve: a root
 *                process under bufsel execs a setuid-root io_uring program
 *                as nobody (root only); an unprivileged process under bufsel
 *                has no no_new_privs; the seccomp fallback's gate is at a
 *                random address, Syscall User Dispatch maps none (the
 *                exec'd io_uring and python3 mmap children are
 *                exec_uring_nopreload in compare's table);
 *   secure       a setuid-root copy of a program run by nobody, bufsel
 *                installed as a setuid library in the system directory:
 *                BUFSEL_CONF=/etc/shadow shows nothing, BUFSEL_STATS creates
 *                nothing, BUFSEL_LOG=debug and fault injection do nothing.
 *                Root only; everything it installs is removed after.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test/integration/harness.h"

#define RUN_TIMEOUT 20
#define VARS(...) ((const char *const[]){ __VA_ARGS__, NULL })

static char dir[64];

static void rm_tree(const char *d)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", d);
}

static void tmp_setup(void)
{
	strcpy(dir, "/tmp/bufsel-security-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static void tmp_teardown(void)
{
	rm_tree(dir);
}

/*
 * Runs build/test/prog/<prog> natively or under the library, through
 * "/bin/sh -c 'SHELL; exec prog'" when shell is given (ulimit), with vars
 * added to a clean environment.
 */
static void run(struct run *r, bool preload, const char *shell, const char *prog,
		const char *const *vars)
{
	static char lib[4200], exe[4096], script[512];
	size_t nvars = 0, k;
	for (const char *const *v = vars; v && *v; v++)
		nvars++;
	char **env = harness_env(nvars + 3, &k);
	env[k++] = "BUFSEL_CONF=";
	const char *asan = harness_asan_runtime();
	if (preload) {
		snprintf(lib, sizeof(lib), "LD_PRELOAD=%s%s%s", asan ? asan : "", asan ? ":" : "",
			 harness_built(0, "libbufsel.so"));
		env[k++] = lib;
	}
	for (const char *const *v = vars; v && *v; v++)
		env[k++] = (char *)*v;
	env[k] = NULL;
	snprintf(exe, sizeof(exe), "test/prog/%s", prog);
	snprintf(exe, sizeof(exe), "%s", harness_built(1, exe));
	char *argv[5] = { exe, NULL, NULL, NULL, NULL };
	if (shell) {
		snprintf(script, sizeof(script), "%s; exec \"$0\"", shell);
		argv[0] = "/bin/sh";
		argv[1] = "-c";
		argv[2] = script;
		argv[3] = exe;
	}
	harness_run(r, argv, env, RUN_TIMEOUT);
}

/* The bufsel run printed what the native one did and ended the same way. */
static void expect_as_native(const struct run *native, const struct run *shim, const char *what)
{
	cr_assert(!native->timed_out, "%s: the native run timed out", what);
	cr_assert(!shim->timed_out, "%s: the bufsel run hung (timed out after %d s)\n--- stderr ---\n%s", what,
		  RUN_TIMEOUT, harness_tail(shim->err, shim->err_len, 4000));
	cr_assert_eq(shim->status, native->status, "%s: status 0x%x, natively 0x%x\n--- stderr ---\n%s", what,
		     shim->status, native->status, harness_tail(shim->err, shim->err_len, 2000));
	cr_assert(shim->out_len == native->out_len && !memcmp(shim->out, native->out, native->out_len),
		  "%s: stdout differs from the native run\n--- bufsel ---\n%s\n--- native ---\n%s", what,
		  harness_tail(shim->out, shim->out_len, 1500), harness_tail(native->out, native->out_len, 1500));
}

/* prog (with buffer groups, so there is a report) with BUFSEL_STATS=path. */
static void stats_run_prog(const char *prog, const char *path, const char *shell, struct run *native,
			   struct run *shim)
{
	static char var[4200];
	snprintf(var, sizeof(var), "BUFSEL_STATS=%s", path);
	run(native, false, shell, prog, NULL);
	run(shim, true, shell, prog, VARS(var));
	expect_as_native(native, shim, path);
}

static void stats_run(const char *path, const char *shell, struct run *native, struct run *shim)
{
	stats_run_prog("pol_stats", path, shell, native, shim);
}

static int count_lines(const char *s, const char *needle)
{
	int n = 0;
	for (const char *p = s; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

/* Entries in d other than those named in keep (NULL-terminated). */
static int extra_entries(const char *d, const char *const *keep)
{
	DIR *dp = opendir(d);
	cr_assert_not_null(dp, "%s: %s", d, strerror(errno));
	int n = 0;
	struct dirent *e;
	while ((e = readdir(dp))) {
		bool known = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
		for (const char *const *k = keep; k && *k; k++)
			known |= !strcmp(e->d_name, *k);
		n += !known;
	}
	closedir(dp);
	return n;
}

TestSuite(stats, .init = tmp_setup, .fini = tmp_teardown);

Test(stats, a_regular_file_is_written_0600_through_a_rename, .timeout = 60)
{
	struct run native = { 0 }, shim = { 0 };
	char path[128];
	struct stat st;
	snprintf(path, sizeof(path), "%s/s.json", dir);
	stats_run(path, NULL, &native, &shim);
	cr_assert_eq(stat(path, &st), 0, "%s not written\n%s", path, shim.err);
	cr_assert_eq(st.st_mode & 07777, 0600, "mode %o", st.st_mode & 07777);
	cr_assert_eq(extra_entries(dir, VARS("s.json")), 0, "a temporary file was left in %s", dir);
	/* An existing regular file is replaced whole. */
	stats_run(path, NULL, &native, &shim);
	cr_assert_eq(extra_entries(dir, VARS("s.json")), 0);
	cr_assert_eq(count_lines(shim.err, "bufsel: stats:"), 0, "%s", shim.err);
	harness_free(&native);
	harness_free(&shim);
}

Test(stats, a_symbolic_link_is_not_followed, .timeout = 60)
{
	struct run native = { 0 }, shim = { 0 };
	char target[128], link[128], buf[64] = { 0 };
	snprintf(target, sizeof(target), "%s/target", dir);
	snprintf(link, sizeof(link), "%s/link", dir);
	FILE *f = fopen(target, "w");
	cr_assert_not_null(f);
	fputs("precious\n", f);
	fclose(f);
	cr_assert_eq(symlink(target, link), 0);
	stats_run(link, NULL, &native, &shim);
	f = fopen(target, "r");
	cr_assert_not_null(f);
	cr_assert_eq(fread(buf, 1, sizeof(buf) - 1, f), 9);
	fclose(f);
	cr_assert_str_eq(buf, "precious\n", "the link's target was written");
	struct stat st;
	cr_assert_eq(lstat(link, &st), 0);
	cr_assert(S_ISLNK(st.st_mode));
	cr_assert_eq(count_lines(shim.err, "bufsel: stats:"), 1, "%s", shim.err);
	cr_assert_eq(extra_entries(dir, VARS("target", "link")), 0);
	harness_free(&native);
	harness_free(&shim);
}

Test(stats, a_fifo_does_not_hang_the_program, .timeout = 60)
{
	struct run native = { 0 }, shim = { 0 };
	char fifo[128];
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	stats_run(fifo, NULL, &native, &shim);
	cr_assert_eq(count_lines(shim.err, "bufsel: stats:"), 1, "%s", shim.err);
	harness_free(&native);
	harness_free(&shim);
}

Test(stats, dev_full_and_a_directory_are_reported_once, .timeout = 60)
{
	struct run native = { 0 }, shim = { 0 };
	stats_run("/dev/full", NULL, &native, &shim);
	cr_assert_eq(count_lines(shim.err, "bufsel: stats:"), 1, "%s", shim.err);
	stats_run(dir, NULL, &native, &shim);
	cr_assert_eq(count_lines(shim.err, "bufsel: stats:"), 1, "%s", shim.err);
	harness_free(&native);
	harness_free(&shim);
}

Test(stats, a_file_size_limit_raises_no_signal, .timeout = 60)
{
	struct run native = { 0 }, shim = { 0 };
	char path[128];
	snprintf(path, sizeof(path), "%s/s.json", dir);
	stats_run(path, "ulimit -f 1", &native, &shim);
	cr_assert_eq(native.status, 0);
	/* A limit the shadow rings fit in but bs_groups' report (35 KB) does not:
	 * cut short by bufsel, reported, nothing left behind, no signal. */
	stats_run_prog("bs_groups", path, "ulimit -S -f 16", &native, &shim);
	cr_assert_eq(native.status, 0);
	cr_assert_not_null(strstr(shim.err, "s.json: cannot write: File too large"), "%s", shim.err);
	cr_assert_eq(extra_entries(dir, NULL), 0, "a file was left in %s", dir);
	harness_free(&native);
	harness_free(&shim);
}

Test(stats, the_path_is_printed_with_control_bytes_escaped, .timeout = 60)
{
	struct run native = { 0 }, shim = { 0 };
	char path[128];
	snprintf(path, sizeof(path), "%s/no\x1b[31mdir/s.json", dir);
	stats_run(path, NULL, &native, &shim);
	cr_assert_eq(count_lines(shim.err, "bufsel: stats:"), 1, "%s", shim.err);
	cr_assert_null(memchr(shim.err, 0x1b, shim.err_len), "a raw escape byte on stderr");
	cr_assert_not_null(strstr(shim.err, "no\\x1b[31mdir"), "%s", shim.err);
	harness_free(&native);
	harness_free(&shim);
}

TestSuite(limits);

Test(limits, io_uring_setup_under_ulimit_f_1, .timeout = 60)
{
	struct run native = { 0 }, shim = { 0 };
	run(&native, false, "ulimit -f 1", "nop_batch", NULL);
	run(&shim, true, "ulimit -f 1", "nop_batch", NULL);
	cr_assert_eq(native.status, 0);
	expect_as_native(&native, &shim, "nop_batch under ulimit -f 1");
	harness_free(&native);
	harness_free(&shim);
}

Test(limits, the_constructor_fits_in_a_64_KiB_stack, .timeout = 60)
{
	struct run native = { 0 }, shim = { 0 };
	const char *progs[] = { "nop_batch", "pol_stats" };
	for (size_t i = 0; i < 2; i++) {
		run(&native, false, "ulimit -s 64", progs[i], NULL);
		run(&shim, true, "ulimit -s 64", progs[i], VARS("BUFSEL_LOG=info"));
		cr_assert_eq(native.status, 0);
		expect_as_native(&native, &shim, progs[i]);
		cr_assert_not_null(strstr(shim.err, "bufsel: exit:"), "bufsel not loaded:\n%s", shim.err);
	}
	harness_free(&native);
	harness_free(&shim);
}

/*
 * A child whose bufsel cannot map its trampoline (another library took the
 * page) under the filter its parent's bufsel installed with trap = seccomp
 * (the fallback; under Syscall User Dispatch nothing is inherited): init_fail.  It must
 * live, map its file, and meet io_uring as a kernel without it (-ENOSYS):
 * the only address the inherited filter lets io_uring calls through from is
 * the page the child does not have.  Natively it runs its NOPs.
 */
Test(limits, a_child_whose_bufsel_cannot_initialise_survives_the_inherited_filter, .timeout = 60)
{
	struct run native = { 0 }, shim = { 0 };
	run(&native, false, NULL, "init_fail", NULL);
	run(&shim, true, NULL, "init_fail", VARS("BUFSEL_LOG=info", "BUFSEL_TRAP=seccomp"));
	cr_assert_eq(native.status, 0);
	cr_assert_not_null(strstr(native.err, "init_fail child: 4 NOPs completed"), "native:\n%s", native.err);
	expect_as_native(&native, &shim, "init_fail");
	cr_assert_not_null(strstr(shim.err, "bufsel: cannot map the trampoline"), "bufsel did initialise:\n%s",
			   shim.err);
	cr_assert_not_null(strstr(shim.err, "init_fail child: io_uring_queue_init: -ENOSYS"), "%s", shim.err);
	cr_assert_eq(count_lines(shim.err, "bufsel: exit:"), 2, "%s", shim.err);
	harness_free(&native);
	harness_free(&shim);
}

/* ---- write xor execute ------------------------------------------------------------------ */

TestSuite(wx);

/* The smallest and the largest "sites=N" over the exit reports in err; their number. */
static int sites_range(const char *err, unsigned long *lo, unsigned long *hi)
{
	int n = 0;
	*lo = ~0ul;
	*hi = 0;
	for (const char *p = err; (p = strstr(p, "bufsel: exit:")); p++) {
		const char *s = strstr(p, " sites=");
		const char *nl = strchr(p, '\n');
		cr_assert(s && (!nl || s < nl), "exit report without sites=: %s", p);
		unsigned long v = strtoul(s + 7, NULL, 10);
		*lo = v < *lo ? v : *lo;
		*hi = v > *hi ? v : *hi;
		n++;
	}
	return n;
}

/*
 * The hardened programs' own checks (their output, as native) say that no
 * mapping was writable and executable at any point they looked; here: every
 * process of theirs had its liburing site rewritten, so rewriting needed
 * nothing their hardening refuses (had it, bufsel would have stayed on the
 * trap and said so), and nothing said it was refused.
 */
Test(wx, sites_are_rewritten_under_mdwe_and_a_memory_deny_write_execute_filter, .timeout = 60)
{
	const char *progs[] = { "sec_mdwe", "sec_wx_filter" };
	for (size_t i = 0; i < 2; i++) {
		struct run native = { 0 }, shim = { 0 };
		unsigned long lo, hi;
		run(&native, false, NULL, progs[i], NULL);
		run(&shim, true, NULL, progs[i], VARS("BUFSEL_LOG=info"));
		cr_assert_eq(native.status, 0, "%s natively:\n%s", progs[i], native.err);
		expect_as_native(&native, &shim, progs[i]);
		cr_assert_eq(sites_range(shim.err, &lo, &hi), 2, "%s: not two exit reports:\n%s", progs[i], shim.err);
		cr_assert_geq(lo, 1, "%s: a process with no site rewritten:\n%s", progs[i], shim.err);
		cr_assert_null(strstr(shim.err, "site patching off"), "%s:\n%s", progs[i], shim.err);
		cr_assert_not_null(strstr(shim.out, "writable and executable mappings seen while the calls were made: 0"),
				   "%s", shim.out);
		harness_free(&native);
		harness_free(&shim);
	}
}

/*
 * A non-dumpable process of an ordinary user may not open /proc/self/mem
 * (its /proc files belong to root): bufsel cannot rewrite a site there, so
 * every call is answered through the trap, as correctly, and one info line
 * says so.
 */
Test(wx, where_proc_self_mem_is_closed_calls_stay_on_the_trap, .timeout = 60)
{
	if (access("/usr/bin/setpriv", X_OK) || geteuid() != 0)
		cr_skip_test("needs root and setpriv");
	const char *nobody = "exec /usr/bin/setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all "
			     "\"$0\" nodump";
	struct run native = { 0 }, shim = { 0 };
	unsigned long lo, hi;
	run(&native, false, nobody, "sec_mdwe", NULL);
	run(&shim, true, nobody, "sec_mdwe", VARS("BUFSEL_LOG=info"));
	cr_assert_eq(native.status, 0, "natively:\n%s", native.err);
	expect_as_native(&native, &shim, "sec_mdwe nodump as nobody");
	cr_assert_eq(count_lines(shim.err, "bufsel: site patching off: /proc/self/mem: Permission denied; "
					   "io_uring calls stay on the trap path"),
		     1, "%s", shim.err);
	cr_assert_eq(sites_range(shim.err, &lo, &hi), 1, "%s", shim.err);
	cr_assert_eq(hi, 0, "a site was rewritten:\n%s", shim.err);
	cr_assert_null(strstr(shim.err, " trapped=0 "), "%s", shim.err);
	harness_free(&native);
	harness_free(&shim);
}

/* ---- secure-execution mode ------------------------------------------------------------ */

#define SYSLIB_DIR "/usr/lib/x86_64-linux-gnu"
static char suid_dir[64], stats_dir[64], syslib[128], libname[64];

static void suid_cleanup(void)
{
	if (syslib[0])
		unlink(syslib);
	if (suid_dir[0])
		rm_tree(suid_dir);
	if (stats_dir[0])
		rm_tree(stats_dir);
}

static void copy_file(const char *from, const char *to, mode_t mode)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", from, to);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	cr_assert_eq(chown(to, 0, 0), 0);
	cr_assert_eq(chmod(to, mode), 0, "chmod %s: %s", to, strerror(errno));
}

/* As nobody, through setpriv and env (so that neither loads bufsel), exe
 * with vars; preload: with bufsel's setuid library. */
static void run_as_nobody(struct run *r, const char *exe, bool preload, const char *const *vars)
{
	static char ld[128];
	char *argv[32] = { "/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
			   "--inh-caps=-all", "/usr/bin/env" };
	size_t n = 6, k;
	if (preload) {
		snprintf(ld, sizeof(ld), "LD_PRELOAD=%s", libname);
		argv[n++] = ld;
	}
	for (const char *const *v = vars; v && *v && n < 30; v++)
		argv[n++] = (char *)*v;
	argv[n++] = (char *)exe;
	argv[n] = NULL;
	char **env = harness_env(0, &k);
	env[k] = NULL;
	harness_run(r, argv, env, RUN_TIMEOUT);
}

TestSuite(secure, .fini = suid_cleanup);

Test(secure, a_setuid_program_takes_nothing_from_the_environment, .timeout = 60)
{
	if (geteuid() != 0)
		cr_skip_test("needs root: a setuid-root copy of a program and a setuid library");
	if (harness_asan_runtime())
		cr_skip_test("ld.so does not preload the ASan runtime into a setuid program");
	if (access("/usr/bin/setpriv", X_OK) || access(SYSLIB_DIR, W_OK))
		cr_skip_test("needs setpriv and " SYSLIB_DIR);

	strcpy(suid_dir, "/tmp/bufsel-suid-XXXXXX");
	cr_assert_not_null(mkdtemp(suid_dir));
	cr_assert_eq(chmod(suid_dir, 0755), 0);
	strcpy(stats_dir, "/tmp/bufsel-suid-stats-XXXXXX");
	cr_assert_not_null(mkdtemp(stats_dir));
	cr_assert_eq(chmod(stats_dir, 0777), 0);
	/* A name of its own, so that concurrent runs do not meet; removed by suid_cleanup. */
	snprintf(libname, sizeof(libname), "libbufsel-test-%d.so", (int)getpid());
	snprintf(syslib, sizeof(syslib), SYSLIB_DIR "/%s", libname);
	/* ld.so preloads into a setuid program only a setuid library of a system directory. */
	copy_file(harness_built(0, "libbufsel.so"), syslib, 04755);
	char exe[128];
	snprintf(exe, sizeof(exe), "%s/sec_probe", suid_dir);
	copy_file(harness_built(1, "test/prog/sec_probe"), exe, 04755);

	static char stats_var[128];
	snprintf(stats_var, sizeof(stats_var), "BUFSEL_STATS=%s/x", stats_dir);
	struct run native = { 0 }, shim = { 0 }, plain = { 0 };
	run_as_nobody(&native, exe, false, NULL);
	run_as_nobody(&shim, exe, true,
		      VARS("BUFSEL_CONF=/etc/shadow", stats_var, "BUFSEL_LOG=debug", "BUFSEL_FAIL_ALLOC=1",
			   "BUFSEL_NO_SUCH_KEY=1", "HOME=/root", "XDG_CONFIG_HOME=/etc"));
	expect_as_native(&native, &shim, "setuid sec_probe");
	cr_assert_not_null(strstr(native.out, "note secure 1"), "not in secure-execution mode:\n%s", native.out);
	cr_assert_str_eq(native.err, "bufsel mapped 0\n");
	/* bufsel was there, and said nothing: not a line of /etc/shadow, no debug, no problem. */
	cr_assert_str_eq(shim.err, "bufsel mapped 1\n");
	cr_assert_eq(extra_entries(stats_dir, NULL), 0, "BUFSEL_STATS created a file");

	/* The control: without setuid, the same variables are taken (and /etc/shadow refused). */
	char plain_exe[128];
	snprintf(plain_exe, sizeof(plain_exe), "%s/sec_probe_plain", suid_dir);
	copy_file(harness_built(1, "test/prog/sec_probe"), plain_exe, 0755);
	static char ld[4200];
	snprintf(ld, sizeof(ld), "LD_PRELOAD=%s", harness_built(0, "libbufsel.so"));
	run_as_nobody(&plain, plain_exe, false, VARS(ld, "BUFSEL_CONF=/etc/shadow"));
	cr_assert_not_null(strstr(plain.err, "/etc/shadow: cannot open: Permission denied"), "%s", plain.err);
	cr_assert_null(strstr(plain.err, "root:"));
	harness_free(&native);
	harness_free(&shim);
	harness_free(&plain);
}

/* ---- what outlives exec ---------------------------------------------------------------- */

static char exec_dir[64];

static void exec_cleanup(void)
{
	if (exec_dir[0])
		rm_tree(exec_dir);
}

TestSuite(exec, .fini = exec_cleanup);

/*
 * A root process under bufsel (setpriv, which loads it through LD_PRELOAD)
 * execs a setuid-root io_uring program as nobody.  ld.so does not preload
 * bufsel into it (secure-execution mode, not a system library), so it runs
 * without bufsel: natively in every respect, and not killed at io_uring_setup
 * by a trap bufsel left in the kernel.
 */
Test(exec, a_root_process_under_bufsel_execs_a_setuid_io_uring_program, .timeout = 60)
{
	if (geteuid() != 0)
		cr_skip_test("needs root: a setuid-root copy of a program");
	if (access("/usr/bin/setpriv", X_OK))
		cr_skip_test("needs setpriv");
	strcpy(exec_dir, "/tmp/bufsel-exec-XXXXXX");
	cr_assert_not_null(mkdtemp(exec_dir));
	cr_assert_eq(chmod(exec_dir, 0755), 0);
	char exe[128];
	snprintf(exe, sizeof(exe), "%s/sec_probe", exec_dir);
	copy_file(harness_built(1, "test/prog/sec_probe"), exe, 04755);

	static char lib[4200];
	const char *asan = harness_asan_runtime();
	snprintf(lib, sizeof(lib), "LD_PRELOAD=%s%s%s", asan ? asan : "", asan ? ":" : "",
		 harness_built(0, "libbufsel.so"));
	char *argv[] = { "/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
			 "--inh-caps=-all", exe, NULL };
	struct run native = { 0 }, shim = { 0 };
	size_t k;
	char **env = harness_env(2, &k);
	env[k++] = "BUFSEL_CONF=";
	env[k] = NULL;
	harness_run(&native, argv, env, RUN_TIMEOUT);
	env = harness_env(3, &k);
	env[k++] = "BUFSEL_CONF=";
	env[k++] = lib;
	env[k] = NULL;
	harness_run(&shim, argv, env, RUN_TIMEOUT);
	cr_assert_eq(native.status, 0, "native: 0x%x\n%s", native.status, native.err);
	cr_assert_not_null(strstr(native.out, "note secure 1"), "not in secure-execution mode:\n%s", native.out);
	expect_as_native(&native, &shim, "setuid sec_probe exec'd by setpriv under bufsel");
	cr_assert_str_eq(shim.err, "bufsel mapped 0\n");
	harness_free(&native);
	harness_free(&shim);
}

/* stderr line "<key> <value>" of gate_addr; the value's text, or "". */
static const char *field(const char *err, const char *key, char *buf, size_t len)
{
	const char *p = strstr(err, key);
	buf[0] = 0;
	if (p && sscanf(p + strlen(key), " %63[^\n]", buf) == 1 && strlen(buf) < len)
		return buf;
	return buf;
}

/*
 * Where bufsel's own system calls come from.  Under Syscall User Dispatch (the
 * default here) a `syscall; ret` inside libc: no page of bufsel's, no filter
 * to ask.  Under the seccomp fallback a page at a random address, read and
 * execute only, which the filter names: two runs, two addresses.  Neither
 * maps the fixed page of old (0x200000000000).
 */
Test(exec, the_gate_is_libc_s_or_at_a_random_address, .timeout = 60)
{
	struct run a = { 0 }, b = { 0 }, d = { 0 };
	char ga[64], gb[64], buf[64];
	run(&a, true, NULL, "gate_addr", VARS("BUFSEL_TRAP=seccomp"));
	run(&b, true, NULL, "gate_addr", VARS("BUFSEL_TRAP=seccomp"));
	run(&d, true, NULL, "gate_addr", NULL);
	cr_assert_eq(a.status, 0, "%s", a.err);
	cr_assert_eq(b.status, 0, "%s", b.err);
	cr_assert_eq(d.status, 0, "%s", d.err);
	field(a.err, "gate", ga, sizeof(ga));
	field(b.err, "gate", gb, sizeof(gb));
	/* r-x, private or (a sealed memfd page, codemem.c) shared: never w. */
	cr_assert((strstr(ga, " r-xp") || strstr(ga, " r-xs")) && (strstr(gb, " r-xp") || strstr(gb, " r-xs")),
		  "seccomp gate not a read-execute page:\n%s\n%s", a.err, b.err);
	cr_assert_str_neq(ga, gb, "the same gate address in two runs: %s", ga);
	cr_assert_str_eq(field(d.err, "gate", buf, sizeof(buf)), "none", "%s", d.err);
	cr_assert_str_eq(field(a.err, "fixed page mapped", buf, sizeof(buf)), "0", "%s", a.err);
	cr_assert_str_eq(field(d.err, "fixed page mapped", buf, sizeof(buf)), "0", "%s", d.err);
	harness_free(&a);
	harness_free(&b);
	harness_free(&d);
}

/*
 * An unprivileged process under bufsel keeps its no_new_privs bit clear, so
 * the setuid programs it runs gain their privileges as natively.  The
 * seccomp fallback cannot: without CAP_SYS_ADMIN the kernel installs a
 * filter only with no_new_privs set (the control).
 */
Test(exec, an_unprivileged_process_under_bufsel_keeps_no_new_privs_clear, .timeout = 60)
{
	if (geteuid() != 0)
		cr_skip_test("needs root to become nobody");
	if (access("/usr/bin/setpriv", X_OK))
		cr_skip_test("needs setpriv");
	static char ld[4200];
	const char *asan = harness_asan_runtime();
	snprintf(ld, sizeof(ld), "LD_PRELOAD=%s%s%s", asan ? asan : "", asan ? ":" : "",
		 harness_built(0, "libbufsel.so"));
	struct run native = { 0 }, shim = { 0 }, fallback = { 0 };
	const char *exe = harness_built(1, "test/prog/gate_addr");
	char buf[64];
	run_as_nobody(&native, exe, false, NULL);
	run_as_nobody(&shim, exe, false, VARS(ld, "BUFSEL_CONF="));
	run_as_nobody(&fallback, exe, false, VARS(ld, "BUFSEL_CONF=", "BUFSEL_TRAP=seccomp"));
	expect_as_native(&native, &shim, "gate_addr as nobody");
	cr_assert_str_eq(field(native.err, "no_new_privs", buf, sizeof(buf)), "0", "%s", native.err);
	cr_assert_str_eq(field(shim.err, "no_new_privs", buf, sizeof(buf)), "0", "%s", shim.err);
	cr_assert_str_eq(field(fallback.err, "no_new_privs", buf, sizeof(buf)), "1", "%s", fallback.err);
	harness_free(&native);
	harness_free(&shim);
	harness_free(&fallback);
}
