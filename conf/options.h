/*
 * The options table: every knob bufsel reads, in one place.  The variable name
 * is derived from the option name (BUFSEL_<NAME>), so the launcher's --help,
 * the README and the parser cannot drift apart.  conf/ keeps no mutable global
 * state: conf_load() fills a caller-owned struct once, at load time.
 */
#ifndef BUFSEL_CONF_OPTIONS_H
#define BUFSEL_CONF_OPTIONS_H

#include <stddef.h>

enum bufsel_mode { BUFSEL_MODE_EMULATE, BUFSEL_MODE_PASSTHROUGH };
enum bufsel_log_level { BUFSEL_LOG_ERROR, BUFSEL_LOG_WARN, BUFSEL_LOG_INFO, BUFSEL_LOG_DEBUG };

struct bufsel_conf {
	enum bufsel_mode mode;
	enum bufsel_log_level log;
	/* Behave as on this kernel (major << 8 | minor); 0: the running one. */
	unsigned kernel;
};

struct conf_option {
	const char *name;	/* file key; the variable is BUFSEL_<NAME upper> */
	const char *values;	/* accepted values, for messages and --help */
	const char *dflt;
	const char *help;
	int (*parse)(struct bufsel_conf *c, const char *val);
};

extern const struct conf_option conf_options[];
extern const size_t conf_option_count;

/*
 * Reads BUFSEL_* from envp.  Returns 0, or the number of problems found; each
 * problem is written to err (one "bufsel: BUFSEL_X: problem" line each,
 * newline-terminated, truncated to errlen).  Unknown BUFSEL_* variables are
 * problems too, so a typo never passes silently.
 */
int conf_load(struct bufsel_conf *out, char *const *envp, char *err, size_t errlen);

/* Writes the option list for --help, one option per line, into buf. */
size_t conf_describe(char *buf, size_t len);

#endif
