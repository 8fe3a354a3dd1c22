/*
 * A strict JSON reader (RFC 8259) for `bufsel report`.  The statistics file
 * is whatever was left at the path: written by a bufsel of another version,
 * cut short by a killed process, or not a statistics file at all.  So the
 * whole grammar is checked before anything is used, nesting is bounded, the
 * input and the number of values are bounded, and every failure is a message
 * with a line and a column, never a crash.
 *
 * The document becomes a flat array of nodes (index 0 is the root), linked
 * first-child / next-sibling, so a reader walks it without recursion.
 * Strings are decoded (escapes, \u surrogate pairs) into one block sized
 * from the input, so their pointers stay valid until json_free().  Numbers
 * are kept as their text: json_u64() converts the non-negative integers the
 * statistics use, exactly, and refuses what does not fit rather than
 * rounding it through a double.
 */
#ifndef BUFSEL_LAUNCHER_JSON_H
#define BUFSEL_LAUNCHER_JSON_H

#include <stddef.h>
#include <stdint.h>

#define JSON_MAX_DEPTH 64		/* arrays and objects inside each other */
#define JSON_MAX_NODES (1 << 24)	/* values in one document */

enum json_type { JSON_NULL, JSON_FALSE, JSON_TRUE, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT };

struct json_node {
	enum json_type type;
	int first;		/* array, object: first element or member; -1 when empty */
	int next;		/* the next element or member of the parent; -1 for the last */
	int count;		/* array, object: how many elements or members */
	const char *key;	/* a member's name, decoded and NUL-terminated; NULL otherwise */
	size_t key_len;
	const char *text;	/* string: decoded and NUL-terminated; number: as written, not terminated */
	size_t len;
	size_t offset;		/* where the value starts in the input, for messages */
};

struct json_doc {
	struct json_node *nodes;
	int n, cap;
	char *strings;		/* every decoded string and name, each NUL-terminated */
	const char *input;	/* the text parsed, for json_where(); not owned */
	size_t input_len;
};

/*
 * Parses len bytes of text (no terminating NUL needed) into *doc.  Returns 0,
 * or -1 with a message in err ("line L, column C: what is wrong") and *doc
 * left empty.  text must outlive doc: numbers point into it.
 */
int json_parse(struct json_doc *doc, const char *text, size_t len, char *err, size_t errlen);

void json_free(struct json_doc *doc);

/* The member of object obj named name: its index, -1 when there is none, or
 * JSON_DUPLICATE when the name occurs more than once (JSON leaves the meaning
 * of that open, so a strict reader refuses to pick one). */
#define JSON_DUPLICATE (-2)
int json_member(const struct json_doc *doc, int obj, const char *name);

/* Element i of array arr, or -1. */
int json_element(const struct json_doc *doc, int arr, int i);

/* A number written as a non-negative integer (no sign, fraction or exponent)
 * that fits in 64 bits: 0 and *out set; else -1. */
int json_u64(const struct json_doc *doc, int node, uint64_t *out);

/* The line and column (both from 1, the column in bytes) where node starts. */
void json_where(const struct json_doc *doc, int node, size_t *line, size_t *col);

/* The length of the well-formed UTF-8 sequence at s (at most n bytes), or 0. */
size_t json_utf8_len(const unsigned char *s, size_t n);

#endif
