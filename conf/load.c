/*
 * Loading: defaults, then the configuration file, then the BUFSEL_*
 * variables, each overriding the one before; then every group's unset keys
 * are filled from the all-groups ones.  Runs in the library's constructor,
 * before the program's main: the file is read with open/read into a fixed
 * stack buffer, never mapped (mmap and close are bufsel's own hooks; close
 * passes straight to libc until the constructor has finished), and every
 * variable comes from the envp it is given, never from getenv().
 *
 * Which file (docs/configuration.md): BUFSEL_CONF when it is in the
 * environment, empty meaning none; else the user's file,
 * $XDG_CONFIG_HOME/bufsel/bufsel.conf when XDG_CONFIG_HOME is an absolute
 * path, else $HOME/.config/bufsel/bufsel.conf when HOME is; if that does not
 * exist, /etc/bufsel.conf; if that does not exist either, none.  One file at
 * most is read; files are never merged.
 */
#include "conf/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

/* Variables that are not options: the file's name, and the launcher's library. */
static const char *const conf_reserved[] = { "BUFSEL_CONF", "BUFSEL_LIB" };

/* The first value of name in envp, as getenv() would find it. */
static const char *env_get(char *const *envp, const char *name)
{
	size_t n = strlen(name);
	for (char *const *e = envp; e && *e; e++)
		if (!strncmp(*e, name, n) && (*e)[n] == '=')
			return *e + n + 1;
	return NULL;
}

static void load_env(struct bufsel_conf *c, char *const *envp, struct conf_sink *s)
{
	char q[CONF_QUOTE_NAME + 4], why[512];
	struct conf_ref r;

	for (char *const *e = envp; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		if (strncmp(*e, "BUFSEL_", 7) || !eq)
			continue;
		size_t n = (size_t)(eq - *e);
		int reserved = 0;
		for (size_t i = 0; i < sizeof(conf_reserved) / sizeof(conf_reserved[0]); i++)
			reserved |= strlen(conf_reserved[i]) == n && !strncmp(conf_reserved[i], *e, n);
		if (reserved)
			continue;
		conf_quote(q, sizeof(q), *e, n, CONF_QUOTE_NAME);
		if (conf_var_resolve(*e, n, &r, why, sizeof(why))) {
			conf_problem(s, "%s: %s", q, why);
			continue;
		}
		conf_apply(c, &r, eq + 1, strlen(eq + 1), CONF_FROM_ENV, q, s);
	}
}

/* How a file is to be read. */
enum {
	FILE_NAMED,	/* named by BUFSEL_CONF or --conf: any failure is an error */
	FILE_DEFAULT,	/* the user's or the system's: missing is none, unreadable a warning */
	FILE_SECURE,	/* secure mode's system file: root's, or skipped with a warning */
};

/*
 * Reads path into text (CONF_FILE_MAX + 1 bytes, so a longer file shows).
 * Returns 0, 1 when the file is to be taken as absent (a default file
 * missing, or skipped after a warning), -1 after reporting a problem.
 */
static int read_file(const char *path, int how, const char *named_by, char *text, size_t *len,
		     struct conf_sink *s)
{
	char q[CONF_QUOTE_NAME + 4];
	struct stat st;
	size_t n = 0;
	int ret = -1;

	conf_quote(q, sizeof(q), path, strlen(path), CONF_QUOTE_NAME);
	/* O_NONBLOCK: opening a FIFO must not hang the program before main. */
	int flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
	int fd = open(path, flags | (how == FILE_SECURE ? O_NOFOLLOW : 0));
	if (fd < 0) {
		if (how != FILE_NAMED && (errno == ENOENT || errno == ENOTDIR))
			return 1;
		if (how != FILE_NAMED) {
			conf_warning(s, "%s: cannot open: %s; read as if absent", q, strerror(errno));
			return 1;
		}
		conf_problem(s, "%s: cannot open: %s%s", q, strerror(errno), named_by);
		return -1;
	}
	if (fstat(fd, &st)) {
		conf_problem(s, "%s: cannot read: %s%s", q, strerror(errno), named_by);
		goto out;
	}
	/* A pipe would be drained by the launcher and read empty by the program. */
	if (!S_ISREG(st.st_mode)) {
		conf_problem(s, "%s: not a regular file%s", q, named_by);
		goto out;
	}
	/* In a privileged process only root's own, unshared file is trusted. */
	if (how == FILE_SECURE && (st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH)))) {
		conf_warning(s, "%s: not owned by root or writable by others: ignored in secure-execution mode", q);
		ret = 1;
		goto out;
	}
	for (;;) {
		ssize_t r = read(fd, text + n, CONF_FILE_MAX + 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			conf_problem(s, "%s: cannot read: %s%s", q, strerror(errno), named_by);
			goto out;
		}
		if (!r)
			break;
		n += (size_t)r;
		if (n > CONF_FILE_MAX) {
			conf_problem(s, "%s: larger than %d bytes, the most bufsel reads", q, CONF_FILE_MAX);
			goto out;
		}
	}
	*len = n;
	ret = 0;
out:
	close(fd);
	return ret;
}

/* The user's file name, or "" when neither XDG_CONFIG_HOME nor HOME is usable. */
static void user_file(char *const *envp, char *path, size_t len, struct conf_sink *s)
{
	const char *xdg = env_get(envp, "XDG_CONFIG_HOME"), *home = env_get(envp, "HOME");
	const char *var = "XDG_CONFIG_HOME", *dir = xdg, *rel = "/bufsel/bufsel.conf";
	char q[CONF_QUOTE_VALUE + 4];

	path[0] = '\0';
	/* The XDG base directory rules: a relative XDG_CONFIG_HOME is ignored. */
	if (!xdg || xdg[0] != '/') {
		var = "HOME";
		dir = home;
		rel = "/.config/bufsel/bufsel.conf";
	}
	if (!dir || dir[0] != '/')
		return;
	if ((size_t)snprintf(path, len, "%s%s", dir, rel) >= len) {
		conf_quote(q, sizeof(q), dir, strlen(dir), CONF_QUOTE_VALUE);
		conf_problem(s, "%s: '%s' is too long for a file name", var, q);
		path[0] = '\0';
	}
}

/* Finds, reads and parses the configuration file into c, if there is one. */
/* The system-wide file, read as `how` says: read_file's result; when there
 * is none to read (1), the configuration names no file. */
static int read_system_file(struct bufsel_conf *c, const char *system_file, int how, char *text,
			    size_t *len, struct conf_sink *s)
{
	int r = 1;
	if (strlen(system_file) < sizeof(c->file)) {
		strcpy(c->file, system_file); // NOLINT(clang-analyzer-security.insecureAPI.strcpy): length checked above
		c->file_origin = CONF_FILE_SYSTEM;
		r = read_file(c->file, how, "", text, len, s);
	}
	if (r == 1) {
		c->file[0] = '\0';
		c->file_origin = CONF_FILE_NONE;
	}
	return r;
}

static void load_file(struct bufsel_conf *c, char *const *envp, const char *system_file,
		      struct conf_sink *s)
{
	/* Static: 64 KiB is too much stack for a constructor (a program may run
	 * with ulimit -s 64); the load runs once, before any thread. */
	static char text[CONF_FILE_MAX + 1];
	const char *named = c->secure ? NULL : env_get(envp, "BUFSEL_CONF");
	size_t len = 0;
	int r;

	if (c->secure) {
		r = read_system_file(c, system_file, FILE_SECURE, text, &len, s);
	} else if (named) {
		if (!*named)
			return;
		if (strlen(named) >= sizeof(c->file)) {
			char q[CONF_QUOTE_VALUE + 4];
			conf_quote(q, sizeof(q), named, strlen(named), CONF_QUOTE_VALUE);
			conf_problem(s, "BUFSEL_CONF: '%s' is too long for a file name", q);
			return;
		}
		strcpy(c->file, named); // NOLINT(clang-analyzer-security.insecureAPI.strcpy): length checked above
		c->file_origin = CONF_FILE_ENV;
		r = read_file(c->file, FILE_NAMED, " (named by BUFSEL_CONF)", text, &len, s);
	} else {
		user_file(envp, c->file, sizeof(c->file), s);
		c->file_origin = CONF_FILE_USER;
		r = c->file[0] ? read_file(c->file, FILE_DEFAULT, "", text, &len, s) : 1;
		if (r == 1)
			r = read_system_file(c, system_file, FILE_DEFAULT, text, &len, s);
	}
	if (!r)
		conf_parse_text(c, c->file, text, len, s);
}

int conf_load_mode(struct bufsel_conf *out, char *const *envp, const char *system_file, int secure,
		   char *err, size_t errlen)
{
	struct conf_sink s;

	conf_sink_init(&s, err, errlen);
	conf_defaults(out);
	out->secure = !!secure;
	s.hide = out->secure;
	load_file(out, envp, system_file, &s);
	if (!out->secure)
		load_env(out, envp, &s);
	conf_groups_resolve(out);
	return s.count;
}

int conf_load_at(struct bufsel_conf *out, char *const *envp, const char *system_file, char *err,
		 size_t errlen)
{
	return conf_load_mode(out, envp, system_file, getauxval(AT_SECURE) != 0, err, errlen);
}

int conf_load(struct bufsel_conf *out, char *const *envp, char *err, size_t errlen)
{
	return conf_load_at(out, envp, CONF_SYSTEM_FILE, err, errlen);
}

int conf_load_text(struct bufsel_conf *out, char *const *envp, const char *name, const char *text,
		   size_t len, char *err, size_t errlen)
{
	struct conf_sink s;

	conf_sink_init(&s, err, errlen);
	conf_defaults(out);
	snprintf(out->file, sizeof(out->file), "%s", *name ? name : "-");
	out->file_origin = CONF_FILE_ENV;
	conf_parse_text(out, out->file, text, len, &s);
	load_env(out, envp, &s);
	conf_groups_resolve(out);
	return s.count;
}

/* "default", "BUFSEL_X" or "FILE:LINE", for one setting in conf_show(). */
static void origin(const struct bufsel_conf *c, const struct conf_ref *r, uint32_t from, char *buf,
		   size_t len)
{
	char q[CONF_QUOTE_NAME + 4];
	if (from == CONF_FROM_DEFAULT) {
		snprintf(buf, len, "default");
	} else if (from == CONF_FROM_ENV) {
		conf_var_name(r, buf, len);
	} else {
		conf_quote(q, sizeof(q), c->file, strlen(c->file), CONF_QUOTE_NAME);
		snprintf(buf, len, "%s:%u", q, from);
	}
}

/* One "key = value  # origin" line; gi is the group's index, -1 for the global keys. */
static void show_line(const struct bufsel_conf *c, const struct conf_ref *r, int gi,
		      void (*emit)(void *arg, const char *line), void *arg)
{
	char key[CONF_KEY_MAX], val[CONF_PATH_MAX + 8], from[CONF_QUOTE_NAME + 64];
	char all[CONF_KEY_MAX + 8], setting[CONF_KEY_MAX + CONF_PATH_MAX + 16];
	char line[sizeof(setting) + sizeof(all) + sizeof(from) + 8];
	const struct conf_option *o = &conf_options[r->key];
	const void *src = o->scope == CONF_SCOPE_GLOBAL ? (const void *)c : &c->all;
	uint32_t f = c->from[r->key];
	struct conf_ref a = { r->key, -1 };

	all[0] = '\0';
	if (gi >= 0) {
		src = &c->group[gi];
		f = c->group_from[gi][r->key - CONF_GROUP_KEY0];
		/* Not set for this group: the all-groups key's value, and its origin. */
		if (f == CONF_FROM_DEFAULT) {
			conf_key_name(&a, key, sizeof(key));
			snprintf(all, sizeof(all), "as %s: ", key);
			f = c->from[r->key];
			r = &a;
		}
	}
	conf_key_name(&(struct conf_ref){ a.key, gi >= 0 ? c->group_id[gi] : -1 }, key, sizeof(key));
	o->show(src, val, sizeof(val));
	origin(c, r, f, from, sizeof(from));
	snprintf(setting, sizeof(setting), "%s = %s", key, val);
	snprintf(line, sizeof(line), "%-32s # %s%s", setting, all, from);
	emit(arg, line);
}

void conf_show(const struct bufsel_conf *c, void (*emit)(void *arg, const char *line), void *arg)
{
	static const char *const why[] = {
		[CONF_FILE_NONE] = "",
		[CONF_FILE_ENV] = " (BUFSEL_CONF)",
		[CONF_FILE_USER] = " (the user's)",
		[CONF_FILE_SYSTEM] = " (system-wide)",
	};
	char q[CONF_QUOTE_NAME + 4], line[sizeof(q) + 64];

	conf_quote(q, sizeof(q), c->file, strlen(c->file), CONF_QUOTE_NAME);
	snprintf(line, sizeof(line), "configuration file: %s%s", c->file[0] ? q : "none",
		 why[c->file_origin]);
	emit(arg, line);
	for (size_t k = 0; k < CONF_KEYS; k++) {
		struct conf_ref r = { (enum conf_key)k, -1 };
		show_line(c, &r, -1, emit, arg);
	}
	for (unsigned i = 0; i < c->ngroups; i++) {
		for (size_t k = CONF_GROUP_KEY0; k < CONF_KEYS; k++) {
			struct conf_ref r = { (enum conf_key)k, c->group_id[i] };
			show_line(c, &r, (int)i, emit, arg);
		}
	}
}
