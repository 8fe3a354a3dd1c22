/*
 * The arms' environments (ab_env.h).  A bufsel arm gets LD_PRELOAD as the
 * launcher would set it (library_preload, the same checks) and its settings
 * replace whatever the caller had for the same variables; the native arm
 * loses every BUFSEL_* variable and any libbufsel.so on LD_PRELOAD, so that
 * it measures the program alone.
 */
#define _GNU_SOURCE
#include "launcher/ab_env.h"

#include "launcher/ab_messages.h"
#include "launcher/launcher.h"
#include "launcher/library.h"
#include "conf/options.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern char **environ;

static bool is_var(const char *entry, const char *name)
{
	size_t n = strlen(name);
	return !strncmp(entry, name, n) && entry[n] == '=';
}

/* LD_PRELOAD's list without any libbufsel.so, ':'-separated; NULL when empty. */
static char *preload_without_bufsel(const char *list)
{
	size_t cap = list ? strlen(list) + 1 : 1, n = 0;
	char *out = ab_xcalloc(cap, 1);
	for (const char *p = list ? list : ""; *p;) {
		p += strspn(p, " :");
		size_t len = strcspn(p, " :");
		if (!len)
			break;
		const char *base = memrchr(p, '/', len);
		base = base ? base + 1 : p;
		size_t blen = len - (size_t)(base - p);
		if (!(blen == strlen(BUFSEL_LIB_NAME) && !memcmp(base, BUFSEL_LIB_NAME, blen))) {
			if (n)
				out[n++] = ':';
			memcpy(out + n, p, len);
			n += len;
		}
		p += len;
	}
	if (!n) {
		free(out);
		return NULL;
	}
	return out;
}

/* LD_PRELOAD as the launcher would set it for the bufsel arms. */
char *ab_preload_with_bufsel(void)
{
	const char *cur = getenv("LD_PRELOAD");
	char *orig = cur ? ab_xstrdup(cur) : NULL;
	library_preload(orig, ab.libpath);
	const char *set = getenv("LD_PRELOAD");
	if (!set)
		ab_fatal("LD_PRELOAD was not set for the bufsel arms");
	char *val = ab_xstrdup(set);
	if (orig ? setenv("LD_PRELOAD", orig, 1) : unsetenv("LD_PRELOAD"))
		ab_fatal("restoring LD_PRELOAD");
	free(orig);
	return val;
}

/*
 * Drops from a bufsel arm's environment what the arm or the options set:
 * their values are the arm's, whatever the caller had.
 */
static bool set_by_arm(const char *entry)
{
	static const char *const vars[] = { "LD_PRELOAD", "BUFSEL_LIB", "BUFSEL_MODE", "BUFSEL_KERNEL", "BUFSEL_PATCH",
					    "BUFSEL_STATS" };
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		if (is_var(entry, vars[i]))
			return true;
	if (ab.conf && is_var(entry, "BUFSEL_CONF"))
		return true;
	for (unsigned i = 0; i < ab.nsets; i++) {
		size_t n = strcspn(ab.sets[i], "=") + 1;
		if (!strncmp(entry, ab.sets[i], n))
			return true;
	}
	return false;
}

void ab_build_env(struct arm *a, const char *bufsel_preload)
{
	size_t n = 0, k = 0;
	for (char **e = environ; *e; e++)
		n++;
	a->envp = ab_xcalloc(n + 8 + ab.nsets, sizeof(char *));
	for (char **e = environ; *e; e++) {
		bool drop = a->def->mode ? set_by_arm(*e) : is_var(*e, "LD_PRELOAD") || !strncmp(*e, "BUFSEL_", 7);
		if (!drop)
			a->envp[k++] = *e;
	}
	if (!a->def->mode) {
		char *keep = preload_without_bufsel(getenv("LD_PRELOAD"));
		if (keep)
			a->envp[k++] = ab_xasprintf("LD_PRELOAD=%s", keep);
		free(keep);
		return;
	}
	a->envp[k++] = ab_xasprintf("LD_PRELOAD=%s", bufsel_preload);
	a->envp[k++] = ab_xasprintf("BUFSEL_MODE=%s", a->def->mode);
	a->envp[k++] = ab_xasprintf("BUFSEL_KERNEL=%s", a->def->kernel);
	a->envp[k++] = ab_xasprintf("BUFSEL_PATCH=%s", a->def->patch);
	a->envp[k++] = ab_xasprintf("BUFSEL_STATS=%s/%%p.json", a->stats_dir);
	if (ab.conf)
		a->envp[k++] = ab_xasprintf("BUFSEL_CONF=%s", ab.conf);
	for (unsigned i = 0; i < ab.nsets; i++)
		a->envp[k++] = (char *)ab.sets[i];
}

/* What the library will load in a bufsel arm, loaded here first: one message per problem. */
void ab_check_conf(const struct arm *a)
{
	struct bufsel_conf *conf = ab_xcalloc(1, sizeof(*conf));
	char err[16384];
	if (conf_load(conf, a->envp, err, sizeof(err))) {
		fputs(err, stderr);
		exit(EXIT_CONFIG);
	}
	free(conf);
}
