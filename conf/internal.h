/*
 * What conf/'s files share and the tests and the fuzz harness reach into:
 * the problem list, key and variable resolution, applying one setting, the
 * file-text parser, and the loader's entry points below conf_load().
 */
#ifndef BUFSEL_CONF_INTERNAL_H
#define BUFSEL_CONF_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "conf/options.h"

#define CONF_SYSTEM_FILE "/etc/bufsel.conf"
/* Longest key or variable name worth resolving: "group.65535.enobufs_rate" fits. */
#define CONF_KEY_MAX 64
/* How much of a value or a name a message quotes. */
#define CONF_QUOTE_VALUE 64
#define CONF_QUOTE_NAME 256

/* The problem list: lines appended to a caller's buffer, truncated, counted. */
struct conf_sink {
	char *buf;
	size_t len, used;
	int count;
	/* Secure-execution mode: messages quote no byte of the file's lines. */
	int hide;
};

void conf_sink_init(struct conf_sink *s, char *buf, size_t len);
/* Appends "bufsel: " fmt "\n" and counts one problem. */
void conf_problem(struct conf_sink *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends "bufsel: " fmt "\n" without counting: a warning, the load goes on. */
void conf_warning(struct conf_sink *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends fmt to a buffer, keeping it NUL-terminated; *used grows by what was wanted, capped. */
void conf_append(char *buf, size_t len, size_t *used, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/*
 * Copies at most max bytes of s[0..n) to dst for a message: control bytes
 * become '?' (a message is one line), "..." marks a cut.  dst holds max + 4.
 */
void conf_quote(char *dst, size_t dstlen, const char *s, size_t n, size_t max);

/* A resolved key: which row, and for a group key which group (-1: all groups). */
struct conf_ref {
	enum conf_key key;
	int bgid;
};

/*
 * Resolves a file key ("cap", "group.5.cap") or a variable name
 * ("BUFSEL_CAP", "BUFSEL_GROUP_5_CAP").  Returns 0, or -EINVAL with the
 * reason in why ("unknown key (...)", "mode is not a per-group key (...)").
 */
int conf_key_resolve(const char *key, size_t n, struct conf_ref *r, char *why, size_t whylen);
int conf_var_resolve(const char *var, size_t n, struct conf_ref *r, char *why, size_t whylen);

/* The file key of a resolved setting: "cap", "group.5.cap". */
void conf_key_name(const struct conf_ref *r, char *buf, size_t len);
/* Its variable: "BUFSEL_CAP", "BUFSEL_GROUP_5_CAP". */
void conf_var_name(const struct conf_ref *r, char *buf, size_t len);

/*
 * Sets one key from val (NUL-terminated, vlen bytes), recording from; where
 * prefixes any problem ("FILE:LINE: cap", "BUFSEL_CAP").  A file line that
 * sets a key the file already set is a problem.
 */
void conf_apply(struct bufsel_conf *c, const struct conf_ref *r, const char *val, size_t vlen,
		uint32_t from, const char *where, struct conf_sink *s);

/* Parses a file's text (len bytes, any bytes) into c; name is for messages. */
void conf_parse_text(struct bufsel_conf *c, const char *name, const char *text, size_t len,
		     struct conf_sink *s);

/* Sets every default; the struct is zeroed first, so equal loads compare equal. */
void conf_defaults(struct bufsel_conf *c);

/* Group table: index of bgid, inserted in order; -ENOSPC beyond CONF_MAX_GROUPS. */
int conf_group_slot(struct bufsel_conf *c, uint16_t bgid);
/* Fills every group's unset keys from the all-groups ones; done once, last. */
void conf_groups_resolve(struct bufsel_conf *c);

/* conf_load() with the system-wide file at system_file (tests use a temporary one). */
int conf_load_at(struct bufsel_conf *out, char *const *envp, const char *system_file, char *err,
		 size_t errlen);
/* conf_load_at() with secure-execution mode given rather than asked of the auxv. */
int conf_load_mode(struct bufsel_conf *out, char *const *envp, const char *system_file, int secure,
		   char *err, size_t errlen);
/* conf_load() with the file's text given rather than read (the fuzz harness). */
int conf_load_text(struct bufsel_conf *out, char *const *envp, const char *name, const char *text,
		   size_t len, char *err, size_t errlen);

#endif
