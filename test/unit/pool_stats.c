/*
 * pool/'s statistics: the counters after a scripted sequence, exactly; the
 * histogram bucket edges; the JSON document (docs/stats-schema.md) and the
 * table, compared whole for a small scripted pool; snprintf truncation and
 * the chunked writers; the largest piece against POOL_STATS_PIECE_MAX; and
 * every JSON text through a strict validator here, and through python3's
 * json.tool as well when python3 is installed.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pool/pool.h"
#include "pool/table.h"

static struct pool *P;

static void fresh(void)
{
	cr_assert_eq(pool_create(&P), 0);
}

static void done(void)
{
	cr_assert_eq(pool_check(P), 0);
	pool_destroy(P);
	P = NULL;
}

TestSuite(stats, .init = fresh, .fini = done);
TestSuite(json, .init = fresh, .fini = done);
TestSuite(table, .init = fresh, .fini = done);

static void provide(uint16_t bgid, uint64_t addr, uint32_t len, int32_t n, uint64_t off)
{
	cr_assert_eq(pool_provide(P, &(struct pool_provide){
		.addr = addr, .len = len, .nbufs = n, .off = off, .bgid = bgid }), 0);
	cr_assert_eq(pool_check(P), 0);
}

static int sel(uint16_t bgid, struct pool_buf *b)
{
	int ret = pool_select(P, bgid, b);
	cr_assert_eq(pool_check(P), 0);
	return ret;
}

static struct pool_buf take(uint16_t bgid)
{
	struct pool_buf b;
	cr_assert_eq(sel(bgid, &b), 0, "group %u should give a buffer", bgid);
	return b;
}

static struct pool_group_stats stats(uint16_t bgid)
{
	struct pool_group_stats s;
	cr_assert_eq(pool_group_stats(P, bgid, &s), 0, "group %u should exist", bgid);
	return s;
}

static struct pool_group_hist hist(uint16_t bgid)
{
	struct pool_group_hist h;
	cr_assert_eq(pool_group_hist(P, bgid, &h), 0, "group %u should exist", bgid);
	return h;
}

/* Group 3: cap 2, max_len 100; group 10: every selection injected, seed 7. */
static int script_policy(uint16_t bgid, struct pool_policy *out, void *arg)
{
	(void)arg;
	if (bgid == 3)
		*out = (struct pool_policy){ .cap = 2, .max_len = 100 };
	else if (bgid == 10)
		*out = (struct pool_policy){ .enobufs_rate = 1, .seed = 7 };
	else
		return 1;
	return 0;
}

/*
 * The pool every exact comparison below is about:
 *   group 3: 4 buffers of 256; a, b taken (in use 1, 2), a third capped; b
 *     put back and taken again (2); a delivered with 0 bytes, b with 100
 *     (both kept by the program: still under the cap); a provided again;
 *     c taken (1) and delivered without a count; two removed; one more
 *     selection finds it empty; two waits, 1500 and 500 ns;
 *   group 10: one buffer, two selections, both injected;
 *   id 5: a ring, not in the statistics;
 *   one stray delivery (the pool counts it, no group does).
 */
static void script(void)
{
	pool_set_policy(P, script_policy, NULL);
	provide(3, 0x1000, 256, 4, 0);
	struct pool_buf a = take(3), b = take(3), c;
	cr_assert_eq(a.len, 100);
	cr_assert_eq(sel(3, &c), -ENOBUFS);
	pool_putback(P, &b);
	b = take(3);
	pool_consume_bytes(P, &a, 0);
	pool_consume_bytes(P, &b, 100);
	provide(3, a.addr, 256, 1, a.bid);
	c = take(3);
	pool_consume(P, &c);
	cr_assert_eq(pool_remove(P, &(struct pool_remove){ .nbufs = 2, .bgid = 3 }), 2);
	cr_assert_eq(sel(3, &c), -ENOBUFS);
	pool_note_wait(P, 3, 1500);
	pool_note_wait(P, 3, 500);

	provide(10, 0x9000, 64, 1, 0);
	cr_assert_eq(sel(10, &c), -ENOBUFS);
	cr_assert_eq(sel(10, &c), -ENOBUFS);

	cr_assert_eq(pool_ring_register(P, 5), 0);
	pool_consume(P, &(struct pool_buf){ .addr = 0x1000, .len = 1, .bgid = 77 });
	cr_assert_eq(pool_check(P), 0);
}

/* Counters */

Test(stats, every_counter_after_a_scripted_sequence)
{
	script();
	struct pool_group_stats s = stats(3);
	cr_assert_eq(s.provided, 5);
	cr_assert_eq(s.removed, 2);
	cr_assert_eq(s.selected, 4);
	cr_assert_eq(s.returned, 1);
	cr_assert_eq(s.consumed, 3);
	cr_assert_eq(s.enobufs, 2);
	cr_assert_eq(s.enobufs_empty, 1);
	cr_assert_eq(s.enobufs_capped, 1);
	cr_assert_eq(s.enobufs_injected, 0);
	cr_assert_eq(s.available, 0);
	cr_assert_eq(s.in_use, 0);
	cr_assert_eq(s.peak_in_use, 2);
	cr_assert_eq(s.waits, 2);
	cr_assert_eq(s.wait_ns, 2000);
	cr_assert_eq(s.used_count, 2);
	cr_assert_eq(s.used_bytes, 100);
	cr_assert_eq(s.policy.cap, 2);
	cr_assert_eq(s.policy.max_len, 100);
	cr_assert_eq(s.policy.enobufs_rate, 0);
	cr_assert_eq(s.policy.seed, 0);
	struct pool_group_hist h = hist(3);
	for (unsigned b = 0; b < POOL_HIST_BUCKETS; b++) {
		cr_assert_eq(h.used[b], b == 0 || b == 7, "used bucket %u", b);
		cr_assert_eq(h.in_use[b], b == 1 || b == 2 ? 2 : 0, "in-use bucket %u", b);
	}

	s = stats(10);
	cr_assert_eq(s.provided, 1);
	cr_assert_eq(s.selected, 0);
	cr_assert_eq(s.enobufs, 2);
	cr_assert_eq(s.enobufs_injected, 2);
	cr_assert_eq(s.available, 1);
	cr_assert_eq(s.policy.enobufs_rate, 1);
	cr_assert_eq(s.policy.seed, 7);

	cr_assert_eq(pool_group_stats(P, 5, &s), -ENOENT, "a ring has no statistics here");
	struct pool_group_hist none;
	cr_assert_eq(pool_group_hist(P, 5, &none), -ENOENT);
	cr_assert_eq(pool_group_hist(P, 6, &none), -ENOENT);
	cr_assert_eq(pool_strays(P), 1);
	cr_assert_eq(pool_peak_in_use(P), 2);
}

/* The fields that existed before policies keep their offsets. */
Test(stats, old_fields_keep_their_place)
{
	cr_assert_eq(offsetof(struct pool_group_stats, provided), 0);
	cr_assert_eq(offsetof(struct pool_group_stats, enobufs), 40);
	cr_assert_eq(offsetof(struct pool_group_stats, available), 48);
	cr_assert_eq(offsetof(struct pool_group_stats, in_use), 52);
	cr_assert_eq(offsetof(struct pool_group_stats, peak_in_use), 56);
	cr_assert_geq(offsetof(struct pool_group_stats, enobufs_empty), 60);
}

Test(stats, bucket_edges)
{
	cr_assert_eq(pool_hist_bucket(0), 0);
	cr_assert_eq(pool_hist_bucket(1), 1);
	cr_assert_eq(pool_hist_bucket(2), 2);
	cr_assert_eq(pool_hist_bucket(3), 2);
	cr_assert_eq(pool_hist_bucket(4), 3);
	cr_assert_eq(pool_hist_bucket(7), 3);
	cr_assert_eq(pool_hist_bucket(8), 4);
	cr_assert_eq(pool_hist_bucket(0x7fffffffu), 31);
	cr_assert_eq(pool_hist_bucket(0x80000000u), 32);
	cr_assert_eq(pool_hist_bucket(UINT32_MAX), 32);
	for (unsigned k = 1; k < 32; k++) {
		cr_assert_eq(pool_hist_bucket((1u << k) - 1), k, "2^%u - 1", k);
		cr_assert_eq(pool_hist_bucket(1u << k), k + 1, "2^%u", k);
	}
	for (unsigned b = 0; b < POOL_HIST_BUCKETS; b++) {
		cr_assert_eq(pool_hist_bucket(pool_hist_lo(b)), b);
		cr_assert_eq(pool_hist_bucket(pool_hist_hi(b)), b);
		if (b + 1 < POOL_HIST_BUCKETS)
			cr_assert_eq(pool_hist_lo(b + 1), pool_hist_hi(b) + 1, "buckets tile");
	}
	cr_assert_eq(pool_hist_lo(0), 0);
	cr_assert_eq(pool_hist_hi(0), 0);
	cr_assert_eq(pool_hist_lo(1), 1);
	cr_assert_eq(pool_hist_hi(1), 1);
	cr_assert_eq(pool_hist_hi(32), UINT32_MAX);
}

Test(stats, bytes_used_land_in_their_buckets)
{
	const uint32_t used[] = { 0, 1, 2, 3, 4, 7, 8, 4095, 4096, 0x7fffffffu, 0x80000000u,
				  UINT32_MAX };
	const size_t n = sizeof(used) / sizeof(used[0]);
	provide(1, 0x1000, 64, (int32_t)n, 0);
	uint64_t sum = 0;
	for (size_t i = 0; i < n; i++) {
		struct pool_buf b = take(1);
		pool_consume_bytes(P, &b, used[i]);
		sum += used[i];
	}
	const uint64_t want[POOL_HIST_BUCKETS] = { [0] = 1, [1] = 1, [2] = 2, [3] = 2, [4] = 1,
						   [12] = 1, [13] = 1, [31] = 1, [32] = 2 };
	struct pool_group_hist h = hist(1);
	for (unsigned b = 0; b < POOL_HIST_BUCKETS; b++)
		cr_assert_eq(h.used[b], want[b], "bucket %u", b);
	cr_assert_eq(stats(1).used_count, n);
	cr_assert_eq(stats(1).used_bytes, sum, "the byte count is kept whole, not bucketed");
}

Test(stats, in_use_histogram_counts_in_use_after_each_selection)
{
	provide(1, 0x1000, 64, 16, 0);
	struct pool_buf b[9];
	for (int i = 0; i < 9; i++)
		b[i] = take(1);
	struct pool_group_hist h = hist(1);
	const uint64_t want[POOL_HIST_BUCKETS] = { [1] = 1, [2] = 2, [3] = 4, [4] = 2 };
	for (unsigned k = 0; k < POOL_HIST_BUCKETS; k++)
		cr_assert_eq(h.in_use[k], want[k], "bucket %u", k);
	for (int i = 0; i < 9; i++)
		pool_putback(P, &b[i]);
	struct pool_buf again = take(1), none;
	cr_assert_eq(hist(1).in_use[1], 2);
	cr_assert_eq(pool_remove(P, &(struct pool_remove){ .nbufs = 100, .bgid = 1 }), 15);
	cr_assert_eq(sel(1, &none), -ENOBUFS);
	cr_assert_eq(hist(1).in_use[2], 2, "a failed selection is not counted");
	pool_consume(P, &again);
	cr_assert_eq(hist(1).used[0], 0, "a delivery without a count is not in bytes used");
	cr_assert_eq(stats(1).consumed, 1);
	cr_assert_eq(stats(1).used_count, 0);
}

Test(stats, waits_are_summed_for_legacy_groups_only)
{
	provide(1, 0x1000, 64, 1, 0);
	pool_note_wait(P, 1, 0);
	pool_note_wait(P, 1, UINT32_MAX);
	pool_note_wait(P, 1, 7);
	pool_note_wait(P, 2, 1000);
	cr_assert_eq(pool_ring_register(P, 3), 0);
	pool_note_wait(P, 3, 1000);
	cr_assert_eq(stats(1).waits, 3);
	cr_assert_eq(stats(1).wait_ns, (uint64_t)UINT32_MAX + 7);
	struct pool_group_stats s;
	cr_assert_eq(pool_group_stats(P, 2, &s), -ENOENT, "a wait creates no group");
}

Test(stats, deliveries_that_match_no_group_record_no_bytes)
{
	provide(1, 0x1000, 64, 2, 0);
	struct pool_buf a = take(1);
	pool_consume_bytes(P, &(struct pool_buf){ .bgid = 1 }, 5);	/* fine: a is out */
	cr_assert_eq(stats(1).used_count, 1);
	pool_consume_bytes(P, &a, 5);
	cr_assert_eq(pool_strays(P), 1, "nothing was out any more");
	cr_assert_eq(stats(1).used_count, 1);
	cr_assert_eq(stats(1).consumed, 1);

	/* a buffer out of a group whose life ended counts for no group */
	struct pool_buf b = take(1);
	cr_assert_eq(pool_ring_register(P, 1), 0);
	pool_ring_unregister(P, 1);
	provide(1, 0x1000, 64, 1, 0);
	cr_assert_eq(stats(1).used_count, 0, "a new life, new counters");
	pool_consume_bytes(P, &b, 9);
	cr_assert_eq(stats(1).used_count, 1, "in use belongs to the id: the new group counts it");
	struct pool_buf c = take(1);
	cr_assert_eq(pool_remove(P, &(struct pool_remove){ .nbufs = 1, .bgid = 1 }), 0);
	cr_assert_eq(pool_ring_register(P, 1), 0);
	pool_consume_bytes(P, &c, 9);
	cr_assert_eq(pool_strays(P), 1, "counted against the id, dropped with the group");
}

Test(stats, a_new_life_starts_fresh_statistics)
{
	script();
	cr_assert_eq(pool_ring_register(P, 3), 0);
	pool_ring_unregister(P, 3);
	pool_set_policy(P, NULL, NULL);
	provide(3, 0x1000, 64, 1, 0);
	struct pool_group_stats s = stats(3);
	struct pool_group_hist h = hist(3);
	cr_assert_eq(s.selected + s.consumed + s.returned + s.removed + s.enobufs, 0);
	cr_assert_eq(s.enobufs_empty + s.enobufs_capped + s.enobufs_injected, 0);
	cr_assert_eq(s.waits + s.wait_ns + s.used_count + s.used_bytes, 0);
	cr_assert_eq(s.policy.cap, 0);
	for (unsigned b = 0; b < POOL_HIST_BUCKETS; b++)
		cr_assert_eq(h.used[b] + h.in_use[b], 0);
}

/* JSON: a strict validator (RFC 8259's grammar, no extensions), so that the
 * check does not depend on python3 being installed. */

struct jp {
	const char *s;
	int depth;
};

static void ws(struct jp *j)
{
	while (*j->s == ' ' || *j->s == '\n' || *j->s == '\t' || *j->s == '\r')
		j->s++;
}

static int jvalue(struct jp *j);

static int jstring(struct jp *j)
{
	if (*j->s++ != '"')
		return 0;
	for (;;) {
		unsigned char ch = (unsigned char)*j->s++;
		if (ch == '"')
			return 1;
		if (ch < 0x20)
			return 0;
		if (ch == '\\') {
			ch = (unsigned char)*j->s++;
			if (ch == 'u') {
				for (int i = 0; i < 4; i++, j->s++)
					if (!strchr("0123456789abcdefABCDEF", *j->s) || !*j->s)
						return 0;
			} else if (!ch || !strchr("\"\\/bfnrt", ch)) {
				return 0;
			}
		}
	}
}

static int digits(struct jp *j)
{
	const char *at = j->s;
	while (*j->s >= '0' && *j->s <= '9')
		j->s++;
	return j->s > at;
}

static int jnumber(struct jp *j)
{
	if (*j->s == '-')
		j->s++;
	if (*j->s == '0')
		j->s++;
	else if (!digits(j))
		return 0;
	if (*j->s == '.') {
		j->s++;
		if (!digits(j))
			return 0;
	}
	if (*j->s == 'e' || *j->s == 'E') {
		j->s++;
		if (*j->s == '+' || *j->s == '-')
			j->s++;
		if (!digits(j))
			return 0;
	}
	return 1;
}

static int jlist(struct jp *j, char close, int object)
{
	j->s++;
	ws(j);
	if (*j->s == close) {
		j->s++;
		return 1;
	}
	for (;;) {
		ws(j);
		if (object) {
			if (!jstring(j))
				return 0;
			ws(j);
			if (*j->s++ != ':')
				return 0;
		}
		if (!jvalue(j))
			return 0;
		ws(j);
		if (*j->s == close) {
			j->s++;
			return 1;
		}
		if (*j->s++ != ',')
			return 0;
	}
}

static int jvalue(struct jp *j)
{
	ws(j);
	if (++j->depth > 64)
		return 0;
	int ok;
	switch (*j->s) {
	case '{': ok = jlist(j, '}', 1); break;
	case '[': ok = jlist(j, ']', 0); break;
	case '"': ok = jstring(j); break;
	case 't': ok = !strncmp(j->s, "true", 4) && (j->s += 4); break;
	case 'f': ok = !strncmp(j->s, "false", 5) && (j->s += 5); break;
	case 'n': ok = !strncmp(j->s, "null", 4) && (j->s += 4); break;
	default: ok = jnumber(j); break;
	}
	j->depth--;
	return ok;
}

static int json_valid(const char *text)
{
	struct jp j = { .s = text };
	if (!jvalue(&j))
		return 0;
	ws(&j);
	return *j.s == 0;
}

/* python3 -m json.tool on the text, when python3 is there: 1 valid, 0
 * invalid, -1 not checked. */
static int python_says_valid(const char *text)
{
	if (system("command -v python3 >/dev/null 2>&1") != 0) {
		cr_log_warn("no python3: JSON checked by the validator here only");
		return -1;
	}
	char path[] = "/tmp/bufsel-stats-XXXXXX";
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	FILE *f = fdopen(fd, "w");
	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "python3 -m json.tool %s >/dev/null", path);
	int ret = system(cmd);
	unlink(path);
	return ret == 0;
}

static void assert_valid_json(const char *text)
{
	cr_assert(json_valid(text), "not JSON: %s", text);
	cr_assert_neq(python_says_valid(text), 0, "python3 -m json.tool refused: %s", text);
}

Test(json, the_validator_refuses_what_it_should)
{
	const char *bad[] = { "", "{", "{\"a\":1,}", "[1,]", "[01]", "{\"a\" 1}", "[1 2]",
			      "{a:1}", "[\"\\x\"]", "[1.]", "[-]", "[1]x", "[\"a\nb\"]" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert(!json_valid(bad[i]), "accepted %s", bad[i]);
	cr_assert(json_valid("{\"a\":[1,-2.5e3,\"x\\n\",true,null,{}]}"));
}

#define Z4 "0,0,0,0"
#define Z8 Z4 "," Z4
#define Z16 Z8 "," Z8
#define Z33 Z16 "," Z16 ",0"

static const char want_json[] =
	"{\"ring\":4,\"peak_in_use\":2,\"strays\":1,\"groups\":[\n"
	"{\"bgid\":3,\"policy\":{\"cap\":2,\"max_len\":100,\"enobufs_rate\":0,\"seed\":\"0\"},"
	"\"available\":0,\"in_use\":0,\"peak_in_use\":2,"
	"\"held\":2,\"peak_out\":2,\"size\":2,\"peak_size\":4,\"buf_len\":256,"
	"\"provided\":5,\"removed\":2,\"selected\":4,\"returned\":1,\"consumed\":3,"
	"\"enobufs\":{\"total\":2,\"empty\":1,\"capped\":1,\"injected\":0},"
	"\"wait\":{\"count\":2,\"ns\":2000},"
	"\"bytes_used\":{\"count\":2,\"sum\":100,\"hist\":[1,0,0,0,0,0,0,1," Z16 "," Z8 ",0]},"
	"\"in_use_hist\":[0,2,2,0," Z4 "," Z16 "," Z8 ",0]},\n"
	"{\"bgid\":10,\"policy\":{\"cap\":0,\"max_len\":0,\"enobufs_rate\":1,\"seed\":\"7\"},"
	"\"available\":1,\"in_use\":0,\"peak_in_use\":0,"
	"\"held\":0,\"peak_out\":0,\"size\":1,\"peak_size\":1,\"buf_len\":64,"
	"\"provided\":1,\"removed\":0,\"selected\":0,\"returned\":0,\"consumed\":0,"
	"\"enobufs\":{\"total\":2,\"empty\":0,\"capped\":0,\"injected\":2},"
	"\"wait\":{\"count\":0,\"ns\":0},"
	"\"bytes_used\":{\"count\":0,\"sum\":0,\"hist\":[" Z33 "]},"
	"\"in_use_hist\":[" Z33 "]}\n"
	"]}";

Test(json, exact_for_a_small_scripted_pool)
{
	script();
	char buf[4096];
	size_t n = pool_stats_json(P, 4, buf, sizeof(buf));
	cr_assert_str_eq(buf, want_json);
	cr_assert_eq(n, strlen(want_json));
	assert_valid_json(buf);
}

Test(json, exact_for_an_empty_pool)
{
	char buf[256];
	cr_assert_eq(pool_ring_register(P, 1), 0);
	size_t n = pool_stats_json(P, 0, buf, sizeof(buf));
	const char *want = "{\"ring\":0,\"peak_in_use\":0,\"strays\":0,\"groups\":[]}";
	cr_assert_str_eq(buf, want);
	cr_assert_eq(n, strlen(want));
	assert_valid_json(buf);
}

Test(json, rates_print_to_nine_decimals)
{
	const double rate[] = { 0.5, 0.25, 0.1, 1e-9, 0.4e-9, 0.123456789, 0.9999999999, 1.0 / 3 };
	const char *want[] = { "0.5", "0.25", "0.1", "0.000000001", "0", "0.123456789", "1",
			       "0.333333333" };
	for (uint16_t i = 0; i < 8; i++) {
		struct pool_policy pol = { .enobufs_rate = rate[i], .seed = UINT64_MAX };
		pool_destroy(P);
		cr_assert_eq(pool_create(&P), 0);
		pool_set_policy(P, NULL, NULL);
		provide(i, 0x1000, 8, 1, 0);
		/* the policy as if the callback had given it */
		policy_apply((struct group *)table_get(P, i), &pol);
		char buf[4096], key[64];
		pool_stats_json(P, 0, buf, sizeof(buf));
		snprintf(key, sizeof(key), "\"enobufs_rate\":%s,\"seed\":\"18446744073709551615\"}",
			 want[i]);
		cr_assert(strstr(buf, key), "rate %.12g: %s", rate[i], buf);
		assert_valid_json(buf);
	}
}

Test(json, truncates_like_snprintf)
{
	script();
	char full[4096], buf[4096];
	size_t n = pool_stats_json(P, 4, full, sizeof(full));
	cr_assert_eq(pool_stats_json(P, 4, NULL, 0), n, "len 0 writes nothing, says the size");
	for (size_t len = 1; len <= n + 1; len++) {
		memset(buf, 'x', sizeof(buf));
		cr_assert_eq(pool_stats_json(P, 4, buf, len), n);
		cr_assert_eq(strlen(buf), len - 1, "len %zu", len);
		cr_assert_eq(memcmp(buf, full, len - 1), 0, "len %zu", len);
		cr_assert_eq(buf[len], 'x', "nothing past len");
	}
}

/* Reads a whole text through a _next writer in chunks of len. */
static size_t drain(int table, size_t len, char *out, size_t room)
{
	struct pool_stats_cursor c = { 0 };
	char *buf = malloc(len);
	size_t at = 0;
	ssize_t n;
	int calls = 0;
	while ((n = table ? pool_stats_table_next(P, &c, buf, len)
			  : pool_stats_json_next(P, 4, &c, buf, len)) > 0) {
		cr_assert_lt((size_t)n, len);
		cr_assert_eq(strlen(buf), (size_t)n, "NUL-terminated");
		cr_assert_leq(at + (size_t)n, room);
		memcpy(out + at, buf, (size_t)n);
		at += (size_t)n;
		cr_assert_lt(++calls, 100000);
	}
	cr_assert_eq(n, 0, "len %zu: %zd", len, n);
	cr_assert_eq(table ? pool_stats_table_next(P, &c, buf, len)
			   : pool_stats_json_next(P, 4, &c, buf, len), 0, "done stays done");
	free(buf);
	out[at] = 0;
	return at;
}

static void many_groups(void)
{
	pool_set_policy(P, script_policy, NULL);
	for (uint32_t g = 0; g < 1000; g += 7) {
		provide((uint16_t)g, 0x1000, 512, 3, 0);
		struct pool_buf b = take((uint16_t)g);
		pool_consume_bytes(P, &b, g);
	}
	provide(65535, 0x1000, 512, 3, 0);
	cr_assert_eq(pool_ring_register(P, 65534), 0);
}

Test(json, chunks_add_up_to_the_whole_text)
{
	many_groups();
	size_t room = 1 << 20;
	char *full = malloc(room), *got = malloc(room);
	size_t n = pool_stats_json(P, 4, full, room);
	cr_assert_lt(n, room);
	assert_valid_json(full);
	const size_t lens[] = { 1000, 1001, 1500, 4096, 10000, 65536, room };
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		cr_assert_eq(drain(0, lens[i], got, room), n);
		cr_assert_str_eq(got, full, "chunks of %zu", lens[i]);
	}
	free(full);
	free(got);
}

Test(json, a_buffer_too_small_for_the_next_piece_is_enospc)
{
	script();
	char buf[400];	/* less than group 3's piece */
	struct pool_stats_cursor c = { 0 };
	cr_assert_eq(pool_stats_json_next(P, 4, &c, buf, 0), -ENOSPC);
	cr_assert_eq(pool_stats_json_next(P, 4, &c, buf, 10), -ENOSPC);
	ssize_t n = pool_stats_json_next(P, 4, &c, buf, 48);
	cr_assert_eq(n, 47, "the opening alone");
	cr_assert_str_eq(buf, "{\"ring\":4,\"peak_in_use\":2,\"strays\":1,\"groups\":[");
	cr_assert_eq(pool_stats_json_next(P, 4, &c, buf, sizeof(buf)), -ENOSPC);
	cr_assert_eq(pool_stats_json_next(P, 4, &c, buf, sizeof(buf)), -ENOSPC,
		     "the cursor did not move");
}

/* Every counter of a group at its largest makes the largest piece. */
Test(json, the_largest_group_fits_a_piece)
{
	struct pool_policy pol = { .cap = UINT32_MAX, .max_len = UINT32_MAX,
				   .enobufs_rate = 1.0 / 3, .seed = UINT64_MAX };
	provide(65535, 0x1000, 8, 1, 0);
	struct group *g = (struct group *)table_get(P, 65535);
	policy_apply(g, &pol);
	g->count = g->in_use = g->peak_in_use = UINT32_MAX;
	g->provided = g->removed = g->selected = g->returned = g->consumed = UINT64_MAX;
	g->enobufs = g->enobufs_empty = g->enobufs_capped = g->enobufs_injected = UINT64_MAX;
	g->waits = g->wait_ns = g->used_count = g->used_bytes = UINT64_MAX;
	for (unsigned b = 0; b < POOL_HIST_BUCKETS; b++)
		g->used_hist[b] = g->in_use_hist[b] = UINT64_MAX;
	P->peak_outstanding = P->strays = UINT64_MAX;

	char all[4 * POOL_STATS_PIECE_MAX], buf[POOL_STATS_PIECE_MAX];
	size_t n = pool_stats_json(P, UINT32_MAX, all, sizeof(all));
	cr_assert_lt(n, sizeof(all));
	const char *open = "{\"ring\":4294967295,\"peak_in_use\":18446744073709551615,"
			   "\"strays\":18446744073709551615,\"groups\":[";
	cr_assert_eq(strncmp(all, open, strlen(open)), 0);
	size_t piece = n - strlen(open) - strlen("]}");
	cr_log_info("largest group piece: %zu of %u bytes", piece, POOL_STATS_PIECE_MAX);
	cr_assert_lt(piece, POOL_STATS_PIECE_MAX, "a piece and its NUL fit the promised buffer");
	assert_valid_json(all);

	/* Chunks of exactly POOL_STATS_PIECE_MAX: opening alone, then the group
	 * (the two do not fit together), then the closing. */
	struct pool_stats_cursor c = { 0 };
	size_t at = 0;
	ssize_t k;
	int calls = 0;
	while ((k = pool_stats_json_next(P, UINT32_MAX, &c, buf, sizeof(buf))) > 0) {
		memcpy(all + at, buf, (size_t)k);
		at += (size_t)k;
		calls++;
	}
	cr_assert_eq(k, 0);
	cr_assert_eq(at, n);
	cr_assert_leq(calls, 3);

	/* The widest table line: every value at its widest, both percentiles
	 * in the last bucket. */
	for (unsigned b = 0; b < POOL_HIST_BUCKETS; b++)
		g->used_hist[b] = b == 32 ? UINT64_MAX : 0;
	c = (struct pool_stats_cursor){ 0 };
	cr_assert_gt(pool_stats_table_next(P, &c, buf, sizeof(buf)), 0);
	cr_assert(strstr(buf, "18446744073709551615/18446744073709551615/18446744073709551615"));
	cr_assert(strstr(buf, "2147483648-4294967295"));

	/* put the group back together for pool_check and pool_destroy */
	P->peak_outstanding = P->strays = 0;
	pool_destroy(P);
	cr_assert_eq(pool_create(&P), 0);
}

/* Table */

static const char want_table[] =
	" bgid   provided  peak in use   selected  -ENOBUFS e/c/i    bytes p50    bytes p99\n"
	"    3          5            2          4           1/1/0            0       64-127\n"
	"   10          1            0          0           0/0/2            -            -\n";

Test(table, exact_for_a_small_scripted_pool)
{
	script();
	char buf[1024];
	size_t n = pool_stats_table(P, buf, sizeof(buf));
	cr_assert_str_eq(buf, want_table);
	cr_assert_eq(n, strlen(want_table));
}

Test(table, an_empty_pool_is_the_header)
{
	char buf[1024];
	pool_stats_table(P, buf, sizeof(buf));
	cr_assert_str_eq(buf, " bgid   provided  peak in use   selected  -ENOBUFS e/c/i    bytes p50"
			      "    bytes p99\n");
}

/* One line's percentile columns for deliveries of `small` bytes k times and
 * `large` bytes m times. */
static void percentiles(uint32_t k, uint32_t small, uint32_t m, uint32_t large,
			const char *p50, const char *p99)
{
	pool_destroy(P);
	cr_assert_eq(pool_create(&P), 0);
	provide(1, 0x1000, 8, (int32_t)(k + m), 0);
	for (uint32_t i = 0; i < k + m; i++) {
		struct pool_buf b = take(1);
		pool_consume_bytes(P, &b, i < k ? small : large);
	}
	char buf[1024], want[64];
	pool_stats_table(P, buf, sizeof(buf));
	snprintf(want, sizeof(want), "%13s%13s\n", p50, p99);
	size_t n = strlen(buf), w = strlen(want);
	cr_assert(n > w && !strcmp(buf + n - w, want), "%u x %u, %u x %u:\n%s", k, small, m, large, buf);
}

Test(table, percentiles_are_the_buckets_of_the_ceiling_rank)
{
	percentiles(1, 100, 0, 0, "64-127", "64-127");
	percentiles(99, 1, 1, 5000, "1", "1");
	percentiles(98, 1, 2, 5000, "1", "4096-8191");
	percentiles(50, 0, 50, 3, "0", "2-3");
	percentiles(49, 0, 51, 3, "2-3", "2-3");
	percentiles(199, 9, 1, 1, "8-15", "8-15");
	percentiles(1, 0, 199, 0x80000000u, "2147483648-4294967295", "2147483648-4294967295");
}

Test(table, truncates_like_snprintf_and_chunks_add_up)
{
	many_groups();
	size_t room = 1 << 20;
	char *full = malloc(room), *got = malloc(room);
	size_t n = pool_stats_table(P, full, room);
	cr_assert_eq(pool_stats_table(P, got, 10), n);
	cr_assert_eq(strlen(got), 9);
	cr_assert_eq(memcmp(got, full, 9), 0);
	const size_t lens[] = { 100, 128, 1000, room };
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		cr_assert_eq(drain(1, lens[i], got, room), n);
		cr_assert_str_eq(got, full, "chunks of %zu", lens[i]);
	}
	/* a line per legacy group, in bgid order, no ring */
	size_t lines = 0;
	for (const char *at = full; (at = strchr(at, '\n')); at++)
		lines++;
	cr_assert_eq(lines, 1 + 143 + 1);
	cr_assert(strstr(full, "\n  994  "));
	cr_assert(strstr(full, "\n65535  "));
	cr_assert_null(strstr(full, "\n65534  "));
	struct pool_stats_cursor c = { 0 };
	cr_assert_eq(pool_stats_table_next(P, &c, got, 20), -ENOSPC);
	free(full);
	free(got);
}
