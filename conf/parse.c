/*
 * From text to settings: the configuration file's lines, file keys and
 * BUFSEL_* names resolved to a row of the options table and a group, and
 * one value applied with its provenance (the problem lines are message.c's).
 * Every input here may be any bytes (a file, an environment): lengths are
 * explicit, a message quotes at most a few dozen bytes with control bytes
 * replaced, so each problem stays one line.
 */
#include "conf/internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* A list of option names from the table, for messages: "a, b, c" or "a|b|c". */
static void key_list(char *buf, size_t len, int only_group, const char *sep)
{
	size_t used = 0;
	const char *s = "";
	if (len)
		buf[0] = '\0';
	for (size_t k = 0; k < CONF_KEYS; k++) {
		if (only_group && conf_options[k].scope != CONF_SCOPE_GROUP)
			continue;
		conf_append(buf, len, &used, "%s%s", s, conf_options[k].name);
		s = sep;
	}
}

static int find_option(const char *s, size_t n, int upper)
{
	for (size_t k = 0; k < CONF_KEYS; k++) {
		const char *name = conf_options[k].name;
		size_t i;
		for (i = 0; i < n && name[i]; i++) {
			char c = name[i];
			if (upper && c >= 'a' && c <= 'z')
				c = (char)(c - 'a' + 'A');
			if (s[i] != c)
				break;
		}
		if (i == n && !name[i])
			return (int)k;
	}
	return -1;
}

/*
 * A group id as written in a key or a variable: decimal, 0..65535, no
 * leading zero, so that one group has exactly one spelling.
 */
static int parse_bgid(const char *s, size_t n)
{
	unsigned v = 0;
	if (!n || n > 5 || (n > 1 && s[0] == '0'))
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	return v <= 65535 ? (int)v : -1;
}

/*
 * The shared tail of both resolvers: key is the option part, id the group
 * part (NULL for a key without a group).
 */
static int resolve(const char *key, size_t klen, const char *id, size_t idlen, int upper,
		   struct conf_ref *r, char *why, size_t whylen, const char *unknown)
{
	char keys[256], q[CONF_QUOTE_VALUE + 4];
	int k = find_option(key, klen, upper);
	if (k < 0) {
		snprintf(why, whylen, "%s", unknown);
		return -EINVAL;
	}
	r->key = (enum conf_key)k;
	r->bgid = -1;
	if (!id)
		return 0;
	if (conf_options[k].scope != CONF_SCOPE_GROUP) {
		key_list(keys, sizeof(keys), 1, ", ");
		snprintf(why, whylen, "%s is not a per-group key (per-group keys: %s)", conf_options[k].name, keys);
		return -EINVAL;
	}
	r->bgid = parse_bgid(id, idlen);
	if (r->bgid < 0) {
		conf_quote(q, sizeof(q), id, idlen, CONF_QUOTE_VALUE);
		snprintf(why, whylen, "'%s' is not a group id (0..65535, decimal, no leading zero)", q);
		return -EINVAL;
	}
	return 0;
}

int conf_key_resolve(const char *key, size_t n, struct conf_ref *r, char *why, size_t whylen)
{
	char keys[256], gkeys[128], unknown[420];
	const char *id = NULL, *name = key;
	size_t idlen = 0, namelen = n;

	key_list(keys, sizeof(keys), 0, ", ");
	key_list(gkeys, sizeof(gkeys), 1, "|");
	snprintf(unknown, sizeof(unknown), "unknown key (keys: %s; for one group: group.<bgid>.%s)", keys,
		 gkeys);
	if (n > 6 && !memcmp(key, "group.", 6)) {
		const char *dot = memchr(key + 6, '.', n - 6);
		if (!dot) {
			snprintf(why, whylen, "%s", unknown);
			return -EINVAL;
		}
		id = key + 6;
		idlen = (size_t)(dot - id);
		name = dot + 1;
		namelen = n - (size_t)(name - key);
	}
	return resolve(name, namelen, id, idlen, 0, r, why, whylen, unknown);
}

int conf_var_resolve(const char *var, size_t n, struct conf_ref *r, char *why, size_t whylen)
{
	static const char unknown[] = "unknown variable (bufsel --help lists them)";
	const char *id = NULL, *name;
	size_t idlen = 0, namelen;

	if (n < 7 || memcmp(var, "BUFSEL_", 7)) {
		snprintf(why, whylen, "%s", unknown);
		return -EINVAL;
	}
	name = var + 7;
	namelen = n - 7;
	if (n > 13 && !memcmp(var, "BUFSEL_GROUP_", 13)) {
		/* The id runs to the next '_': option names never start with a digit. */
		const char *us = memchr(var + 13, '_', n - 13);
		if (!us || us == var + 13 || var[13] < '0' || var[13] > '9') {
			snprintf(why, whylen, "%s", unknown);
			return -EINVAL;
		}
		id = var + 13;
		idlen = (size_t)(us - id);
		name = us + 1;
		namelen = n - (size_t)(name - var);
	}
	return resolve(name, namelen, id, idlen, 1, r, why, whylen, unknown);
}

void conf_key_name(const struct conf_ref *r, char *buf, size_t len)
{
	if (r->bgid < 0)
		snprintf(buf, len, "%s", conf_options[r->key].name);
	else
		snprintf(buf, len, "group.%d.%s", r->bgid, conf_options[r->key].name);
}

void conf_var_name(const struct conf_ref *r, char *buf, size_t len)
{
	int n;
	if (r->bgid < 0)
		n = snprintf(buf, len, "BUFSEL_%s", conf_options[r->key].name);
	else
		n = snprintf(buf, len, "BUFSEL_GROUP_%d_%s", r->bgid, conf_options[r->key].name);
	for (size_t i = 0; n > 0 && i < (size_t)n && i < len; i++)
		if (buf[i] >= 'a' && buf[i] <= 'z')
			buf[i] = (char)(buf[i] - 'a' + 'A');
}

void conf_apply(struct bufsel_conf *c, const struct conf_ref *r, const char *val, size_t vlen,
		uint32_t from, const char *where, struct conf_sink *s)
{
	const struct conf_option *o = &conf_options[r->key];
	char q[CONF_QUOTE_VALUE + 4];
	uint32_t *src;
	void *dst;

	if (o->scope == CONF_SCOPE_GLOBAL) {
		dst = c;
		src = &c->from[r->key];
	} else if (r->bgid < 0) {
		dst = &c->all;
		src = &c->from[r->key];
	} else {
		int i = conf_group_slot(c, (uint16_t)r->bgid);
		if (i < 0) {
			conf_problem(s, "%s: more than %d groups have settings of their own", where,
				     CONF_MAX_GROUPS);
			return;
		}
		dst = &c->group[i];
		src = &c->group_from[i][r->key - CONF_GROUP_KEY0];
	}
	/* The file is read before the variables, so a line number here is this file's. */
	if (from != CONF_FROM_ENV && *src != CONF_FROM_DEFAULT && *src != CONF_FROM_ENV) {
		conf_problem(s, "%s: already set on line %u (a key may appear once in the file)", where, *src);
		return;
	}
	*src = from;
	/* Lengths are checked first so that no parser ever sees a huge string. */
	if (vlen >= CONF_PATH_MAX || o->parse(dst, val)) {
		if (s->hide) {
			conf_problem(s, "%s: the value is not %s", where, o->expect);
			return;
		}
		conf_quote(q, sizeof(q), val, vlen, CONF_QUOTE_VALUE);
		conf_problem(s, "%s: '%s' is not %s", where, q, o->expect);
	}
}

static int blank(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\r';
}

/* One line, without its '\n'; lineno counts from 1. */
static void parse_line(struct bufsel_conf *c, const char *name, uint32_t lineno, const char *p,
		       size_t n, struct conf_sink *s)
{
	char where[CONF_QUOTE_NAME + 4 + 16 + CONF_KEY_MAX + 8], q[CONF_QUOTE_VALUE + 4];
	char why[512], val[CONF_PATH_MAX];
	struct conf_ref r;

	while (n && blank(*p))
		p++, n--;
	while (n && blank(p[n - 1]))
		n--;
	if (!n || *p == '#')
		return;
	if (memchr(p, '\0', n)) {
		conf_problem(s, "%s:%u: NUL byte in the line (the file is text)", name, lineno);
		return;
	}
	const char *eq = memchr(p, '=', n);
	size_t klen = eq ? (size_t)(eq - p) : 0;
	while (klen && blank(p[klen - 1]))
		klen--;
	if (!klen && s->hide) {
		conf_problem(s, "%s:%u: not 'key = value', a '#' comment or blank", name, lineno);
		return;
	}
	if (!klen) {
		conf_quote(q, sizeof(q), p, n, CONF_QUOTE_VALUE);
		conf_problem(s, "%s:%u: '%s' is not 'key = value', a '#' comment or blank", name, lineno, q);
		return;
	}
	const char *v = eq + 1;
	size_t vlen = n - (size_t)(v - p);
	while (vlen && blank(*v))
		v++, vlen--;

	conf_quote(q, sizeof(q), p, klen, CONF_KEY_MAX);
	snprintf(where, sizeof(where), "%s:%u: %s", name, lineno, q);
	if (klen >= CONF_KEY_MAX || conf_key_resolve(p, klen, &r, why, sizeof(why))) {
		if (klen >= CONF_KEY_MAX)
			conf_key_resolve("", 0, &r, why, sizeof(why));
		/* Not a known key: in secure mode, not even its bytes are quoted. */
		if (s->hide)
			conf_problem(s, "%s:%u: unknown key", name, lineno);
		else
			conf_problem(s, "%s: %s", where, why);
		return;
	}
	/* A value too long for any key is reported as a bad value, unparsed. */
	memcpy(val, v, vlen < sizeof(val) ? vlen : sizeof(val) - 1);
	val[vlen < sizeof(val) ? vlen : sizeof(val) - 1] = '\0';
	conf_apply(c, &r, val, vlen, lineno, where, s);
}

void conf_parse_text(struct bufsel_conf *c, const char *name, const char *text, size_t len,
		     struct conf_sink *s)
{
	char qname[CONF_QUOTE_NAME + 4];
	const char *p = text, *end = text + len;
	uint32_t lineno = 1;

	conf_quote(qname, sizeof(qname), name, strlen(name), CONF_QUOTE_NAME);
	/* Some editors start UTF-8 files with a byte-order mark. */
	if (len >= 3 && !memcmp(p, "\xef\xbb\xbf", 3))
		p += 3;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;
		parse_line(c, qname, lineno++, p, (size_t)(eol - p), s);
		p = nl ? nl + 1 : end;
	}
}

int conf_setting(const char *key, size_t keylen, const char *val, char *var, size_t varlen, char *err,
		 size_t errlen)
{
	/* Applied to a scratch conf, so the table's parsers do the checking. */
	struct bufsel_conf scratch;
	char why[512], q[CONF_KEY_MAX + 4];
	struct conf_ref r;
	struct conf_sink s;

	conf_quote(q, sizeof(q), key, keylen, CONF_KEY_MAX);
	if (keylen >= CONF_KEY_MAX || conf_key_resolve(key, keylen, &r, why, sizeof(why))) {
		if (keylen >= CONF_KEY_MAX)
			conf_key_resolve("", 0, &r, why, sizeof(why));
		snprintf(err, errlen, "%s: %s", q, why);
		return -EINVAL;
	}
	conf_defaults(&scratch);
	conf_sink_init(&s, err, errlen);
	conf_apply(&scratch, &r, val, strlen(val), CONF_FROM_ENV, q, &s);
	if (s.count) {
		/* One reason for the caller to frame: drop conf_problem's prefix and newline. */
		size_t n = strlen(err);
		if (n && err[n - 1] == '\n')
			err[--n] = '\0';
		if (n >= 8 && !memcmp(err, "bufsel: ", 8))
			memmove(err, err + 8, n - 8 + 1);
		return -EINVAL;
	}
	conf_var_name(&r, var, varlen);
	return 0;
}
