#include "bench/workloads/pattern.h"
#include "bench/workloads/bench.h"

#include <stdlib.h>
#include <string.h>

static struct {
	unsigned char *table; /* PATTERN_PERIOD + max_len bytes */
	size_t max_len;
} pattern;

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15u);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
	return z ^ (z >> 31);
}

void pattern_init(size_t max_len)
{
	if (pattern.table)
		die("pattern_init called twice");
	if (max_len > PATTERN_PERIOD)
		die("runs of %zu bytes are longer than the pattern period (%u)", max_len, PATTERN_PERIOD);
	size_t n = PATTERN_PERIOD + max_len;
	pattern.table = malloc(n + 8);
	if (!pattern.table)
		die("pattern: out of memory");
	uint64_t s = 0x62756673656cu;
	for (size_t i = 0; i < PATTERN_PERIOD; i += 8) {
		uint64_t x = splitmix64(&s);
		memcpy(pattern.table + i, &x, 8);
	}
	memcpy(pattern.table + PATTERN_PERIOD, pattern.table, max_len);
	pattern.max_len = max_len;
}

const unsigned char *pattern_at(uint64_t pos)
{
	return pattern.table + pos % PATTERN_PERIOD;
}

uint64_t pattern_pos(uint64_t stream, uint64_t seq)
{
	uint64_t s = stream << 32 ^ seq;
	return splitmix64(&s) % PATTERN_PERIOD;
}

void pattern_check(const void *buf, size_t len, uint64_t pos, const char *what)
{
	if (len > pattern.max_len)
		die("%s: checking %zu bytes, the pattern covers runs of %zu", what, len, pattern.max_len);
	const unsigned char *want = pattern_at(pos);
	if (memcmp(buf, want, len) == 0)
		return;
	const unsigned char *got = buf;
	size_t i = 0;
	while (got[i] == want[i])
		i++;
	die("%s: wrong data: byte %zu of %zu is 0x%02x, expected 0x%02x", what, i, len, got[i], want[i]);
}
