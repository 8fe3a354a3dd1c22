/*
 * A run's output (ab_capture.h).  A malformed token in a bench: line, or a
 * name ab measures itself, is warned about once per ab and skipped: the
 * program's other metrics still count.  Past AB_MAX_MEASURES names, new
 * ones are dropped, also with one warning.
 */
#define _GNU_SOURCE
#include "launcher/ab_capture.h"

#include "launcher/ab_measures.h"
#include "launcher/ab_messages.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define AB_MAX_NAME 63			/* bytes in a metric's name */
#define AB_TAIL_LINES 20

#define BENCH_PREFIX "bench:"

static int measure_index(const char *name, size_t len)
{
	for (unsigned i = 0; i < ab.nmeasures; i++)
		if (strlen(ab.measure[i]) == len && !memcmp(ab.measure[i], name, len))
			return (int)i;
	if (ab.nmeasures == AB_MAX_MEASURES) {
		if (!ab.warned_full)
			ab_warn("more than %d metric names: '%.*s' and any later new name are ignored",
			        AB_MAX_MEASURES - M_BUILTIN, (int)len, name);
		ab.warned_full = true;
		return -1;
	}
	ab.measure[ab.nmeasures] = strndup(name, len);
	if (!ab.measure[ab.nmeasures])
		ab_fatal("out of memory");
	return (int)ab.nmeasures++;
}

static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
	       c == '-';
}

/* "bench: name=value ...": every well-formed pair is kept, the last of a name wins. */
static void bench_line(const char *line, size_t len, struct run_result *res)
{
	const char *p = line + strlen(BENCH_PREFIX), *end = line + len;
	while (p < end) {
		while (p < end && (*p == ' ' || *p == '\t' || *p == '\r'))
			p++;
		const char *tok = p;
		while (p < end && *p != ' ' && *p != '\t' && *p != '\r')
			p++;
		size_t tlen = (size_t)(p - tok);
		if (!tlen)
			break;
		const char *eq = memchr(tok, '=', tlen);
		size_t nlen = eq ? (size_t)(eq - tok) : 0;
		bool ok = eq && nlen && nlen <= AB_MAX_NAME;
		for (size_t i = 0; ok && i < nlen; i++)
			ok = name_char(tok[i]);
		double v = 0;
		if (ok) {
			char num[64], *e;
			size_t vlen = tlen - nlen - 1;
			ok = vlen && vlen < sizeof(num);
			if (ok) {
				memcpy(num, eq + 1, vlen);
				num[vlen] = '\0';
				v = strtod(num, &e);
				ok = !*e && isfinite(v);
			}
		}
		if (!ok) {
			if (!ab.warned_token)
				ab_warn("ignoring '%.*s' in a bench: line: expected NAME=NUMBER (NAME of letters, digits, "
				        "'_', '.', '-')",
				        (int)(tlen > 80 ? 80 : tlen), tok);
			ab.warned_token = true;
			continue;
		}
		int m = measure_index(tok, nlen);
		if (m >= M_BUILTIN)
			res->v[m] = v;
		else if (m >= 0 && !ab.warned_token) {
			ab_warn("ignoring '%.*s' in a bench: line: %s is measured by ab", (int)tlen, tok, ab.measure[m]);
			ab.warned_token = true;
		}
	}
}

void ab_take_stdout(struct capture *c, const char *buf, size_t n, struct run_result *res)
{
	for (size_t i = 0; i < n; i++) {
		if (buf[i] == '\n') {
			if (!c->overlong && c->len >= strlen(BENCH_PREFIX) &&
			    !memcmp(c->line, BENCH_PREFIX, strlen(BENCH_PREFIX)))
				bench_line(c->line, c->len, res);
			c->len = 0;
			c->overlong = false;
		} else if (c->len < sizeof(c->line)) {
			c->line[c->len++] = buf[i];
		} else {
			c->overlong = true;
		}
	}
}

void ab_take_stderr(struct capture *c, const char *buf, size_t n)
{
	if (n >= AB_TAIL) {
		memcpy(c->tail, buf + n - AB_TAIL, AB_TAIL);
		c->tail_len = AB_TAIL;
		return;
	}
	if (c->tail_len + n > sizeof(c->tail)) {
		size_t keep = AB_TAIL - n;
		memmove(c->tail, c->tail + c->tail_len - keep, keep);
		c->tail_len = keep;
	}
	memcpy(c->tail + c->tail_len, buf, n);
	c->tail_len += n;
}

/* The last AB_TAIL_LINES lines of what the program wrote on stderr. */
char *ab_stderr_tail(const struct capture *c)
{
	size_t len = c->tail_len, start, lines = 0;
	while (len && c->tail[len - 1] == '\n')
		len--;
	for (start = len; start > 0; start--)
		if (c->tail[start - 1] == '\n' && ++lines == AB_TAIL_LINES)
			break;
	char *s = strndup(c->tail + start, len - start);
	if (!s)
		ab_fatal("out of memory");
	return s;
}
