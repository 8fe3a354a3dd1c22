/* conf/: defaults, every accepted value, and the exact text of every error. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "conf/options.h"

static int load(struct bufsel_conf *c, char *err, size_t len, char **env)
{
	return conf_load(c, env, err, len);
}

Test(conf, defaults_without_variables)
{
	struct bufsel_conf c;
	char err[256];
	char *env[] = { "PATH=/bin", "HOME=/root", NULL };
	cr_assert_eq(load(&c, err, sizeof(err), env), 0);
	cr_assert_eq(c.mode, BUFSEL_MODE_EMULATE);
	cr_assert_eq(c.log, BUFSEL_LOG_WARN);
	cr_assert_str_empty(err);
}

Test(conf, every_value_is_accepted)
{
	struct bufsel_conf c;
	char err[256];
	char *e1[] = { "BUFSEL_MODE=passthrough", "BUFSEL_LOG=debug", NULL };
	cr_assert_eq(load(&c, err, sizeof(err), e1), 0);
	cr_assert_eq(c.mode, BUFSEL_MODE_PASSTHROUGH);
	cr_assert_eq(c.log, BUFSEL_LOG_DEBUG);
	char *e2[] = { "BUFSEL_MODE=emulate", "BUFSEL_LOG=error", NULL };
	cr_assert_eq(load(&c, err, sizeof(err), e2), 0);
	cr_assert_eq(c.mode, BUFSEL_MODE_EMULATE);
	cr_assert_eq(c.log, BUFSEL_LOG_ERROR);
	char *e3[] = { "BUFSEL_LOG=info", NULL };
	cr_assert_eq(load(&c, err, sizeof(err), e3), 0);
	cr_assert_eq(c.log, BUFSEL_LOG_INFO);
	char *e4[] = { "BUFSEL_LOG=warn", NULL };
	cr_assert_eq(load(&c, err, sizeof(err), e4), 0);
	cr_assert_eq(c.log, BUFSEL_LOG_WARN);
}

Test(conf, bad_value_names_the_variable_and_the_accepted_values)
{
	struct bufsel_conf c;
	char err[256];
	char *env[] = { "BUFSEL_MODE=fast", NULL };
	cr_assert_eq(load(&c, err, sizeof(err), env), 1);
	cr_assert_str_eq(err, "bufsel: BUFSEL_MODE: 'fast' is not one of emulate|passthrough\n");
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

Test(conf, launcher_variable_is_not_an_option_but_not_an_error)
{
	struct bufsel_conf c;
	char err[256];
	char *env[] = { "BUFSEL_LIB=/tmp/libbufsel.so", NULL };
	cr_assert_eq(load(&c, err, sizeof(err), env), 0);
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

Test(conf, describe_lists_every_option)
{
	char buf[4096];
	conf_describe(buf, sizeof(buf));
	for (size_t i = 0; i < conf_option_count; i++) {
		char name[64];
		snprintf(name, sizeof(name), "BUFSEL_%s", conf_options[i].name);
		for (char *p = name; *p; p++)
			if (*p >= 'a' && *p <= 'z')
				*p = (char)(*p - 'a' + 'A');
		cr_assert_not_null(strstr(buf, name), "%s missing from --help", name);
	}
}
