/*
 * conf/: the options table, defaults, every accepted and refused value of
 * every key, and the exact text of every value and variable error.  Files
 * are in conf_file.c, groups and precedence in conf_groups.c.  Every load
 * here sets BUFSEL_CONF empty, so no configuration file on the test machine
 * can change a result.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "conf/internal.h"
#include "conf/options.h"

/* Loads exactly the given variables (NULL-terminated), with no file. */
static int load(struct bufsel_conf *c, char *err, size_t len, char **env)
{
	char *all[32] = { "BUFSEL_CONF=" };
	size_t n = 1;
	while (env[n - 1]) {
		cr_assert_lt(n, 31);
		all[n] = env[n - 1];
		n++;
	}
	all[n] = NULL;
	return conf_load(c, all, err, len);
}

/* Loads one variable and requires it to be accepted. */
static void load_ok(struct bufsel_conf *c, const char *var, const char *val)
{
	char buf[8192], err[1024];
	snprintf(buf, sizeof(buf), "%s=%s", var, val);
	char *env[] = { buf, NULL };
	cr_assert_eq(load(c, err, sizeof(err), env), 0, "%s refused: %s", buf, err);
}

/* Loads one variable and requires exactly the one problem line expected. */
static void load_bad(const char *var, const char *val, const char *expect)
{
	static struct bufsel_conf c;
	char buf[8192], err[1024];
	snprintf(buf, sizeof(buf), "%s=%s", var, val);
	char *env[] = { buf, NULL };
	cr_assert_eq(load(&c, err, sizeof(err), env), 1, "%s accepted", buf);
	cr_assert_str_eq(err, expect);
}

Test(conf, table_rows_are_complete)
{
	cr_assert_eq(conf_option_count, CONF_KEYS);
	for (size_t k = 0; k < CONF_KEYS; k++) {
		const struct conf_option *o = &conf_options[k];
		cr_assert(o->name && o->values && o->expect && o->dflt && o->help && o->parse && o->show,
			  "row %zu incomplete", k);
		cr_assert_eq(o->scope == CONF_SCOPE_GROUP, k >= CONF_GROUP_KEY0, "%s: group keys come last", o->name);
		if (o->scope == CONF_SCOPE_GROUP)
			cr_assert(o->size && o->offset + o->size <= sizeof(struct conf_group), "%s", o->name);
		for (const char *p = o->name; *p; p++)
			cr_assert((*p >= 'a' && *p <= 'z') || *p == '_', "%s: keys are lower case", o->name);
	}
}

Test(conf, every_default_is_a_valid_value_and_shows_as_itself)
{
	struct bufsel_conf c;
	conf_defaults(&c);
	for (size_t k = 0; k < CONF_KEYS; k++) {
		const struct conf_option *o = &conf_options[k];
		char shown[64];
		o->show(o->scope == CONF_SCOPE_GLOBAL ? (const void *)&c : &c.all, shown, sizeof(shown));
		cr_assert_str_eq(shown, o->dflt);
	}
}

Test(conf, defaults_without_variables)
{
	struct bufsel_conf c;
	char err[256];
	char *env[] = { "PATH=/bin", "HOME=/nonexistent", NULL };
	cr_assert_eq(conf_load_at(&c, env, "/nonexistent/bufsel.conf", err, sizeof(err)), 0);
	cr_assert_eq(c.mode, BUFSEL_MODE_EMULATE);
	cr_assert_eq(c.log, BUFSEL_LOG_WARN);
	cr_assert_eq(c.kernel, 0);
	cr_assert_str_empty(c.stats);
	cr_assert_eq(c.all.cap, 0);
	cr_assert_eq(c.all.max_len, 0);
	cr_assert_eq(c.all.enobufs_ppb, 0);
	cr_assert_eq(c.all.seed, 1);
	cr_assert_eq(c.ngroups, 0);
	cr_assert_eq(c.file_origin, CONF_FILE_NONE);
	cr_assert_str_empty(c.file);
	for (size_t k = 0; k < CONF_KEYS; k++)
		cr_assert_eq(c.from[k], CONF_FROM_DEFAULT);
	cr_assert_eq(conf_check(&c), 0);
	cr_assert_str_empty(err);
}

Test(conf, mode_and_log_take_every_name)
{
	struct bufsel_conf c;
	load_ok(&c, "BUFSEL_MODE", "passthrough");
	cr_assert_eq(c.mode, BUFSEL_MODE_PASSTHROUGH);
	cr_assert_eq(c.from[CONF_MODE], CONF_FROM_ENV);
	load_ok(&c, "BUFSEL_MODE", "emulate");
	cr_assert_eq(c.mode, BUFSEL_MODE_EMULATE);
	static const char *const logs[] = { "error", "warn", "info", "debug" };
	for (int i = 0; i < 4; i++) {
		load_ok(&c, "BUFSEL_LOG", logs[i]);
		cr_assert_eq(c.log, (enum bufsel_log_level)i);
	}
}

Test(conf, mode_and_log_refuse_anything_else)
{
	static const char *const bad[] = { "", "Emulate", "emulate ", " emulate", "pass", "emulate\n" };
	char want[256], q[32];
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		conf_quote(q, sizeof(q), bad[i], strlen(bad[i]), 64);
		snprintf(want, sizeof(want), "bufsel: BUFSEL_MODE: '%s' is not one of emulate|passthrough\n", q);
		load_bad("BUFSEL_MODE", bad[i], want);
	}
	load_bad("BUFSEL_LOG", "WARN", "bufsel: BUFSEL_LOG: 'WARN' is not one of error|warn|info|debug\n");
	load_bad("BUFSEL_LOG", "verbose", "bufsel: BUFSEL_LOG: 'verbose' is not one of error|warn|info|debug\n");
}

Test(conf, kernel_takes_native_and_versions_from_5_1)
{
	struct bufsel_conf c;
	static const struct { const char *v; unsigned k; } ok[] = {
		{ "native", 0 }, { "5.1", 0x501 }, { "5.6", 0x506 }, { "6.18", 0x612 }, { "255.255", 0xffff },
		{ "05.06", 0x506 },
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		load_ok(&c, "BUFSEL_KERNEL", ok[i].v);
		cr_assert_eq(c.kernel, ok[i].k, "%s", ok[i].v);
	}
}

Test(conf, kernel_refuses_other_text)
{
	static const char *const bad[] = { "", "5.0", "4.20", "5", "5.", ".6", "5.6.1", "+5.6", " 5.6",
					   "5.-6", "256.0", "5.256", "5.6 ", "v5.6", "Native", "5,6" };
	char want[256];
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(want, sizeof(want), "bufsel: BUFSEL_KERNEL: '%s' is not one of native|X.Y (5.1 or later)\n",
			 bad[i]);
		load_bad("BUFSEL_KERNEL", bad[i], want);
	}
}

Test(conf, stats_takes_a_path_a_dash_or_nothing)
{
	struct bufsel_conf c;
	char path[CONF_PATH_MAX];
	load_ok(&c, "BUFSEL_STATS", "/tmp/bufsel.stats");
	cr_assert_str_eq(c.stats, "/tmp/bufsel.stats");
	load_ok(&c, "BUFSEL_STATS", "-");
	cr_assert_str_eq(c.stats, "-");
	load_ok(&c, "BUFSEL_STATS", "");
	cr_assert_str_empty(c.stats);
	cr_assert_eq(c.from[CONF_STATS], CONF_FROM_ENV);
	load_ok(&c, "BUFSEL_STATS", "relative/stats # with a hash");
	cr_assert_str_eq(c.stats, "relative/stats # with a hash");
	memset(path, 'a', sizeof(path) - 1);
	path[sizeof(path) - 1] = '\0';
	load_ok(&c, "BUFSEL_STATS", path);
	cr_assert_eq(strlen(c.stats), CONF_PATH_MAX - 1);
}

Test(conf, stats_refuses_a_path_too_long)
{
	char path[CONF_PATH_MAX + 1];
	memset(path, 'a', sizeof(path) - 1);
	path[sizeof(path) - 1] = '\0';
	load_bad("BUFSEL_STATS", path,
		 "bufsel: BUFSEL_STATS: 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...' is not a path "
		 "shorter than 4096 bytes\n");
}

struct uint_case {
	const char *v;
	uint64_t n;
};

Test(conf, cap_takes_0_to_65535)
{
	static const struct uint_case ok[] = { { "0", 0 }, { "1", 1 }, { "64", 64 }, { "65535", 65535 }, { "00064", 64 } };
	struct bufsel_conf c;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		load_ok(&c, "BUFSEL_CAP", ok[i].v);
		cr_assert_eq(c.all.cap, ok[i].n, "%s", ok[i].v);
		cr_assert_eq(c.from[CONF_CAP], CONF_FROM_ENV);
	}
	static const char *const bad[] = { "", "-1", "+1", "65536", "abc", "1 ", " 1", "0x10", "1e3", "1.0",
					   "99999999999999999999999" };
	char want[256];
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(want, sizeof(want), "bufsel: BUFSEL_CAP: '%s' is not an integer in 0..65535\n", bad[i]);
		load_bad("BUFSEL_CAP", bad[i], want);
	}
}

Test(conf, max_len_takes_0_to_int32_max)
{
	static const struct uint_case ok[] = { { "0", 0 }, { "1", 1 }, { "4096", 4096 }, { "2147483647", 2147483647 } };
	struct bufsel_conf c;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		load_ok(&c, "BUFSEL_MAX_LEN", ok[i].v);
		cr_assert_eq(c.all.max_len, ok[i].n, "%s", ok[i].v);
	}
	static const char *const bad[] = { "2147483648", "4294967296", "-1", "", "4k" };
	char want[256];
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(want, sizeof(want), "bufsel: BUFSEL_MAX_LEN: '%s' is not an integer in 0..2147483647\n",
			 bad[i]);
		load_bad("BUFSEL_MAX_LEN", bad[i], want);
	}
}

Test(conf, enobufs_rate_takes_decimals_from_0_to_1)
{
	static const struct uint_case ok[] = {
		{ "0", 0 }, { "1", CONF_RATE_ONE }, { "0.25", 250000000 }, { "0.5", 500000000 },
		{ "0.000000001", 1 }, { "0.999999999", 999999999 }, { "1.0", CONF_RATE_ONE },
		{ "1.000000000", CONF_RATE_ONE }, { "0.0", 0 },
	};
	struct bufsel_conf c;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		load_ok(&c, "BUFSEL_ENOBUFS_RATE", ok[i].v);
		cr_assert_eq(c.all.enobufs_ppb, ok[i].n, "%s", ok[i].v);
	}
	static const char *const bad[] = { "", "1.5", "1.000000001", ".5", "0.", "1.", "0.0000000001", "2",
					   "-0", "+0.5", "0,5", "5e-1", "00.5", " 0.5", "0.5 ", "25%", "nan" };
	char want[256];
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(want, sizeof(want),
			 "bufsel: BUFSEL_ENOBUFS_RATE: '%s' is not a decimal in 0..1 with at most 9 decimals, such "
			 "as 0.25\n",
			 bad[i]);
		load_bad("BUFSEL_ENOBUFS_RATE", bad[i], want);
	}
}

Test(conf, seed_takes_any_unsigned_64_bit_integer)
{
	static const struct uint_case ok[] = { { "0", 0 }, { "1", 1 }, { "42", 42 },
					       { "18446744073709551615", UINT64_MAX } };
	struct bufsel_conf c;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		load_ok(&c, "BUFSEL_SEED", ok[i].v);
		cr_assert_eq(c.all.seed, ok[i].n, "%s", ok[i].v);
	}
	static const char *const bad[] = { "18446744073709551616", "99999999999999999999", "-1", "", "0x1" };
	char want[256];
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(want, sizeof(want), "bufsel: BUFSEL_SEED: '%s' is not an integer in 0..18446744073709551615\n",
			 bad[i]);
		load_bad("BUFSEL_SEED", bad[i], want);
	}
}

/* What show prints is what parse reads back: --check-conf's output is a valid file. */
Test(conf, shown_values_read_back)
{
	static const struct { const char *var, *val, *shown; } cases[] = {
		{ "BUFSEL_MODE", "passthrough", "passthrough" }, { "BUFSEL_LOG", "debug", "debug" },
		{ "BUFSEL_KERNEL", "6.18", "6.18" },		 { "BUFSEL_KERNEL", "05.06", "5.6" },
		{ "BUFSEL_STATS", "-", "-" },			 { "BUFSEL_CAP", "00064", "64" },
		{ "BUFSEL_MAX_LEN", "2147483647", "2147483647" }, { "BUFSEL_ENOBUFS_RATE", "0.250", "0.25" },
		{ "BUFSEL_ENOBUFS_RATE", "1.0", "1" },		 { "BUFSEL_ENOBUFS_RATE", "0.000000001", "0.000000001" },
		{ "BUFSEL_SEED", "18446744073709551615", "18446744073709551615" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct bufsel_conf c, d;
		struct conf_ref r;
		char why[512], shown[64];
		load_ok(&c, cases[i].var, cases[i].val);
		cr_assert_eq(conf_var_resolve(cases[i].var, strlen(cases[i].var), &r, why, sizeof(why)), 0);
		const struct conf_option *o = &conf_options[r.key];
		o->show(o->scope == CONF_SCOPE_GLOBAL ? (const void *)&c : &c.all, shown, sizeof(shown));
		cr_assert_str_eq(shown, cases[i].shown);
		load_ok(&d, cases[i].var, shown);
		cr_assert_eq(o->scope == CONF_SCOPE_GLOBAL ? memcmp(&c, &d, offsetof(struct bufsel_conf, all))
							   : memcmp(&c.all, &d.all, sizeof(c.all)),
			     0, "%s", cases[i].var);
	}
}

Test(conf, unknown_variable_is_an_error_and_every_problem_is_listed)
{
	struct bufsel_conf c;
	char err[512];
	char *env[] = { "BUFSEL_MOD=emulate", "BUFSEL_LOG=loud", NULL };
	cr_assert_eq(load(&c, err, sizeof(err), env), 2);
	cr_assert_str_eq(err, "bufsel: BUFSEL_MOD: unknown variable (bufsel --help lists them)\n"
			      "bufsel: BUFSEL_LOG: 'loud' is not one of error|warn|info|debug\n");
}

Test(conf, variable_names_are_upper_case_and_exact)
{
	static const char *const bad[] = { "BUFSEL_mode", "BUFSEL_", "BUFSEL_MODE_", "BUFSEL_MAXLEN",
					   "BUFSEL_GROUP", "BUFSEL_GROUP_", "BUFSEL_GROUP_5", "BUFSEL_GROUP_5_",
					   "BUFSEL_GROUP_X_CAP", "BUFSEL_GROUP__CAP", "BUFSEL_GROUP_5_cap" };
	char want[256];
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(want, sizeof(want), "bufsel: %s: unknown variable (bufsel --help lists them)\n", bad[i]);
		load_bad(bad[i], "1", want);
	}
}

Test(conf, group_variables_name_a_group_key_and_a_valid_group)
{
	load_bad("BUFSEL_GROUP_1_CAP", "abc", "bufsel: BUFSEL_GROUP_1_CAP: 'abc' is not an integer in 0..65535\n");
	load_bad("BUFSEL_GROUP_5_MODE", "emulate",
		 "bufsel: BUFSEL_GROUP_5_MODE: mode is not a per-group key (per-group keys: cap, max_len, "
		 "enobufs_rate, seed)\n");
	load_bad("BUFSEL_GROUP_65536_CAP", "1",
		 "bufsel: BUFSEL_GROUP_65536_CAP: '65536' is not a group id (0..65535, decimal, no leading zero)\n");
	load_bad("BUFSEL_GROUP_05_CAP", "1",
		 "bufsel: BUFSEL_GROUP_05_CAP: '05' is not a group id (0..65535, decimal, no leading zero)\n");
	load_bad("BUFSEL_GROUP_1x_CAP", "1",
		 "bufsel: BUFSEL_GROUP_1x_CAP: '1x' is not a group id (0..65535, decimal, no leading zero)\n");
	load_bad("BUFSEL_GROUP_999999_SEED", "1",
		 "bufsel: BUFSEL_GROUP_999999_SEED: '999999' is not a group id (0..65535, decimal, no leading "
		 "zero)\n");
}

Test(conf, reserved_variables_are_not_options_but_not_errors)
{
	struct bufsel_conf c;
	char err[256];
	char *env[] = { "BUFSEL_LIB=/tmp/libbufsel.so", NULL };
	cr_assert_eq(load(&c, err, sizeof(err), env), 0);
	cr_assert_str_empty(err);
}

Test(conf, a_message_stays_one_line_whatever_the_value)
{
	load_bad("BUFSEL_CAP", "1\n2\t3\x7f", "bufsel: BUFSEL_CAP: '1?2?3?' is not an integer in 0..65535\n");
	load_bad("BUFSEL_CAP", "1234567890123456789012345678901234567890123456789012345678901234567890",
		 "bufsel: BUFSEL_CAP: '1234567890123456789012345678901234567890123456789012345678901234...' is "
		 "not an integer in 0..65535\n");
}

Test(conf, errors_are_truncated_not_overrun)
{
	struct bufsel_conf c;
	char err[16];
	memset(err, 'x', sizeof(err));
	char *env[] = { "BUFSEL_MODE=fast", "BUFSEL_LOG=loud", NULL };
	cr_assert_eq(load(&c, err, sizeof(err), env), 2);
	cr_assert_eq(strnlen(err, sizeof(err)), sizeof(err) - 1);
}

Test(conf, a_refused_value_changes_nothing)
{
	struct bufsel_conf c;
	char err[256];
	char *env[] = { "BUFSEL_CAP=7", "BUFSEL_CAP=70000", "BUFSEL_KERNEL=5.6", "BUFSEL_KERNEL=4.0", NULL };
	cr_assert_eq(load(&c, err, sizeof(err), env), 2);
	cr_assert_eq(c.all.cap, 7);
	cr_assert_eq(c.kernel, 0x506);
	cr_assert_eq(conf_check(&c), 0);
}

Test(conf, setting_checks_a_key_and_names_its_variable)
{
	char var[64], err[512];
	cr_assert_eq(conf_setting("mode", 4, "passthrough", var, sizeof(var), err, sizeof(err)), 0);
	cr_assert_str_eq(var, "BUFSEL_MODE");
	cr_assert_eq(conf_setting("max_len", 7, "4096", var, sizeof(var), err, sizeof(err)), 0);
	cr_assert_str_eq(var, "BUFSEL_MAX_LEN");
	cr_assert_eq(conf_setting("group.5.enobufs_rate", 20, "0.25", var, sizeof(var), err, sizeof(err)), 0);
	cr_assert_str_eq(var, "BUFSEL_GROUP_5_ENOBUFS_RATE");
	cr_assert_eq(conf_setting("group.65535.cap=", 15, "1", var, sizeof(var), err, sizeof(err)), 0);
	cr_assert_str_eq(var, "BUFSEL_GROUP_65535_CAP");
	cr_assert_eq(conf_setting("stats", 5, "", var, sizeof(var), err, sizeof(err)), 0);

	cr_assert_eq(conf_setting("group.5.cap", 11, "abc", var, sizeof(var), err, sizeof(err)), -EINVAL);
	cr_assert_str_eq(err, "group.5.cap: 'abc' is not an integer in 0..65535");
	cr_assert_eq(conf_setting("group.5.log", 11, "info", var, sizeof(var), err, sizeof(err)), -EINVAL);
	cr_assert_str_eq(err, "group.5.log: log is not a per-group key (per-group keys: cap, max_len, enobufs_rate, seed)");
	cr_assert_eq(conf_setting("Mode", 4, "emulate", var, sizeof(var), err, sizeof(err)), -EINVAL);
	cr_assert_str_eq(err, "Mode: unknown key (keys: mode, log, kernel, stats, patch, trap, fail_alloc, rings, legacy, cap, max_len, enobufs_rate, seed; "
			      "for one group: group.<bgid>.cap|max_len|enobufs_rate|seed)");
	cr_assert_eq(conf_setting("BUFSEL_MODE", 11, "emulate", var, sizeof(var), err, sizeof(err)), -EINVAL);
}

Test(conf, describe_lists_every_key_and_variable)
{
	char buf[8192], flat[8192];
	size_t n = conf_describe(buf, sizeof(buf));
	cr_assert_lt(n, sizeof(buf));
	/* Text is wrapped: joined, each help is one run of words again. */
	size_t j = 0;
	for (const char *p = buf; *p; p++) {
		if (!strncmp(p, "\n      ", 7)) {
			flat[j++] = ' ';
			p += 6;
		} else {
			flat[j++] = *p;
		}
	}
	flat[j] = '\0';
	for (size_t k = 0; k < CONF_KEYS; k++) {
		char name[64], key[128];
		struct conf_ref r = { (enum conf_key)k, -1 };
		conf_var_name(&r, name, sizeof(name));
		snprintf(key, sizeof(key), "  %s = %s (default ", conf_options[k].name, conf_options[k].values);
		cr_assert_not_null(strstr(buf, name), "%s missing from --help", name);
		cr_assert_not_null(strstr(buf, key), "%s missing from --help", key);
		cr_assert_not_null(strstr(flat, conf_options[k].help), "%s's help missing", conf_options[k].name);
		if (k >= CONF_GROUP_KEY0) {
			snprintf(key, sizeof(key), "group.<bgid>.%s,", conf_options[k].name);
			cr_assert_not_null(strstr(buf, key), "%s missing from --help", key);
			snprintf(key, sizeof(key), "BUFSEL_GROUP_<bgid>_%s", name + 7);
			cr_assert_not_null(strstr(buf, key), "%s missing from --help", key);
		}
	}
	for (const char *p = buf; *p;) {
		const char *nl = strchr(p, '\n');
		cr_assert_not_null(nl);
		cr_assert_leq(nl - p, 78, "too wide: %.*s", (int)(nl - p), p);
		p = nl + 1;
	}
}

Test(conf, describe_reports_the_length_it_needs)
{
	char small[32], big[8192];
	size_t want = conf_describe(big, sizeof(big));
	cr_assert_eq(conf_describe(small, sizeof(small)), want);
	cr_assert_eq(strlen(small), sizeof(small) - 1);
	cr_assert_eq(strlen(big), want);
}

/* docs/configuration.md documents every key and variable the table has. */
Test(conf, the_documentation_names_every_key)
{
	char path[512], doc[65536];
	const char *slash = strrchr(__FILE__, '/');
	snprintf(path, sizeof(path), "%.*s/../../docs/configuration.md", (int)(slash ? slash - __FILE__ : 1),
		 slash ? __FILE__ : ".");
	FILE *f = fopen(path, "r");
	if (!f)
		cr_skip_test("%s not found from this directory", path);
	size_t n = fread(doc, 1, sizeof(doc) - 1, f);
	fclose(f);
	doc[n] = '\0';
	for (size_t k = 0; k < CONF_KEYS; k++) {
		char name[64], key[64];
		struct conf_ref r = { (enum conf_key)k, -1 };
		conf_var_name(&r, name, sizeof(name));
		snprintf(key, sizeof(key), "`%s`", conf_options[k].name);
		cr_assert_not_null(strstr(doc, name), "%s missing from %s", name, path);
		cr_assert_not_null(strstr(doc, key), "%s missing from %s", key, path);
		/* A Markdown table cell escapes each '|' with a backslash. */
		char esc[128];
		size_t j = 0;
		for (const char *v = conf_options[k].values; *v && j + 2 < sizeof(esc); v++) {
			if (*v == '|')
				esc[j++] = '\\';
			esc[j++] = *v;
		}
		esc[j] = '\0';
		cr_assert(strstr(doc, conf_options[k].values) || strstr(doc, esc), "%s's values missing from %s",
			  conf_options[k].name, path);
	}
}
