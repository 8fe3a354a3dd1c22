/*
 * A JSON writer for `bufsel ab --json` and the benchmark suite: objects and
 * arrays opened and closed in order, commas and indentation kept here, and
 * every string written as valid JSON whatever bytes it holds (a program's
 * argv and stderr need not be UTF-8: an invalid byte becomes U+FFFD), so
 * that launcher/json.c, the strictest reader there is, reads the output back.
 * Numbers that JSON cannot express (NaN, infinities) are written as null.
 *
 * A key is given for a member of an object and must be NULL for an element
 * of an array or for the top-level value.  Errors of the stream are checked
 * once, by jw_finish().
 */
#ifndef BUFSEL_LAUNCHER_JSON_WRITE_H
#define BUFSEL_LAUNCHER_JSON_WRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define JW_MAX_DEPTH 32

struct json_writer {
	FILE *f;
	int depth;
	bool flat[JW_MAX_DEPTH];	/* elements on one line */
	bool array[JW_MAX_DEPTH];	/* closes with ']' rather than '}' */
	bool any[JW_MAX_DEPTH];		/* a value was written: the next needs a comma */
};

void jw_init(struct json_writer *w, FILE *f);
void jw_object(struct json_writer *w, const char *key);
void jw_array(struct json_writer *w, const char *key);
/* Containers whose members stay on one line, and so does all they hold. */
void jw_object_flat(struct json_writer *w, const char *key);
void jw_array_flat(struct json_writer *w, const char *key);
void jw_end(struct json_writer *w);
void jw_string(struct json_writer *w, const char *key, const char *s);	/* NULL: null */
void jw_string_n(struct json_writer *w, const char *key, const char *s, size_t len);
void jw_number(struct json_writer *w, const char *key, double v);
void jw_u64(struct json_writer *w, const char *key, uint64_t v);
void jw_int(struct json_writer *w, const char *key, long long v);
void jw_bool(struct json_writer *w, const char *key, bool v);
void jw_null(struct json_writer *w, const char *key);
/* text is one JSON value already checked (json_parse()), copied as it is. */
void jw_raw(struct json_writer *w, const char *key, const char *text, size_t len);
/* Ends the document with a newline and flushes: 0, or -1 when the stream failed. */
int jw_finish(struct json_writer *w);

#endif
