/*
 * conf/: per-group settings.  How a group's own key, the all-groups key and
 * the default combine across the file and the variables, the lookup for any
 * group id, the bound on groups, the invariants (conf_check) and what
 * --check-conf prints (conf_show).  The file's text is given directly
 * (conf_load_text), so no file system is involved.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "conf/internal.h"
#include "conf/options.h"

static struct bufsel_conf c;
static char err[16384];

static int load(const char *text, char **env)
{
	static char *none[] = { NULL };
	return conf_load_text(&c, env ? env : none, "f.conf", text, strlen(text), err, sizeof(err));
}

Test(conf_groups, a_group_without_settings_gets_the_all_groups_entry)
{
	char *env[] = { "BUFSEL_CAP=64", NULL };
	cr_assert_eq(load("group.5.cap = 8\n", env), 0, "%s", err);
	cr_assert_eq(conf_group_get(&c, 6), &c.all);
	cr_assert_eq(conf_group_get(&c, 0), &c.all);
	cr_assert_eq(conf_group_get(&c, 65535), &c.all);
	cr_assert_eq(conf_group_get(&c, 6)->cap, 64);
	cr_assert_neq(conf_group_get(&c, 5), &c.all);
}

/* Each key resolves on its own; then the group's own key beats the all-groups key. */
Test(conf_groups, the_groups_own_key_wins_over_the_all_groups_key_wherever_each_comes_from)
{
	char *env[] = { "BUFSEL_CAP=64", NULL };
	cr_assert_eq(load("group.5.cap = 8\n", env), 0, "%s", err);
	cr_assert_eq(conf_group_get(&c, 5)->cap, 8);

	char *env2[] = { "BUFSEL_GROUP_5_CAP=8", NULL };
	cr_assert_eq(load("cap = 64\n", env2), 0, "%s", err);
	cr_assert_eq(conf_group_get(&c, 5)->cap, 8);
	cr_assert_eq(conf_group_get(&c, 4)->cap, 64);
}

Test(conf_groups, a_variable_overrides_the_files_key_for_one_group)
{
	char *env[] = { "BUFSEL_GROUP_5_CAP=9", NULL };
	cr_assert_eq(load("group.5.cap = 8\ngroup.5.seed = 3\n", env), 0, "%s", err);
	const struct conf_group *g = conf_group_get(&c, 5);
	cr_assert_eq(g->cap, 9);
	cr_assert_eq(g->seed, 3);
	cr_assert_eq(c.group_from[0][CONF_CAP - CONF_GROUP_KEY0], CONF_FROM_ENV);
	cr_assert_eq(c.group_from[0][CONF_SEED - CONF_GROUP_KEY0], 2);
	cr_assert_eq(c.ngroups, 1);
}

Test(conf_groups, keys_a_group_does_not_set_come_from_all_groups_after_the_variables)
{
	char *env[] = { "BUFSEL_CAP=9", "BUFSEL_ENOBUFS_RATE=0.5", NULL };
	cr_assert_eq(load("cap = 4\nmax_len = 100\ngroup.5.seed = 3\n", env), 0, "%s", err);
	const struct conf_group *g = conf_group_get(&c, 5);
	cr_assert_eq(g->cap, 9);
	cr_assert_eq(g->max_len, 100);
	cr_assert_eq(g->enobufs_ppb, 500000000);
	cr_assert_eq(g->seed, 3);
	cr_assert_eq(c.group_from[0][CONF_CAP - CONF_GROUP_KEY0], CONF_FROM_DEFAULT);
}

Test(conf_groups, defaults_reach_groups_too)
{
	cr_assert_eq(load("group.5.cap = 2\n", NULL), 0, "%s", err);
	const struct conf_group *g = conf_group_get(&c, 5);
	cr_assert_eq(g->max_len, 0);
	cr_assert_eq(g->enobufs_ppb, 0);
	cr_assert_eq(g->seed, 1);
}

Test(conf_groups, zero_for_one_group_lifts_an_all_groups_cap)
{
	cr_assert_eq(load("cap = 64\nmax_len = 512\ngroup.5.cap = 0\ngroup.5.max_len = 0\n", NULL), 0, "%s", err);
	cr_assert_eq(conf_group_get(&c, 5)->cap, 0);
	cr_assert_eq(conf_group_get(&c, 5)->max_len, 0);
	cr_assert_eq(conf_group_get(&c, 6)->cap, 64);
}

Test(conf_groups, the_lowest_and_highest_group_ids)
{
	char *env[] = { "BUFSEL_GROUP_0_SEED=5", "BUFSEL_GROUP_65535_MAX_LEN=7", NULL };
	cr_assert_eq(load("", env), 0, "%s", err);
	cr_assert_eq(conf_group_get(&c, 0)->seed, 5);
	cr_assert_eq(conf_group_get(&c, 65535)->max_len, 7);
	cr_assert_eq(conf_group_get(&c, 1), &c.all);
	cr_assert_eq(conf_group_get(&c, 65534), &c.all);
}

Test(conf_groups, ids_are_kept_sorted_whatever_the_order_given)
{
	static char text[256 * 32];
	size_t used = 0;
	/* 256 ids in a scrambled order: i * 97 mod 256 visits each once. */
	for (unsigned i = 0; i < CONF_MAX_GROUPS; i++) {
		unsigned id = (i * 97) % 256 * 200;
		used += (size_t)snprintf(text + used, sizeof(text) - used, "group.%u.cap = %u\n", id, id / 200 + 1);
	}
	cr_assert_eq(load(text, NULL), 0, "%s", err);
	cr_assert_eq(c.ngroups, CONF_MAX_GROUPS);
	cr_assert_eq(conf_check(&c), 0);
	for (unsigned id = 0; id < 65536; id++) {
		const struct conf_group *g = conf_group_get(&c, (uint16_t)id);
		if (id % 200 == 0 && id / 200 < 256)
			cr_assert_eq(g->cap, id / 200 + 1, "group %u", id);
		else
			cr_assert_eq(g, &c.all, "group %u", id);
	}
}

Test(conf_groups, more_than_256_groups_is_an_error_in_the_file_and_in_variables)
{
	static char text[300 * 32];
	size_t used = 0;
	for (unsigned i = 0; i <= CONF_MAX_GROUPS; i++)
		used += (size_t)snprintf(text + used, sizeof(text) - used, "group.%u.seed = 1\n", i);
	cr_assert_eq(load(text, NULL), 1);
	cr_assert_str_eq(err, "bufsel: f.conf:257: group.256.seed: more than 256 groups have settings of their own\n");
	cr_assert_eq(c.ngroups, CONF_MAX_GROUPS);
	cr_assert_eq(conf_check(&c), 0);

	/* A further key for a group already there is fine. */
	used -= strlen("group.256.seed = 1\n");
	used += (size_t)snprintf(text + used, sizeof(text) - used, "group.255.cap = 1\n");
	char *env[] = { "BUFSEL_GROUP_0_CAP=1", "BUFSEL_GROUP_70_CAP=1", "BUFSEL_GROUP_300_CAP=1", NULL };
	cr_assert_eq(load(text, env), 1);
	cr_assert_str_eq(err, "bufsel: BUFSEL_GROUP_300_CAP: more than 256 groups have settings of their own\n");
}

Test(conf_groups, equal_inputs_load_equal_structs)
{
	static struct bufsel_conf a;
	char *env[] = { "BUFSEL_GROUP_9_CAP=3", "BUFSEL_STATS=-", NULL };
	const char *text = "cap = 4\ngroup.3.seed = 8\nkernel = 6.1\n";
	cr_assert_eq(load(text, env), 0);
	a = c;
	memset(&c, 0xa5, sizeof(c));
	cr_assert_eq(load(text, env), 0);
	cr_assert_eq(memcmp(&a, &c, sizeof(c)), 0);
}

Test(conf_groups, check_catches_what_must_not_happen)
{
	cr_assert_eq(load("group.3.cap = 1\ngroup.9.cap = 2\n", NULL), 0);
	cr_assert_eq(conf_check(&c), 0);
	static struct bufsel_conf bad;
	bad = c;
	bad.group_id[0] = 10;
	cr_assert_eq(conf_check(&bad), -EINVAL, "unsorted ids");
	bad = c;
	bad.group[1].enobufs_ppb = CONF_RATE_ONE + 1;
	cr_assert_eq(conf_check(&bad), -EINVAL, "rate above 1");
	bad = c;
	bad.group[0].seed = 77;
	cr_assert_eq(conf_check(&bad), -EINVAL, "an inherited key that differs from all groups'");
	bad = c;
	bad.all.cap = 65536;
	cr_assert_eq(conf_check(&bad), -EINVAL, "cap out of range");
	bad = c;
	bad.kernel = 0x500;
	cr_assert_eq(conf_check(&bad), -EINVAL, "kernel before 5.1");
	bad = c;
	bad.ngroups = CONF_MAX_GROUPS + 1;
	cr_assert_eq(conf_check(&bad), -EINVAL, "too many groups");
	bad = c;
	bad.file[0] = '\0';
	cr_assert_eq(conf_check(&bad), -EINVAL, "a file origin without a file");
}

static void collect(void *arg, const char *line)
{
	size_t n = strlen(arg);
	snprintf((char *)arg + n, 8192 - n, "%s\n", line);
}

Test(conf_groups, show_prints_every_effective_setting_and_its_origin)
{
	char *env[] = { "BUFSEL_LOG=info", "BUFSEL_GROUP_7_CAP=2", NULL };
	cr_assert_eq(load("cap = 16\nenobufs_rate = 0.125\ngroup.7.seed = 99\n", env), 0, "%s", err);
	static char out[8192];
	out[0] = '\0';
	conf_show(&c, collect, out);
	cr_assert_str_eq(out, "configuration file: f.conf (BUFSEL_CONF)\n"
			      "mode = emulate                   # default\n"
			      "log = info                       # BUFSEL_LOG\n"
			      "kernel = native                  # default\n"
			      "stats =                          # default\n"
			      "patch = on                       # default\n"
			      "trap = auto                      # default\n"
			      "fail_alloc = 0                   # default\n"
			      "rings = auto                     # default\n"
			      "legacy = kernel                  # default\n"
			      "cap = 16                         # f.conf:1\n"
			      "max_len = 0                      # default\n"
			      "enobufs_rate = 0.125             # f.conf:2\n"
			      "seed = 1                         # default\n"
			      "group.7.cap = 2                  # BUFSEL_GROUP_7_CAP\n"
			      "group.7.max_len = 0              # as max_len: default\n"
			      "group.7.enobufs_rate = 0.125     # as enobufs_rate: f.conf:2\n"
			      "group.7.seed = 99                # f.conf:3\n");
}

Test(conf_groups, show_without_a_file_and_with_odd_bytes_in_a_path)
{
	static char *none[] = { "BUFSEL_STATS=/tmp/a\nb", NULL };
	cr_assert_eq(conf_load_at(&c, none, "/nonexistent/bufsel.conf", err, sizeof(err)), 0, "%s", err);
	static char out[8192];
	out[0] = '\0';
	conf_show(&c, collect, out);
	cr_assert(!strncmp(out, "configuration file: none\n", 25), "%s", out);
	cr_assert_not_null(strstr(out, "stats = /tmp/a?b                 # BUFSEL_STATS\n"), "%s", out);
}
