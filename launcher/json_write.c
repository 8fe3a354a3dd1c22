/*
 * The writer of json_write.h.  Depth beyond JW_MAX_DEPTH is a caller's bug,
 * not an input's: the documents written here are a fixed shape.
 */
#include "launcher/json_write.h"

#include "launcher/json.h"

#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

void jw_init(struct json_writer *w, FILE *f)
{
	*w = (struct json_writer){ .f = f, .depth = 0 };
}

static void indent(struct json_writer *w)
{
	fputc('\n', w->f);
	for (int i = 0; i < w->depth; i++)
		fputc(' ', w->f);
}

static void put_string(FILE *f, const char *str, size_t len)
{
	const unsigned char *s = (const unsigned char *)str;
	fputc('"', f);
	for (size_t i = 0; i < len;) {
		unsigned char c = s[i];
		if (c == '"' || c == '\\') {
			fputc('\\', f);
			fputc(c, f);
			i++;
		} else if (c == '\n') {
			fputs("\\n", f);
			i++;
		} else if (c == '\t') {
			fputs("\\t", f);
			i++;
		} else if (c < 0x20 || c == 0x7f) {
			fprintf(f, "\\u%04x", c);
			i++;
		} else if (c < 0x80) {
			fputc(c, f);
			i++;
		} else {
			size_t n = json_utf8_len(s + i, len - i);
			if (n) {
				(void)fwrite(s + i, 1, n, f);	/* ferror() in jw_finish */
				i += n;
			} else {
				fputs("\\ufffd", f);
				i++;
			}
		}
	}
	fputc('"', f);
}

/* The comma, the line break and the key before a value. */
static void start(struct json_writer *w, const char *key)
{
	if (w->depth > 0) {
		int d = w->depth - 1;
		assert(!key == w->array[d]);
		if (w->any[d])
			fputs(w->flat[d] ? ", " : ",", w->f);
		if (!w->flat[d])
			indent(w);
		w->any[d] = true;
	}
	if (key) {
		put_string(w->f, key, strlen(key));
		fputs(": ", w->f);
	}
}

static void open_container(struct json_writer *w, const char *key, bool array, bool flat)
{
	start(w, key);
	assert(w->depth < JW_MAX_DEPTH);
	fputc(array ? '[' : '{', w->f);
	w->array[w->depth] = array;
	/* A line break inside a one-line container would end its line. */
	w->flat[w->depth] = flat || (w->depth > 0 && w->flat[w->depth - 1]);
	w->any[w->depth] = false;
	w->depth++;
}

void jw_object(struct json_writer *w, const char *key)
{
	open_container(w, key, false, false);
}

void jw_object_flat(struct json_writer *w, const char *key)
{
	open_container(w, key, false, true);
}

void jw_array(struct json_writer *w, const char *key)
{
	open_container(w, key, true, false);
}

void jw_array_flat(struct json_writer *w, const char *key)
{
	open_container(w, key, true, true);
}

void jw_end(struct json_writer *w)
{
	assert(w->depth > 0);
	w->depth--;
	if (w->any[w->depth] && !w->flat[w->depth])
		indent(w);
	fputc(w->array[w->depth] ? ']' : '}', w->f);
}

void jw_string_n(struct json_writer *w, const char *key, const char *s, size_t len)
{
	start(w, key);
	put_string(w->f, s, len);
}

void jw_string(struct json_writer *w, const char *key, const char *s)
{
	if (!s) {
		jw_null(w, key);
		return;
	}
	jw_string_n(w, key, s, strlen(s));
}

void jw_number(struct json_writer *w, const char *key, double v)
{
	start(w, key);
	if (isfinite(v))
		fprintf(w->f, "%.10g", v);
	else
		fputs("null", w->f);
}

void jw_u64(struct json_writer *w, const char *key, uint64_t v)
{
	start(w, key);
	fprintf(w->f, "%" PRIu64, v);
}

void jw_int(struct json_writer *w, const char *key, long long v)
{
	start(w, key);
	fprintf(w->f, "%lld", v);
}

void jw_bool(struct json_writer *w, const char *key, bool v)
{
	start(w, key);
	fputs(v ? "true" : "false", w->f);
}

void jw_null(struct json_writer *w, const char *key)
{
	start(w, key);
	fputs("null", w->f);
}

void jw_raw(struct json_writer *w, const char *key, const char *text, size_t len)
{
	/* The trailing newline of a file would only break the indentation. */
	while (len && (text[len - 1] == '\n' || text[len - 1] == ' ' || text[len - 1] == '\r' || text[len - 1] == '\t'))
		len--;
	start(w, key);
	(void)fwrite(text, 1, len, w->f);	/* ferror() in jw_finish */
}

int jw_finish(struct json_writer *w)
{
	assert(w->depth == 0);
	fputc('\n', w->f);
	return fflush(w->f) || ferror(w->f) ? -1 : 0;
}
