/*
 * The JSON reader of json.h: recursive descent, the depth bounded by
 * JSON_MAX_DEPTH so that the recursion is too.  Nothing is trusted about the
 * input but its length: every read checks the end first.
 */
#include "launcher/json.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct parser {
	struct json_doc *doc;
	const char *p, *end;
	char *sp;		/* where the next decoded string goes in doc->strings */
	char *err;
	size_t errlen;
};

static void where(const char *input, size_t offset, size_t *line, size_t *col)
{
	size_t l = 1, c = 1;
	for (size_t i = 0; i < offset; i++) {
		if (input[i] == '\n') {
			l++;
			c = 1;
		} else {
			c++;
		}
	}
	*line = l;
	*col = c;
}

/* Records the first failure, at position at; always returns -1. */
static int parse_error(struct parser *ps, const char *at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int parse_error(struct parser *ps, const char *at, const char *fmt, ...)
{
	size_t line, col;
	where(ps->doc->input, (size_t)(at - ps->doc->input), &line, &col);
	int n = snprintf(ps->err, ps->errlen, "line %zu, column %zu: ", line, col);
	if (n >= 0 && (size_t)n < ps->errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(ps->err + n, ps->errlen - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* "unexpected 'x'" or the byte in hex when it would not print, or "the end". */
static int unexpected(struct parser *ps, const char *expected)
{
	if (ps->p >= ps->end)
		return parse_error(ps, ps->p, "the text ends early: expected %s", expected);
	unsigned char c = (unsigned char)*ps->p;
	if (c > 0x20 && c < 0x7f)
		return parse_error(ps, ps->p, "unexpected '%c': expected %s", c, expected);
	return parse_error(ps, ps->p, "unexpected byte 0x%02x: expected %s", c, expected);
}

static void skip_ws(struct parser *ps)
{
	while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
		ps->p++;
}

static int new_node(struct parser *ps, enum json_type type, const char *at)
{
	struct json_doc *d = ps->doc;
	if (d->n >= JSON_MAX_NODES)
		return parse_error(ps, at, "more than %d values", JSON_MAX_NODES);
	if (d->n == d->cap) {
		int cap = d->cap ? d->cap * 2 : 256;
		struct json_node *nodes = realloc(d->nodes, (size_t)cap * sizeof(*nodes));
		if (!nodes)
			return parse_error(ps, at, "out of memory");
		d->nodes = nodes;
		d->cap = cap;
	}
	d->nodes[d->n] = (struct json_node){ .type = type, .first = -1, .next = -1,
					     .offset = (size_t)(at - d->input) };
	return d->n++;
}

static int hex4(const char *s, unsigned *out)
{
	unsigned v = 0;
	for (int i = 0; i < 4; i++) {
		char c = s[i];
		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (unsigned)(c - 'A' + 10);
		else
			return -1;
	}
	*out = v;
	return 0;
}

static char *put_utf8(char *o, unsigned cp)
{
	if (cp < 0x80) {
		*o++ = (char)cp;
	} else if (cp < 0x800) {
		*o++ = (char)(0xc0 | cp >> 6);
		*o++ = (char)(0x80 | (cp & 0x3f));
	} else if (cp < 0x10000) {
		*o++ = (char)(0xe0 | cp >> 12);
		*o++ = (char)(0x80 | (cp >> 6 & 0x3f));
		*o++ = (char)(0x80 | (cp & 0x3f));
	} else {
		*o++ = (char)(0xf0 | cp >> 18);
		*o++ = (char)(0x80 | (cp >> 12 & 0x3f));
		*o++ = (char)(0x80 | (cp >> 6 & 0x3f));
		*o++ = (char)(0x80 | (cp & 0x3f));
	}
	return o;
}

/* No overlong forms, no surrogates, nothing above U+10FFFF: what a strict reader refuses. */
size_t json_utf8_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	size_t len;
	unsigned char lo = 0x80, hi = 0xbf;	/* the range of the second byte */
	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4;
	else
		return 0;
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

/* The string at ps->p (its opening quote), decoded into the strings block. */
static int parse_string(struct parser *ps, const char **out, size_t *out_len)
{
	const char *open = ps->p++;
	char *o = ps->sp, *start = o;
	for (;;) {
		if (ps->p >= ps->end)
			return parse_error(ps, open, "the text ends inside this string");
		unsigned char c = (unsigned char)*ps->p;
		if (c == '"') {
			ps->p++;
			break;
		}
		if (c < 0x20)
			return parse_error(ps, ps->p, "control character 0x%02x in a string (write it as an escape)", c);
		if (c >= 0x80) {
			size_t n = json_utf8_len((const unsigned char *)ps->p, (size_t)(ps->end - ps->p));
			if (!n)
				return parse_error(ps, ps->p, "invalid UTF-8 in a string");
			memcpy(o, ps->p, n);
			o += n;
			ps->p += n;
			continue;
		}
		if (c != '\\') {
			*o++ = (char)c;
			ps->p++;
			continue;
		}
		const char *esc = ps->p++;
		if (ps->p >= ps->end)
			return parse_error(ps, open, "the text ends inside this string");
		switch (*ps->p++) {
		case '"': *o++ = '"'; break;
		case '\\': *o++ = '\\'; break;
		case '/': *o++ = '/'; break;
		case 'b': *o++ = '\b'; break;
		case 'f': *o++ = '\f'; break;
		case 'n': *o++ = '\n'; break;
		case 'r': *o++ = '\r'; break;
		case 't': *o++ = '\t'; break;
		case 'u': {
			unsigned cp, lo;
			if (ps->end - ps->p < 4 || hex4(ps->p, &cp))
				return parse_error(ps, esc, "\\u needs four hexadecimal digits");
			ps->p += 4;
			if (cp >= 0xdc00 && cp <= 0xdfff)
				return parse_error(ps, esc, "\\u%04x: a low surrogate without a high one", cp);
			if (cp >= 0xd800 && cp <= 0xdbff) {
				/* UTF-16 in JSON: the pair is one character. */
				if (ps->end - ps->p < 6 || ps->p[0] != '\\' || ps->p[1] != 'u' || hex4(ps->p + 2, &lo) ||
				    lo < 0xdc00 || lo > 0xdfff)
					return parse_error(ps, esc, "\\u%04x: a high surrogate without a low one", cp);
				ps->p += 6;
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
			}
			o = put_utf8(o, cp);
			break;
		}
		default:
			return parse_error(ps, esc, "invalid escape in a string");
		}
	}
	*o++ = '\0';
	ps->sp = o;
	*out = start;
	*out_len = (size_t)(o - start - 1);
	return 0;
}

static bool digit(const struct parser *ps)
{
	return ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9';
}

static int parse_number(struct parser *ps, int node)
{
	const char *start = ps->p;
	if (*ps->p == '-')
		ps->p++;
	if (!digit(ps))
		return unexpected(ps, "a digit");
	if (*ps->p == '0') {
		ps->p++;
		if (digit(ps))
			return parse_error(ps, start, "a number with a leading zero");
	} else {
		while (digit(ps))
			ps->p++;
	}
	if (ps->p < ps->end && *ps->p == '.') {
		ps->p++;
		if (!digit(ps))
			return unexpected(ps, "a digit after '.'");
		while (digit(ps))
			ps->p++;
	}
	if (ps->p < ps->end && (*ps->p == 'e' || *ps->p == 'E')) {
		ps->p++;
		if (ps->p < ps->end && (*ps->p == '+' || *ps->p == '-'))
			ps->p++;
		if (!digit(ps))
			return unexpected(ps, "a digit in the exponent");
		while (digit(ps))
			ps->p++;
	}
	ps->doc->nodes[node].text = start;
	ps->doc->nodes[node].len = (size_t)(ps->p - start);
	return 0;
}

static int parse_value(struct parser *ps, int depth);

/* Adds child to the container node after last (-1: it is the first). */
static void link_child(struct json_doc *d, int node, int *last, int child)
{
	if (*last < 0)
		d->nodes[node].first = child;
	else
		d->nodes[*last].next = child;
	*last = child;
	d->nodes[node].count++;
}

/* Recursion through parse_value stops at JSON_MAX_DEPTH. */
static int parse_array(struct parser *ps, int node, int depth) // NOLINT(misc-no-recursion)
{
	int last = -1;
	ps->p++;
	skip_ws(ps);
	if (ps->p < ps->end && *ps->p == ']') {
		ps->p++;
		return 0;
	}
	for (;;) {
		int child = parse_value(ps, depth);
		if (child < 0)
			return -1;
		link_child(ps->doc, node, &last, child);
		skip_ws(ps);
		if (ps->p < ps->end && *ps->p == ',') {
			ps->p++;
			continue;
		}
		if (ps->p < ps->end && *ps->p == ']') {
			ps->p++;
			return 0;
		}
		return unexpected(ps, "',' or ']'");
	}
}

static int parse_object(struct parser *ps, int node, int depth) // NOLINT(misc-no-recursion)
{
	int last = -1;
	ps->p++;
	skip_ws(ps);
	if (ps->p < ps->end && *ps->p == '}') {
		ps->p++;
		return 0;
	}
	for (;;) {
		const char *key;
		size_t key_len;
		skip_ws(ps);
		if (ps->p >= ps->end || *ps->p != '"')
			return unexpected(ps, "a member name in double quotes");
		if (parse_string(ps, &key, &key_len))
			return -1;
		skip_ws(ps);
		if (ps->p >= ps->end || *ps->p != ':')
			return unexpected(ps, "':'");
		ps->p++;
		int child = parse_value(ps, depth);
		if (child < 0)
			return -1;
		ps->doc->nodes[child].key = key;
		ps->doc->nodes[child].key_len = key_len;
		link_child(ps->doc, node, &last, child);
		skip_ws(ps);
		if (ps->p < ps->end && *ps->p == ',') {
			ps->p++;
			continue;
		}
		if (ps->p < ps->end && *ps->p == '}') {
			ps->p++;
			return 0;
		}
		return unexpected(ps, "',' or '}'");
	}
}

static int parse_literal(struct parser *ps, const char *word)
{
	size_t n = strlen(word);
	if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n))
		return parse_error(ps, ps->p, "not a JSON value (%s?)", word);
	ps->p += n;
	return 0;
}

/* One value, whitespace before it skipped; its node index, or -1. */
static int parse_value(struct parser *ps, int depth) // NOLINT(misc-no-recursion)
{
	skip_ws(ps);
	if (ps->p >= ps->end)
		return unexpected(ps, "a value");
	const char *at = ps->p;
	enum json_type type;
	switch (*at) {
	case '{': type = JSON_OBJECT; break;
	case '[': type = JSON_ARRAY; break;
	case '"': type = JSON_STRING; break;
	case 't': type = JSON_TRUE; break;
	case 'f': type = JSON_FALSE; break;
	case 'n': type = JSON_NULL; break;
	default:
		if (*at != '-' && (*at < '0' || *at > '9'))
			return unexpected(ps, "a value");
		type = JSON_NUMBER;
	}
	if ((type == JSON_OBJECT || type == JSON_ARRAY) && depth >= JSON_MAX_DEPTH)
		return parse_error(ps, at, "arrays and objects nested more than %d deep", JSON_MAX_DEPTH);
	int node = new_node(ps, type, at);
	if (node < 0)
		return -1;
	int r;
	switch (type) {
	case JSON_OBJECT: r = parse_object(ps, node, depth + 1); break;
	case JSON_ARRAY: r = parse_array(ps, node, depth + 1); break;
	case JSON_STRING: {
		const char *s;
		size_t len;
		r = parse_string(ps, &s, &len);
		/* parse_string sets s and len when it returns 0. */
		if (!r) {
			ps->doc->nodes[node].text = s; // NOLINT(clang-analyzer-core.uninitialized.Assign)
			ps->doc->nodes[node].len = len;
		}
		break;
	}
	case JSON_NUMBER: r = parse_number(ps, node); break;
	case JSON_TRUE: r = parse_literal(ps, "true"); break;
	case JSON_FALSE: r = parse_literal(ps, "false"); break;
	default: r = parse_literal(ps, "null"); break;
	}
	return r ? -1 : node;
}

int json_parse(struct json_doc *doc, const char *text, size_t len, char *err, size_t errlen)
{
	memset(doc, 0, sizeof(*doc));
	doc->input = text;
	doc->input_len = len;
	struct parser ps = { .doc = doc, .p = text, .end = text + len, .err = err, .errlen = errlen };
	/* A decoded string plus its NUL is never longer than it was with its
	 * quotes, so one block of the input's size holds them all and never
	 * moves. */
	doc->strings = malloc(len + 1);
	if (!doc->strings) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	ps.sp = doc->strings;
	skip_ws(&ps);
	if (ps.p >= ps.end) {
		snprintf(err, errlen, "%s", len ? "only blanks, no JSON value" : "empty, no JSON value");
		json_free(doc);
		return -1;
	}
	if (parse_value(&ps, 0) < 0) {
		json_free(doc);
		return -1;
	}
	skip_ws(&ps);
	if (ps.p < ps.end) {
		unexpected(&ps, "nothing after the end of the document");
		json_free(doc);
		return -1;
	}
	return 0;
}

void json_free(struct json_doc *doc)
{
	free(doc->nodes);
	free(doc->strings);
	memset(doc, 0, sizeof(*doc));
}

int json_member(const struct json_doc *doc, int obj, const char *name)
{
	if (obj < 0 || obj >= doc->n || doc->nodes[obj].type != JSON_OBJECT)
		return -1;
	size_t n = strlen(name);
	int found = -1;
	for (int c = doc->nodes[obj].first; c >= 0; c = doc->nodes[c].next) {
		const struct json_node *m = &doc->nodes[c];
		if (m->key_len == n && !memcmp(m->key, name, n)) {
			if (found >= 0)
				return JSON_DUPLICATE;
			found = c;
		}
	}
	return found;
}

int json_element(const struct json_doc *doc, int arr, int i)
{
	if (arr < 0 || arr >= doc->n || doc->nodes[arr].type != JSON_ARRAY || i < 0)
		return -1;
	int c = doc->nodes[arr].first;
	while (c >= 0 && i-- > 0)
		c = doc->nodes[c].next;
	return c;
}

int json_u64(const struct json_doc *doc, int node, uint64_t *out)
{
	if (node < 0 || node >= doc->n || doc->nodes[node].type != JSON_NUMBER)
		return -1;
	const struct json_node *v = &doc->nodes[node];
	uint64_t x = 0;
	for (size_t i = 0; i < v->len; i++) {
		char c = v->text[i];
		if (c < '0' || c > '9')
			return -1;	/* a sign, a fraction or an exponent */
		unsigned d = (unsigned)(c - '0');
		if (x > (UINT64_MAX - d) / 10)
			return -1;
		x = x * 10 + d;
	}
	*out = x;
	return 0;
}

void json_where(const struct json_doc *doc, int node, size_t *line, size_t *col)
{
	size_t off = node >= 0 && node < doc->n ? doc->nodes[node].offset : 0;
	where(doc->input, off, line, col);
}
