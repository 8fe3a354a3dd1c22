/*
 * conf/: the configuration file.  Which file is read (BUFSEL_CONF, the
 * XDG/HOME user file, the system file), how it is read (size limit, regular
 * files only), its syntax (comments, blanks, CRLF, byte-order mark, keys
 * given twice) and the exact text of every problem.  Each test works in its
 * own temporary directory (Criterion runs each test in its own process, so
 * chdir is private to it) and names the system-wide file there, so nothing
 * outside the directory is read.
 */
#define _GNU_SOURCE /* nftw */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "conf/internal.h"
#include "conf/options.h"

static char dir[64];
static struct bufsel_conf c;
static char err[16384];

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

static void tmp_setup(void)
{
	strcpy(dir, "/tmp/bufsel-conf-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	cr_assert_eq(chdir(dir), 0);
}

static void tmp_teardown(void)
{
	if (chdir("/") == 0)
		nftw(dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
}

TestSuite(conf_file, .init = tmp_setup, .fini = tmp_teardown);

/* Writes len bytes to path (relative to the test's directory), making its directories. */
static void put(const char *path, const char *text, size_t len)
{
	char d[512];
	snprintf(d, sizeof(d), "%s", path);
	for (char *p = d + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		mkdir(d, 0755);
		*p = '/';
	}
	FILE *f = fopen(path, "wb");
	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	cr_assert_eq(fwrite(text, 1, len, f), len);
	fclose(f);
}

static void puts_file(const char *path, const char *text)
{
	put(path, text, strlen(text));
}

/* Loads with env (NULL-terminated) and the system file at ./etc/bufsel.conf. */
static int load_env(char **env)
{
	return conf_load_at(&c, env, "etc/bufsel.conf", err, sizeof(err));
}

/* Loads t.conf through BUFSEL_CONF, plus extra variables. */
static int load_text(const char *text, char *extra)
{
	puts_file("t.conf", text);
	char *env[] = { "BUFSEL_CONF=t.conf", extra, NULL };
	return load_env(env);
}

static void bad_text(const char *text, const char *expect)
{
	int n = load_text(text, NULL);
	cr_assert_eq(n, 1, "%d problems: %s", n, err);
	cr_assert_str_eq(err, expect);
}

Test(conf_file, every_key_from_the_file)
{
	cr_assert_eq(load_text("mode = passthrough\n"
			       "log = debug\n"
			       "kernel = 5.6\n"
			       "stats = /tmp/bufsel.stats\n"
			       "patch = off\n"
			       "trap = seccomp\n"
			       "fail_alloc = 12\n"
			       "rings = emulate\n"
			       "legacy = latest\n"
			       "cap = 64\n"
			       "max_len = 4096\n"
			       "enobufs_rate = 0.25\n"
			       "seed = 42\n"
			       "group.5.cap = 8\n"
			       "group.5.max_len = 100\n"
			       "group.5.enobufs_rate = 1\n"
			       "group.5.seed = 7\n",
			       NULL),
		     0, "%s", err);
	cr_assert_eq(c.mode, BUFSEL_MODE_PASSTHROUGH);
	cr_assert_eq(c.log, BUFSEL_LOG_DEBUG);
	cr_assert_eq(c.kernel, 0x506);
	cr_assert_str_eq(c.stats, "/tmp/bufsel.stats");
	cr_assert_eq(c.patch, 0);
	cr_assert_eq(c.trap, BUFSEL_TRAP_SECCOMP);
	cr_assert_eq(c.fail_alloc, 12);
	cr_assert_eq(c.rings, BUFSEL_RINGS_EMULATE);
	cr_assert_eq(c.legacy, BUFSEL_LEGACY_LATEST);
	cr_assert_eq(c.all.cap, 64);
	cr_assert_eq(c.all.max_len, 4096);
	cr_assert_eq(c.all.enobufs_ppb, 250000000);
	cr_assert_eq(c.all.seed, 42);
	const struct conf_group *g = conf_group_get(&c, 5);
	cr_assert_eq(g->cap, 8);
	cr_assert_eq(g->max_len, 100);
	cr_assert_eq(g->enobufs_ppb, CONF_RATE_ONE);
	cr_assert_eq(g->seed, 7);
	for (size_t k = 0; k < CONF_KEYS; k++)
		cr_assert_eq(c.from[k], k + 1, "%s from line %u", conf_options[k].name, c.from[k]);
	cr_assert_eq(c.file_origin, CONF_FILE_ENV);
	cr_assert_str_eq(c.file, "t.conf");
	cr_assert_eq(conf_check(&c), 0);
}

Test(conf_file, comments_blank_lines_and_blanks_around_keys_and_values)
{
	cr_assert_eq(load_text("# a comment\n"
			       "\n"
			       "   # an indented comment\n"
			       "\t\n"
			       "  mode\t=  passthrough   \n"
			       "cap=5\n"
			       "stats = /tmp/a # b\n"
			       "log =\tinfo\t\n",
			       NULL),
		     0, "%s", err);
	cr_assert_eq(c.mode, BUFSEL_MODE_PASSTHROUGH);
	cr_assert_eq(c.from[CONF_MODE], 5);
	cr_assert_eq(c.all.cap, 5);
	/* '#' after a value is part of it. */
	cr_assert_str_eq(c.stats, "/tmp/a # b");
	cr_assert_eq(c.log, BUFSEL_LOG_INFO);
}

Test(conf_file, crlf_lines_read_like_lf_lines)
{
	cr_assert_eq(load_text("# windows\r\nmode = passthrough\r\n\r\ncap = 3 \r\nstats = /tmp/s\r\n", NULL), 0, "%s",
		     err);
	cr_assert_eq(c.mode, BUFSEL_MODE_PASSTHROUGH);
	cr_assert_eq(c.all.cap, 3);
	cr_assert_eq(c.from[CONF_CAP], 4);
	cr_assert_str_eq(c.stats, "/tmp/s");
}

Test(conf_file, last_line_without_newline_byte_order_mark_and_empty_file)
{
	cr_assert_eq(load_text("\xef\xbb\xbf" "cap = 9\nseed = 3", NULL), 0, "%s", err);
	cr_assert_eq(c.all.cap, 9);
	cr_assert_eq(c.all.seed, 3);
	cr_assert_eq(load_text("", NULL), 0);
	cr_assert_eq(c.file_origin, CONF_FILE_ENV);
	cr_assert_eq(c.all.seed, 1);
}

Test(conf_file, an_empty_stats_value_means_none)
{
	cr_assert_eq(load_text("stats =\n", NULL), 0, "%s", err);
	cr_assert_str_empty(c.stats);
	cr_assert_eq(c.from[CONF_STATS], 1);
	cr_assert_eq(load_text("stats = -\n", NULL), 0, "%s", err);
	cr_assert_str_eq(c.stats, "-");
}

Test(conf_file, a_key_given_twice_is_an_error)
{
	bad_text("cap = 1\nmode = emulate\ncap = 2\n",
		 "bufsel: t.conf:3: cap: already set on line 1 (a key may appear once in the file)\n");
	cr_assert_eq(c.all.cap, 1);
	bad_text("group.4.seed = 1\n\ngroup.4.seed = 1\n",
		 "bufsel: t.conf:3: group.4.seed: already set on line 1 (a key may appear once in the file)\n");
	/* The same key for all groups and for one group is not a duplicate. */
	cr_assert_eq(load_text("cap = 1\ngroup.4.cap = 2\ngroup.5.cap = 3\n", NULL), 0, "%s", err);
	/* A refused value still counts as given. */
	int n = load_text("cap = x\ncap = 2\n", NULL);
	cr_assert_eq(n, 2);
	cr_assert_str_eq(err, "bufsel: t.conf:1: cap: 'x' is not an integer in 0..65535\n"
			      "bufsel: t.conf:2: cap: already set on line 1 (a key may appear once in the file)\n");
}

Test(conf_file, unknown_keys_and_sections_are_errors)
{
	static const char keys[] = "(keys: mode, log, kernel, stats, patch, trap, fail_alloc, rings, legacy, cap, max_len, enobufs_rate, seed; for one "
				   "group: group.<bgid>.cap|max_len|enobufs_rate|seed)";
	char want[512];
	static const char *const bad[] = { "foo", "Mode", "MODE", "group.5", "group.", "group.5.", "groups.5.cap",
					   "group.5.cap.x", "mode x", "max-len", "all.cap" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char text[64];
		snprintf(text, sizeof(text), "%s = 1\n", bad[i]);
		snprintf(want, sizeof(want), "bufsel: t.conf:1: %s: unknown key %s\n", bad[i], keys);
		bad_text(text, want);
	}
	snprintf(want, sizeof(want), "bufsel: t.conf:2: '[group 5]' is not 'key = value', a '#' comment or blank\n");
	bad_text("\n[group 5]\n", want);
}

Test(conf_file, lines_that_are_not_settings)
{
	bad_text("mode\n", "bufsel: t.conf:1: 'mode' is not 'key = value', a '#' comment or blank\n");
	bad_text("= 5\n", "bufsel: t.conf:1: '= 5' is not 'key = value', a '#' comment or blank\n");
	bad_text("  =\n", "bufsel: t.conf:1: '=' is not 'key = value', a '#' comment or blank\n");
	bad_text("cap = 1 \r\n\x01\x02\r\n", "bufsel: t.conf:2: '?" "?' is not 'key = value', a '#' comment or blank\n");
	put("t.conf", "cap = 1\nmode = emu\0late\n", 24);
	char *env[] = { "BUFSEL_CONF=t.conf", NULL };
	cr_assert_eq(load_env(env), 1);
	cr_assert_str_eq(err, "bufsel: t.conf:2: NUL byte in the line (the file is text)\n");
}

Test(conf_file, bad_values_name_file_line_key_and_accepted_values)
{
	int n = load_text("mode = fast\n"
			  "log = loud\n"
			  "kernel = 4.0\n"
			  "cap = 65536\n"
			  "max_len = -1\n"
			  "enobufs_rate = 0.5%\n"
			  "seed = 0x10\n"
			  "group.3.cap = abc\n"
			  "cap = \n",
			  NULL);
	cr_assert_eq(n, 9);
	cr_assert_str_eq(err, "bufsel: t.conf:1: mode: 'fast' is not one of emulate|passthrough\n"
			      "bufsel: t.conf:2: log: 'loud' is not one of error|warn|info|debug\n"
			      "bufsel: t.conf:3: kernel: '4.0' is not one of native|X.Y (5.1 or later)\n"
			      "bufsel: t.conf:4: cap: '65536' is not an integer in 0..65535\n"
			      "bufsel: t.conf:5: max_len: '-1' is not an integer in 0..2147483647\n"
			      "bufsel: t.conf:6: enobufs_rate: '0.5%' is not a decimal in 0..1 with at most 9 decimals, "
			      "such as 0.25\n"
			      "bufsel: t.conf:7: seed: '0x10' is not an integer in 0..18446744073709551615\n"
			      "bufsel: t.conf:8: group.3.cap: 'abc' is not an integer in 0..65535\n"
			      "bufsel: t.conf:9: cap: already set on line 4 (a key may appear once in the file)\n");
}

Test(conf_file, group_ids_in_keys)
{
	cr_assert_eq(load_text("group.0.cap = 1\ngroup.65535.cap = 2\n", NULL), 0, "%s", err);
	cr_assert_eq(conf_group_get(&c, 0)->cap, 1);
	cr_assert_eq(conf_group_get(&c, 65535)->cap, 2);
	static const char *const bad[] = { "65536", "05", "00", "-1", "+1", "x", "", "1 ", "99999999999" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char text[64], want[256];
		snprintf(text, sizeof(text), "group.%s.cap = 1\n", bad[i]);
		snprintf(want, sizeof(want),
			 "bufsel: t.conf:1: group.%s.cap: '%s' is not a group id (0..65535, decimal, no leading zero)\n",
			 bad[i], bad[i]);
		bad_text(text, want);
	}
	bad_text("group.5.mode = emulate\n", "bufsel: t.conf:1: group.5.mode: mode is not a per-group key (per-group "
					     "keys: cap, max_len, enobufs_rate, seed)\n");
	bad_text("group.5.stats = -\n", "bufsel: t.conf:1: group.5.stats: stats is not a per-group key (per-group "
					"keys: cap, max_len, enobufs_rate, seed)\n");
}

Test(conf_file, long_keys_and_values_are_quoted_short)
{
	char text[8192], want[1024];
	memset(text, 'k', 100);
	strcpy(text + 100, " = 1\n");
	snprintf(want, sizeof(want),
		 "bufsel: t.conf:1: %.64s...: unknown key (keys: mode, log, kernel, stats, patch, trap, fail_alloc, rings, legacy, cap, max_len, "
		 "enobufs_rate, seed; for one group: group.<bgid>.cap|max_len|enobufs_rate|seed)\n",
		 text);
	bad_text(text, want);
	strcpy(text, "stats = ");
	memset(text + 8, '/', 5000);
	strcpy(text + 5008, "\n");
	snprintf(want, sizeof(want), "bufsel: t.conf:1: stats: '%.64s...' is not a path shorter than 4096 bytes\n",
		 text + 8);
	bad_text(text, want);
}

Test(conf_file, every_problem_is_listed_one_line_each)
{
	int n = load_text("mode = x\nfoo = 1\njunk\ncap = 1\ncap = 2\n", "BUFSEL_LOG=loud");
	cr_assert_eq(n, 5);
	int lines = 0;
	for (const char *p = err; (p = strchr(p, '\n')); p++)
		lines++;
	cr_assert_eq(lines, 5);
	/* The file's problems come first, then the variables'. */
	cr_assert_not_null(strstr(err, "t.conf:5: cap: already set on line 4 (a key may appear once in the file)\n"
					"bufsel: BUFSEL_LOG: 'loud' is not one of error|warn|info|debug\n"));
}

Test(conf_file, a_file_of_64_KiB_is_read_a_longer_one_is_refused)
{
	static char text[CONF_FILE_MAX + 2];
	memset(text, '\n', sizeof(text));
	memcpy(text + CONF_FILE_MAX - 8, "cap = 7\n", 8);
	put("t.conf", text, CONF_FILE_MAX);
	char *env[] = { "BUFSEL_CONF=t.conf", NULL };
	cr_assert_eq(load_env(env), 0, "%s", err);
	cr_assert_eq(c.all.cap, 7);
	cr_assert_eq(c.from[CONF_CAP], CONF_FILE_MAX - 7);
	put("t.conf", text, CONF_FILE_MAX + 1);
	cr_assert_eq(load_env(env), 1);
	cr_assert_str_eq(err, "bufsel: t.conf: larger than 65536 bytes, the most bufsel reads\n");
	cr_assert_eq(c.all.cap, 0);
}

Test(conf_file, the_named_file_must_exist_and_be_a_regular_file)
{
	char *missing[] = { "BUFSEL_CONF=nothere.conf", NULL };
	cr_assert_eq(load_env(missing), 1);
	cr_assert_str_eq(err, "bufsel: nothere.conf: cannot open: No such file or directory (named by BUFSEL_CONF)\n");
	mkdir("d", 0755);
	char *isdir[] = { "BUFSEL_CONF=d", NULL };
	cr_assert_eq(load_env(isdir), 1);
	cr_assert_str_eq(err, "bufsel: d: not a regular file (named by BUFSEL_CONF)\n");
	cr_assert_eq(mkfifo("fifo", 0600), 0);
	char *fifo[] = { "BUFSEL_CONF=fifo", NULL };
	cr_assert_eq(load_env(fifo), 1);
	cr_assert_str_eq(err, "bufsel: fifo: not a regular file (named by BUFSEL_CONF)\n");
	char *devnull[] = { "BUFSEL_CONF=/dev/null", NULL };
	cr_assert_eq(load_env(devnull), 1);
	cr_assert_str_eq(err, "bufsel: /dev/null: not a regular file (named by BUFSEL_CONF)\n");
}

Test(conf_file, an_empty_bufsel_conf_reads_no_file)
{
	puts_file("home/.config/bufsel/bufsel.conf", "cap = 1\n");
	puts_file("etc/bufsel.conf", "cap = 2\n");
	char home[128];
	snprintf(home, sizeof(home), "HOME=%s/home", dir);
	char *env[] = { "BUFSEL_CONF=", home, NULL };
	cr_assert_eq(load_env(env), 0, "%s", err);
	cr_assert_eq(c.file_origin, CONF_FILE_NONE);
	cr_assert_str_empty(c.file);
	cr_assert_eq(c.all.cap, 0);
}

Test(conf_file, bufsel_conf_wins_over_the_default_files)
{
	puts_file("home/.config/bufsel/bufsel.conf", "cap = 1\n");
	puts_file("etc/bufsel.conf", "cap = 2\n");
	puts_file("mine.conf", "cap = 3\n");
	char home[128];
	snprintf(home, sizeof(home), "HOME=%s/home", dir);
	char *env[] = { home, "BUFSEL_CONF=mine.conf", NULL };
	cr_assert_eq(load_env(env), 0, "%s", err);
	cr_assert_eq(c.all.cap, 3);
	cr_assert_eq(c.file_origin, CONF_FILE_ENV);
	cr_assert_str_eq(c.file, "mine.conf");
}

Test(conf_file, home_config_is_the_user_file_when_xdg_config_home_is_unset)
{
	puts_file("home/.config/bufsel/bufsel.conf", "cap = 1\n");
	puts_file("etc/bufsel.conf", "cap = 2\n");
	char home[128], want[256];
	snprintf(home, sizeof(home), "HOME=%s/home", dir);
	char *env[] = { home, NULL };
	cr_assert_eq(load_env(env), 0, "%s", err);
	cr_assert_eq(c.all.cap, 1);
	cr_assert_eq(c.file_origin, CONF_FILE_USER);
	snprintf(want, sizeof(want), "%s/home/.config/bufsel/bufsel.conf", dir);
	cr_assert_str_eq(c.file, want);
}

Test(conf_file, xdg_config_home_replaces_home_config)
{
	puts_file("home/.config/bufsel/bufsel.conf", "cap = 1\n");
	puts_file("xdg/bufsel/bufsel.conf", "cap = 4\n");
	char home[128], xdg[128], want[256];
	snprintf(home, sizeof(home), "HOME=%s/home", dir);
	snprintf(xdg, sizeof(xdg), "XDG_CONFIG_HOME=%s/xdg", dir);
	char *env[] = { home, xdg, NULL };
	cr_assert_eq(load_env(env), 0, "%s", err);
	cr_assert_eq(c.all.cap, 4);
	snprintf(want, sizeof(want), "%s/xdg/bufsel/bufsel.conf", dir);
	cr_assert_str_eq(c.file, want);
	cr_assert_eq(c.file_origin, CONF_FILE_USER);
}

Test(conf_file, with_xdg_config_home_set_home_config_is_not_read)
{
	puts_file("home/.config/bufsel/bufsel.conf", "cap = 1\n");
	puts_file("etc/bufsel.conf", "cap = 2\n");
	char home[128], xdg[128];
	snprintf(home, sizeof(home), "HOME=%s/home", dir);
	snprintf(xdg, sizeof(xdg), "XDG_CONFIG_HOME=%s/xdg", dir);
	char *env[] = { home, xdg, NULL };
	cr_assert_eq(load_env(env), 0, "%s", err);
	cr_assert_eq(c.all.cap, 2);
	cr_assert_eq(c.file_origin, CONF_FILE_SYSTEM);
}

Test(conf_file, a_relative_or_empty_xdg_config_home_is_ignored)
{
	puts_file("home/.config/bufsel/bufsel.conf", "cap = 1\n");
	puts_file("xdg/bufsel/bufsel.conf", "cap = 4\n");
	char home[128];
	snprintf(home, sizeof(home), "HOME=%s/home", dir);
	char *env[] = { home, "XDG_CONFIG_HOME=xdg", NULL };
	cr_assert_eq(load_env(env), 0, "%s", err);
	cr_assert_eq(c.all.cap, 1);
	char *env2[] = { "XDG_CONFIG_HOME=", home, NULL };
	cr_assert_eq(load_env(env2), 0, "%s", err);
	cr_assert_eq(c.all.cap, 1);
}

Test(conf_file, the_system_file_when_there_is_no_user_file)
{
	puts_file("etc/bufsel.conf", "cap = 2\n");
	char home[128];
	snprintf(home, sizeof(home), "HOME=%s/home", dir);
	char *env[] = { home, NULL };
	cr_assert_eq(load_env(env), 0, "%s", err);
	cr_assert_eq(c.all.cap, 2);
	cr_assert_eq(c.file_origin, CONF_FILE_SYSTEM);
	cr_assert_str_eq(c.file, "etc/bufsel.conf");
	/* Without HOME, or with a relative one, there is no user file. */
	char *none[] = { NULL };
	cr_assert_eq(load_env(none), 0, "%s", err);
	cr_assert_eq(c.all.cap, 2);
	char *rel[] = { "HOME=home", NULL };
	cr_assert_eq(load_env(rel), 0, "%s", err);
	cr_assert_eq(c.all.cap, 2);
}

Test(conf_file, files_are_not_merged)
{
	puts_file("home/.config/bufsel/bufsel.conf", "cap = 1\n");
	puts_file("etc/bufsel.conf", "seed = 9\n");
	char home[128];
	snprintf(home, sizeof(home), "HOME=%s/home", dir);
	char *env[] = { home, NULL };
	cr_assert_eq(load_env(env), 0, "%s", err);
	cr_assert_eq(c.all.cap, 1);
	cr_assert_eq(c.all.seed, 1);
}

Test(conf_file, no_file_at_all)
{
	char home[128];
	snprintf(home, sizeof(home), "HOME=%s/home", dir);
	char *env[] = { home, NULL };
	cr_assert_eq(load_env(env), 0, "%s", err);
	cr_assert_eq(c.file_origin, CONF_FILE_NONE);
	cr_assert_str_empty(c.file);
}

Test(conf_file, a_default_file_that_is_there_but_unusable_is_an_error)
{
	mkdir("home", 0755);
	mkdir("home/.config", 0755);
	mkdir("home/.config/bufsel", 0755);
	mkdir("home/.config/bufsel/bufsel.conf", 0755);
	char home[128], want[512];
	snprintf(home, sizeof(home), "HOME=%s/home", dir);
	char *env[] = { home, NULL };
	cr_assert_eq(load_env(env), 1);
	snprintf(want, sizeof(want), "bufsel: %s/home/.config/bufsel/bufsel.conf: not a regular file\n", dir);
	cr_assert_str_eq(err, want);
	/* A file where a directory of the path should be is no file. */
	puts_file("home2/.config", "");
	snprintf(home, sizeof(home), "HOME=%s/home2", dir);
	cr_assert_eq(load_env(env), 0, "%s", err);
	cr_assert_eq(c.file_origin, CONF_FILE_NONE);
}

Test(conf_file, a_home_too_long_for_a_path)
{
	static char home[CONF_PATH_MAX + 16];
	strcpy(home, "HOME=/");
	memset(home + 6, 'h', CONF_PATH_MAX);
	char *env[] = { home, NULL };
	cr_assert_eq(load_env(env), 1);
	cr_assert_str_eq(err, "bufsel: HOME: '/hhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhh...' is too "
			      "long for a file name\n");
}

Test(conf_file, the_public_loader_reads_the_user_file_too)
{
	puts_file("home/.config/bufsel/bufsel.conf", "cap = 11\n");
	char home[128];
	snprintf(home, sizeof(home), "HOME=%s/home", dir);
	char *env[] = { home, NULL };
	/* conf_load() also tries /etc/bufsel.conf, but the user file comes first. */
	cr_assert_eq(conf_load(&c, env, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(c.all.cap, 11);
}

Test(conf_file, a_variable_overrides_the_file_and_the_file_the_default)
{
	cr_assert_eq(load_text("mode = passthrough\ncap = 5\nseed = 9\n", "BUFSEL_CAP=6"), 0, "%s", err);
	cr_assert_eq(c.mode, BUFSEL_MODE_PASSTHROUGH);
	cr_assert_eq(c.from[CONF_MODE], 1);
	cr_assert_eq(c.all.cap, 6);
	cr_assert_eq(c.from[CONF_CAP], CONF_FROM_ENV);
	cr_assert_eq(c.all.seed, 9);
	cr_assert_eq(c.log, BUFSEL_LOG_WARN);
	cr_assert_eq(c.from[CONF_LOG], CONF_FROM_DEFAULT);
	/* A variable fixes nothing in the file: the file's error stands. */
	cr_assert_eq(load_text("cap = x\n", "BUFSEL_CAP=6"), 1);
}

/* Loads in a child that runs as nobody (the test runs as root in CI), for EACCES. */
static int load_as_nobody(char **env, char *out, size_t outlen)
{
	int p[2];
	cr_assert_eq(pipe(p), 0);
	pid_t pid = fork();
	cr_assert_neq(pid, -1);
	if (!pid) {
		close(p[0]);
		if (geteuid() == 0 && (setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
				       setresuid(65534, 65534, 65534)))
			_exit(99);
		int n = load_env(env);
		dprintf(p[1], "%d %u\n%s", n, c.all.cap, err);
		_exit(0);
	}
	close(p[1]);
	size_t used = 0;
	ssize_t r;
	while (used + 1 < outlen && (r = read(p[0], out + used, outlen - 1 - used)) > 0)
		used += (size_t)r;
	out[used] = '\0';
	close(p[0]);
	int status;
	waitpid(pid, &status, 0);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
	return 0;
}

Test(conf_file, an_unreadable_default_file_is_skipped_with_a_warning)
{
	puts_file("home/.config/bufsel/bufsel.conf", "cap = 1\n");
	puts_file("etc/bufsel.conf", "cap = 2\n");
	cr_assert_eq(chmod(dir, 0755), 0);
	cr_assert_eq(chmod("home/.config/bufsel", 0700), 0);
	cr_assert_eq(chmod("etc/bufsel.conf", 0644), 0);
	char home[128], got[4096], want[512];
	snprintf(home, sizeof(home), "HOME=%s/home", dir);
	char *env[] = { home, NULL };
	load_as_nobody(env, got, sizeof(got));
	if (geteuid() != 0)
		cr_skip_test("needs root to run the load as another user");
	/* Not fatal: a warning, and the system file is read as if the user's were absent. */
	snprintf(want, sizeof(want),
		 "0 2\nbufsel: %s/home/.config/bufsel/bufsel.conf: cannot open: Permission denied; read as if absent\n",
		 dir);
	cr_assert_str_eq(got, want);
	/* Named, the same file is an error. */
	char named[256];
	snprintf(named, sizeof(named), "BUFSEL_CONF=%s/home/.config/bufsel/bufsel.conf", dir);
	char *env2[] = { named, NULL };
	load_as_nobody(env2, got, sizeof(got));
	cr_assert(!strncmp(got, "1 0\n", 4), "%s", got);
	cr_assert(strstr(got, "cannot open: Permission denied (named by BUFSEL_CONF)"), "%s", got);
}

Test(conf_file, secure_mode_reads_no_variable_and_no_user_file)
{
	puts_file("home/.config/bufsel/bufsel.conf", "cap = 1\n");
	puts_file("t.conf", "cap = 3\n");
	puts_file("etc/bufsel.conf", "cap = 2\n");
	cr_assert_eq(chmod("etc/bufsel.conf", 0644), 0);
	char home[128];
	snprintf(home, sizeof(home), "HOME=%s/home", dir);
	char *env[] = { home, "XDG_CONFIG_HOME=/nonexistent", "BUFSEL_CONF=t.conf", "BUFSEL_CAP=6",
			"BUFSEL_LOG=debug", "BUFSEL_STATS=/tmp/x", "BUFSEL_NO_SUCH=1", NULL };
	cr_assert_eq(conf_load_mode(&c, env, "etc/bufsel.conf", 1, err, sizeof(err)), 0, "%s", err);
	cr_assert(c.secure);
	cr_assert_str_eq(err, "");
	if (geteuid() == 0)
		cr_assert_eq(c.all.cap, 2, "root's system file is read");
	cr_assert_eq(c.log, BUFSEL_LOG_WARN);
	cr_assert_str_eq(c.stats, "");
	/* Not in secure mode, the same environment is taken. */
	cr_assert_eq(conf_load_mode(&c, env, "etc/bufsel.conf", 0, err, sizeof(err)), 1);
	cr_assert(!c.secure);
}

Test(conf_file, secure_mode_trusts_only_roots_unshared_regular_file)
{
	char *env[] = { NULL };
	puts_file("etc/bufsel.conf", "cap = 2\n");
	cr_assert_eq(chmod("etc/bufsel.conf", 0666), 0);
	cr_assert_eq(conf_load_mode(&c, env, "etc/bufsel.conf", 1, err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(err, "bufsel: etc/bufsel.conf: not owned by root or writable by others: ignored in "
			      "secure-execution mode\n");
	cr_assert_eq(c.all.cap, 0);
	cr_assert_str_eq(c.file, "");
	/* A symbolic link is not followed. */
	cr_assert_eq(chmod("etc/bufsel.conf", 0644), 0);
	cr_assert_eq(rename("etc/bufsel.conf", "etc/real.conf"), 0);
	cr_assert_eq(symlink("real.conf", "etc/bufsel.conf"), 0);
	cr_assert_eq(conf_load_mode(&c, env, "etc/bufsel.conf", 1, err, sizeof(err)), 0, "%s", err);
	cr_assert(strstr(err, "etc/bufsel.conf: cannot open: Too many levels of symbolic links"), "%s", err);
	cr_assert_eq(c.all.cap, 0);
}

Test(conf_file, secure_mode_messages_quote_none_of_the_file)
{
	char *env[] = { NULL };
	puts_file("etc/bufsel.conf", "root:$6$secret:19000::::::\nsecret_key = 1\ncap = secret\n");
	cr_assert_eq(chmod("etc/bufsel.conf", 0600), 0);
	if (geteuid() != 0)
		cr_skip_test("the file must be root's");
	cr_assert_eq(conf_load_mode(&c, env, "etc/bufsel.conf", 1, err, sizeof(err)), 3);
	cr_assert_null(strstr(err, "secret"), "%s", err);
	cr_assert_str_eq(err, "bufsel: etc/bufsel.conf:1: not 'key = value', a '#' comment or blank\n"
			      "bufsel: etc/bufsel.conf:2: unknown key\n"
			      "bufsel: etc/bufsel.conf:3: cap: the value is not an integer in 0..65535\n");
}
