/*
 * Message text: appending to a fixed buffer that is never overrun, quoting
 * any bytes as one printable line, and the problem list built on both.  Here
 * because every other file of conf/ writes messages, the options table's
 * printers and --help's key list too; it needs nothing else of conf/.
 */
#include "conf/internal.h"

#include <stdarg.h>
#include <stdio.h>

void conf_sink_init(struct conf_sink *s, char *buf, size_t len)
{
	s->buf = buf;
	s->len = len;
	s->used = 0;
	s->count = 0;
	s->hide = 0;
	if (len)
		buf[0] = '\0';
}

static void vappend(char *buf, size_t len, size_t *used, const char *fmt, va_list ap)
{
	char *dst = NULL;
	size_t room = 0;
	if (*used < len) {
		dst = buf + *used;
		room = len - *used;
	}
	int n = vsnprintf(dst, room, fmt, ap);
	if (n > 0)
		*used += (size_t)n;
}

void conf_append(char *buf, size_t len, size_t *used, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vappend(buf, len, used, fmt, ap);
	va_end(ap);
}

/* One "bufsel: ..." line in the sink. */
static void sink_line(struct conf_sink *s, const char *fmt, va_list ap)
{
	conf_append(s->buf, s->len, &s->used, "bufsel: ");
	vappend(s->buf, s->len, &s->used, fmt, ap);
	conf_append(s->buf, s->len, &s->used, "\n");
}

void conf_problem(struct conf_sink *s, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	sink_line(s, fmt, ap);
	va_end(ap);
	s->count++;
}

/* A line that is not an error: the load still succeeds. */
void conf_warning(struct conf_sink *s, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	sink_line(s, fmt, ap);
	va_end(ap);
}

void conf_quote(char *dst, size_t dstlen, const char *s, size_t n, size_t max)
{
	size_t i, j = 0;
	if (!dstlen)
		return;
	for (i = 0; i < n && i < max && j + 1 < dstlen; i++) {
		unsigned char ch = (unsigned char)s[i];
		dst[j++] = ch < 0x20 || ch == 0x7f ? '?' : (char)ch;
	}
	if (i < n)
		for (int k = 0; k < 3 && j + 1 < dstlen; k++)
			dst[j++] = '.';
	dst[j] = '\0';
}
