/*
 * bufsel's configuration: one options table, one configuration file, the
 * BUFSEL_* variables, and the immutable struct they are read into.
 *
 * Every knob is a row of conf_options[]: its file key, its BUFSEL_* variable
 * (derived from the key), accepted values, default and help text, so the
 * parser, the launcher's --help and --check-conf cannot drift apart.
 *
 * Sources, strongest first: a BUFSEL_* variable, the configuration file, the
 * table's default.  Per-group keys (cap, max_len, enobufs_rate, seed) exist
 * twice: for all groups (key "cap", variable BUFSEL_CAP) and for one group id
 * (key "group.5.cap", variable BUFSEL_GROUP_5_CAP).  Each key is resolved on
 * its own (variable, else file, else default); a group then takes its own key
 * when given anywhere, else the all-groups key.  docs/configuration.md has the
 * full rules, the file syntax and the default file location.
 *
 * The file, one setting per line:
 *
 *     # '#' as the first non-blank character makes a line a comment
 *     mode = emulate
 *     cap = 64
 *     group.5.max_len = 4096
 *
 * A '#' after a value is part of the value (a stats path may hold one).
 * Blanks (space, tab, carriage return) around the key and the value are
 * dropped, so CRLF files read like LF files; a leading UTF-8 byte-order mark
 * is skipped.  Keys are lower case.  A key given twice in one file is an
 * error: bufsel cannot know which one was meant.  The file is at most
 * CONF_FILE_MAX bytes.
 *
 * conf/ keeps no mutable global state, maps no memory and allocates none
 * itself: conf_load() fills a caller-owned struct once, at load time,
 * reading the file into a fixed stack buffer (about 72 KiB of stack in all);
 * it runs in the library's constructor, before the program's main.
 */
#ifndef BUFSEL_CONF_OPTIONS_H
#define BUFSEL_CONF_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

enum bufsel_mode { BUFSEL_MODE_EMULATE, BUFSEL_MODE_PASSTHROUGH };
/* How inline system calls are caught: see docs/interception.md. */
enum bufsel_trap { BUFSEL_TRAP_AUTO, BUFSEL_TRAP_DISPATCH, BUFSEL_TRAP_SECCOMP };
/* Who keeps a buffer ring (IORING_REGISTER_PBUF_RING): docs/buffer-selection.md. */
enum bufsel_rings { BUFSEL_RINGS_AUTO, BUFSEL_RINGS_EMULATE, BUFSEL_RINGS_KERNEL };
enum bufsel_legacy { BUFSEL_LEGACY_KERNEL, BUFSEL_LEGACY_LATEST };
enum bufsel_log_level { BUFSEL_LOG_ERROR, BUFSEL_LOG_WARN, BUFSEL_LOG_INFO, BUFSEL_LOG_DEBUG };

/* Group ids that may have settings of their own; more is a configuration error. */
#define CONF_MAX_GROUPS 256
/* The largest configuration file read, in bytes (into a static buffer). */
#define CONF_FILE_MAX 65536
/* Room for a path: the stats path and the file's name are shorter. */
#define CONF_PATH_MAX 4096
/* enobufs_rate is kept in billionths: this is a rate of 1. */
#define CONF_RATE_ONE 1000000000u

/* Row indices of conf_options[]; the per-group keys come last, in one run. */
enum conf_key {
	CONF_MODE,
	CONF_LOG,
	CONF_KERNEL,
	CONF_STATS,
	CONF_PATCH,
	CONF_TRAP,
	CONF_FAIL_ALLOC,
	CONF_RINGS,
	CONF_LEGACY,
	CONF_CAP,
	CONF_MAX_LEN,
	CONF_ENOBUFS_RATE,
	CONF_SEED,
	CONF_KEYS,
	CONF_GROUP_KEY0 = CONF_CAP,
	CONF_GROUP_KEYS = CONF_KEYS - CONF_CAP,
};

/* One buffer group's effective settings. */
struct conf_group {
	uint64_t seed;		/* seeds the group's fault injection: same seed, same faults */
	uint32_t cap;		/* most buffers of the group handed out at once; 0: no cap */
	uint32_t max_len;	/* most bytes handed out of each buffer; 0: the whole buffer */
	uint32_t enobufs_ppb;	/* chance a selection fails with -ENOBUFS, in billionths */
};

/* Where a setting came from: CONF_FROM_DEFAULT, CONF_FROM_ENV, or the file's line. */
#define CONF_FROM_DEFAULT 0u
#define CONF_FROM_ENV UINT32_MAX

enum conf_file_origin {
	CONF_FILE_NONE,		/* no file: none found, or BUFSEL_CONF is empty */
	CONF_FILE_ENV,		/* named by BUFSEL_CONF */
	CONF_FILE_USER,		/* $XDG_CONFIG_HOME/bufsel/bufsel.conf or ~/.config/... */
	CONF_FILE_SYSTEM,	/* /etc/bufsel.conf */
};

struct bufsel_conf {
	enum bufsel_mode mode;
	enum bufsel_log_level log;
	/* Behave as on this kernel (major << 8 | minor); 0: the running one. */
	unsigned kernel;
	/* Where statistics go: a path, "-" for stderr, "" for nowhere. */
	char stats[CONF_PATH_MAX];
	/* Rewrite trapped io_uring call sites to enter bufsel without a signal. */
	int patch;
	/* Syscall User Dispatch where the kernel has it (auto), or one mechanism only. */
	enum bufsel_trap trap;
	/* Fault injection: the Nth of bufsel's own allocations fails; 0: none. */
	uint32_t fail_alloc;
	/* Buffer rings: bufsel's where the kernel lacks what the program uses
	 * or a policy names the group (auto), always bufsel's, or the kernel's. */
	enum bufsel_rings rings;
	/* Legacy groups: the rules of the kernel the program meets (kernel), or
	 * the latest kernel's on any kernel (latest). */
	enum bufsel_legacy legacy;
	/* Secure-execution mode (AT_SECURE): nothing was taken from the environment. */
	int secure;

	/* Groups without settings of their own (conf_group_get() chooses). */
	struct conf_group all;
	unsigned ngroups;
	uint16_t group_id[CONF_MAX_GROUPS];	/* ascending */
	struct conf_group group[CONF_MAX_GROUPS]; /* group[i] is group_id[i]'s, all-groups keys filled in */

	/* Provenance, for --check-conf and for catching a key given twice. */
	enum conf_file_origin file_origin;
	char file[CONF_PATH_MAX];		/* the file read, "" when none */
	uint32_t from[CONF_KEYS];		/* the global and the all-groups keys */
	/* group i's own keys; CONF_FROM_DEFAULT: taken from the all-groups key */
	uint32_t group_from[CONF_MAX_GROUPS][CONF_GROUP_KEYS];
};

enum conf_scope {
	CONF_SCOPE_GLOBAL,	/* a field of struct bufsel_conf */
	CONF_SCOPE_GROUP,	/* a field of struct conf_group: all groups or one */
};

struct conf_option {
	const char *name;	/* file key; variable BUFSEL_<NAME upper>; group.<bgid>.<name> */
	enum conf_scope scope;
	const char *values;	/* accepted values, short, for --help */
	const char *expect;	/* completes "'VALUE' is not ..." in messages */
	const char *dflt;	/* the default, as written in the file */
	const char *help;
	/*
	 * dst is the struct bufsel_conf (global keys) or a struct conf_group.
	 * Returns 0, or -EINVAL without writing anything.
	 */
	int (*parse)(void *dst, const char *val);
	/* Writes the value as the file would say it. */
	void (*show)(const void *src, char *buf, size_t len);
	size_t offset, size;	/* the field in struct conf_group, for group keys */
};

extern const struct conf_option conf_options[CONF_KEYS];
extern const size_t conf_option_count;

/*
 * Reads the configuration file and the BUFSEL_* variables of envp into out.
 * The file is BUFSEL_CONF when set (empty: no file), else the first that
 * exists of $XDG_CONFIG_HOME/bufsel/bufsel.conf (or, with XDG_CONFIG_HOME
 * unset, $HOME/.config/bufsel/bufsel.conf) and /etc/bufsel.conf; a
 * default file that cannot be read is skipped with a warning.  In
 * secure-execution mode (AT_SECURE) only a root-owned /etc/bufsel.conf is
 * read and envp is not looked at.
 *
 * Returns 0, or the number of problems found; each is one line in err,
 * "bufsel: FILE:LINE: KEY: problem" or "bufsel: BUFSEL_X: problem",
 * newline-terminated, the whole truncated to errlen.  Unknown keys and
 * unknown BUFSEL_* variables are problems, so a typo never passes silently.
 * Warnings (a skipped file) are lines in err too, not counted: with a 0
 * return err may still hold some, for the caller to print.
 */
int conf_load(struct bufsel_conf *out, char *const *envp, char *err, size_t errlen);

/*
 * The effective settings of group bgid: its own where given, else the
 * all-groups ones.  A binary search over at most CONF_MAX_GROUPS ids.
 */
const struct conf_group *conf_group_get(const struct bufsel_conf *c, uint16_t bgid);

/* What must hold of a loaded conf; 0 or -EINVAL.  For tests and debug builds. */
int conf_check(const struct bufsel_conf *c);

/*
 * Checks one setting as the file would have it (key "cap", "group.5.cap")
 * and writes its variable name (BUFSEL_CAP, BUFSEL_GROUP_5_CAP) to var.
 * Returns 0, or -EINVAL with a one-line reason, "KEY: problem", in err.
 */
int conf_setting(const char *key, size_t keylen, const char *val, char *var, size_t varlen,
		 char *err, size_t errlen);

/* Writes every key for --help into buf (truncated to len); returns the length wanted. */
size_t conf_describe(char *buf, size_t len);

/*
 * Calls emit once per line (no newline) with the file read and every
 * effective setting in file syntax, each followed by where it came from.
 */
void conf_show(const struct bufsel_conf *c, void (*emit)(void *arg, const char *line), void *arg);

#endif
