/*
 * libFuzzer harness for conf/: arbitrary bytes as a configuration file and
 * as BUFSEL_* variables.  `make fuzz-conf SECONDS=N` builds and runs it.
 *
 * Input: the file's text, then optionally environment entries, each
 * introduced by a 0xff byte ("\xff" "BUFSEL_GROUP_5_CAP=8").  The whole
 * input is also tried as every key's value and as a key.
 *
 * Besides the sanitizers' findings, it aborts when loading breaks what conf/
 * promises: conf_check() holds after any input, a load is deterministic, the
 * problem list is one "bufsel: " line per problem counted, a file read from
 * disk gives what the same text gives, the lookup finds every configured
 * group and only those, and --check-conf's lines carry no control bytes.
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "conf/internal.h"
#include "conf/options.h"

#define MAX_ENV 16

static struct bufsel_conf a, b;
static char err_a[1 << 16], err_b[1 << 16];

#define require(cond)                                                                \
	do {                                                                         \
		if (!(cond)) {                                                       \
			fprintf(stderr, "conf_fuzz: %s:%d: %s\n", __FILE__, __LINE__, #cond); \
			abort();                                                     \
		}                                                                    \
	} while (0)

/* One "bufsel: ...\n" line per problem, nothing else, unless cut short. */
static void check_problems(const char *err, size_t len, int n)
{
	size_t used = strlen(err);
	require(used < len);
	if (used == len - 1)
		return;
	int lines = 0;
	for (const char *p = err; *p;) {
		const char *nl = strchr(p, '\n');
		require(nl);
		require(!strncmp(p, "bufsel: ", 8));
		for (const char *q = p; q < nl; q++)
			require((unsigned char)*q >= 0x20 && *q != 0x7f);
		lines++;
		p = nl + 1;
	}
	require(lines == n);
}

static void check_line(void *arg, const char *line)
{
	(void)arg;
	for (const char *q = line; *q; q++)
		require((unsigned char)*q >= 0x20 && *q != 0x7f);
}

static void check_lookup(const struct bufsel_conf *c, const uint8_t *data, size_t size)
{
	for (unsigned i = 0; i < c->ngroups; i++)
		require(conf_group_get(c, c->group_id[i]) == &c->group[i]);
	/* A few ids from the input: configured ones map to their entry, others to all. */
	for (size_t i = 0; i + 1 < size && i < 16; i += 2) {
		uint16_t id = (uint16_t)(data[i] | data[i + 1] << 8);
		const struct conf_group *g = conf_group_get(c, id);
		int found = 0;
		for (unsigned j = 0; j < c->ngroups; j++)
			found |= c->group_id[j] == id;
		require(found ? g != &c->all && g >= c->group && g < c->group + c->ngroups : g == &c->all);
	}
}

/* The same text through the real reader, from a memfd, must load the same settings. */
static void check_reader(const char *text, size_t len, char **env, int n)
{
	char var[64];
	char *env2[MAX_ENV + 2];
	int fd = memfd_create("bufsel-conf-fuzz", MFD_CLOEXEC);
	if (fd < 0)
		return;
	for (size_t off = 0; off < len;) {
		ssize_t w = write(fd, text + off, len - off);
		require(w > 0);
		off += (size_t)w;
	}
	snprintf(var, sizeof(var), "BUFSEL_CONF=/proc/self/fd/%d", fd);
	int j = 0;
	env2[j++] = var;
	for (int i = 0; env[i]; i++)
		env2[j++] = env[i];
	env2[j] = NULL;
	int m = conf_load(&b, env2, err_b, sizeof(err_b));
	close(fd);
	check_problems(err_b, sizeof(err_b), m);
	if (len > CONF_FILE_MAX) {
		require(m >= 1);
		return;
	}
	require(m == n);
	require(!memcmp(&a, &b, offsetof(struct bufsel_conf, file_origin)));
	require(!memcmp(a.from, b.from, sizeof(a.from)));
	require(!memcmp(a.group_from, b.group_from, sizeof(a.group_from)));
}

/* The whole input as every key's value, and as a key. */
static void check_settings(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1), var[64], err[1024];
	require(s);
	memcpy(s, data, size);
	s[size] = '\0';
	for (size_t k = 0; k < CONF_KEYS; k++) {
		char key[64];
		struct conf_ref r = { (enum conf_key)k, k >= CONF_GROUP_KEY0 ? (int)(size % 65536) : -1 };
		conf_key_name(&r, key, sizeof(key));
		if (!conf_setting(key, strlen(key), s, var, sizeof(var), err, sizeof(err)))
			require(!strncmp(var, "BUFSEL_", 7));
		else
			require(!strchr(err, '\n'));
	}
	if (conf_setting(s, strlen(s), "1", var, sizeof(var), err, sizeof(err)))
		require(!strchr(err, '\n'));
	free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *sep = memchr(data, 0xff, size);
	size_t flen = sep ? (size_t)(sep - data) : size;
	char *env[MAX_ENV + 1];
	int nenv = 0;

	/* Exactly flen bytes, so a read past the text is an ASan report. */
	char *text = malloc(flen ? flen : 1);
	require(text);
	memcpy(text, data, flen);
	while (sep && nenv < MAX_ENV) {
		const uint8_t *start = sep + 1, *end = data + size;
		sep = memchr(start, 0xff, (size_t)(end - start));
		size_t n = (size_t)((sep ? sep : end) - start);
		env[nenv] = malloc(n + 1);
		require(env[nenv]);
		memcpy(env[nenv], start, n);
		env[nenv][n] = '\0';
		nenv++;
	}
	env[nenv] = NULL;

	int n = conf_load_text(&a, env, "fuzz.conf", text, flen, err_a, sizeof(err_a));
	require(n >= 0);
	check_problems(err_a, sizeof(err_a), n);
	require(conf_check(&a) == 0);
	check_lookup(&a, data, size);
	conf_show(&a, check_line, NULL);

	memset(&b, 0x5a, sizeof(b));
	int m = conf_load_text(&b, env, "fuzz.conf", text, flen, err_b, sizeof(err_b));
	require(m == n && !memcmp(&a, &b, sizeof(a)) && !strcmp(err_a, err_b));

	check_reader(text, flen, env, n);
	check_settings(data, size);

	for (int i = 0; i < nenv; i++)
		free(env[i]);
	free(text);
	return 0;
}
