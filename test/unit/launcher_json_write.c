/*
 * The JSON writer of `bufsel ab --json` and the benchmark suite
 * (launcher/json_write.c), read back with launcher/json.c, the strict reader
 * `bufsel report` uses: whatever bytes a string held (a program's argv or
 * stderr), the document must parse, and what decodes must be the string, with
 * U+FFFD exactly where a byte was not UTF-8.  Numbers JSON cannot hold become
 * null; nesting, flat containers and embedded documents come out as written.
 */
#define _GNU_SOURCE
#include "launcher/json.h"
#include "launcher/json_write.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *text;
static size_t len;
static struct json_doc doc;

static FILE *start(void)
{
	free(text);
	text = NULL;
	FILE *f = open_memstream(&text, &len);
	cr_assert_not_null(f);
	return f;
}

static void parse(FILE *f)
{
	char err[256];
	cr_assert_eq(fclose(f), 0);
	cr_assert_eq(json_parse(&doc, text, len, err, sizeof(err)), 0, "not JSON: %s\n%s", err, text);
}

static void finish(void)
{
	json_free(&doc);
	free(text);
	text = NULL;
}

/* Member name of the root object, which must be a string decoding to want (want_len bytes). */
static void expect_string(const char *name, const char *want, size_t want_len)
{
	int m = json_member(&doc, 0, name);
	cr_assert_geq(m, 0, "no member %s", name);
	cr_assert_eq(doc.nodes[m].type, JSON_STRING, "%s is not a string", name);
	cr_assert_eq(doc.nodes[m].len, want_len, "%s: %zu bytes, expected %zu", name, doc.nodes[m].len, want_len);
	cr_assert(!memcmp(doc.nodes[m].text, want, want_len), "%s decodes to something else", name);
}

Test(json_write, strings_of_any_bytes)
{
	/* Every byte value once, then the sequences a strict reader refuses. */
	char all[255];
	for (int i = 0; i < 255; i++)
		all[i] = (char)(i + 1);
	static const char overlong[] = "\xc0\xaf";	   /* '/' in two bytes */
	static const char surrogate[] = "\xed\xa0\x80";	   /* U+D800 */
	static const char above[] = "\xf4\x90\x80\x80";	   /* U+110000 */
	static const char cut[] = "ab\xe2\x82";		   /* the first two bytes of U+20AC */
	static const char good[] = "\xe2\x82\xac \xf0\x9f\x98\x80 \xc3\xa9"; /* U+20AC, U+1F600, U+00E9 */

	FILE *f = start();
	struct json_writer w;
	jw_init(&w, f);
	jw_object(&w, NULL);
	jw_string_n(&w, "all", all, sizeof(all));
	jw_string(&w, "overlong", overlong);
	jw_string(&w, "surrogate", surrogate);
	jw_string(&w, "above", above);
	jw_string(&w, "cut", cut);
	jw_string(&w, "good", good);
	jw_string(&w, "quotes", "a \"b\" \\c\\ \n\t\r\b\f");
	jw_string_n(&w, "nul", "a\0b", 3);
	jw_string(&w, "null", NULL);
	jw_end(&w);
	cr_assert_eq(jw_finish(&w), 0);
	parse(f);

	/* ASCII (1..127) comes back as it was; every byte from 128 on stands alone, so each is U+FFFD. */
	char want[127 + 128 * 3];
	size_t n = 0;
	for (int i = 1; i < 128; i++)
		want[n++] = (char)i;
	for (int i = 128; i < 256; i++) {
		memcpy(want + n, "\xef\xbf\xbd", 3);
		n += 3;
	}
	expect_string("all", want, n);
	expect_string("overlong", "\xef\xbf\xbd\xef\xbf\xbd", 6);
	expect_string("surrogate", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd", 9);
	expect_string("above", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd", 12);
	expect_string("cut", "ab\xef\xbf\xbd\xef\xbf\xbd", 8);
	expect_string("good", good, strlen(good));
	expect_string("quotes", "a \"b\" \\c\\ \n\t\r\b\f", 15);
	expect_string("nul", "a\0b", 3);
	int m = json_member(&doc, 0, "null");
	cr_assert_eq(doc.nodes[m].type, JSON_NULL);
	finish();
}

Test(json_write, numbers)
{
	FILE *f = start();
	struct json_writer w;
	jw_init(&w, f);
	jw_array_flat(&w, NULL);
	jw_number(&w, NULL, 0.1234567891234);
	jw_number(&w, NULL, -2.5e-300);
	jw_number(&w, NULL, 1e300);
	jw_number(&w, NULL, NAN);
	jw_number(&w, NULL, INFINITY);
	jw_number(&w, NULL, -INFINITY);
	jw_u64(&w, NULL, UINT64_MAX);
	jw_int(&w, NULL, -9223372036854775807LL - 1);
	jw_bool(&w, NULL, true);
	jw_bool(&w, NULL, false);
	jw_end(&w);
	cr_assert_eq(jw_finish(&w), 0);
	parse(f);
	cr_assert_eq(doc.nodes[0].count, 10);
	/* 10 significant digits, and nothing JSON lacks. */
	static const char *const want[] = { "0.1234567891", "-2.5e-300", "1e+300", "null", "null", "null",
					    "18446744073709551615", "-9223372036854775808", "true", "false" };
	cr_assert_str_eq(text, "[0.1234567891, -2.5e-300, 1e+300, null, null, null, 18446744073709551615, "
			       "-9223372036854775808, true, false]\n");
	uint64_t v;
	cr_assert_eq(json_u64(&doc, json_element(&doc, 0, 6), &v), 0);
	cr_assert_eq(v, UINT64_MAX);
	for (int i = 0; i < 10; i++) {
		int e = json_element(&doc, 0, i);
		enum json_type t = doc.nodes[e].type;
		if (t == JSON_NUMBER)
			cr_assert(!strncmp(doc.nodes[e].text, want[i], doc.nodes[e].len) &&
				  strlen(want[i]) == doc.nodes[e].len);
		else
			cr_assert_eq(t, !strcmp(want[i], "null") ? JSON_NULL : !strcmp(want[i], "true") ? JSON_TRUE : JSON_FALSE);
	}
	finish();
}

Test(json_write, nesting_flat_containers_and_embedded_documents)
{
	static const char embedded[] = "{\"pid\":7,\"rings\":[\n{\"ring\":0}\n]}\n\n";
	FILE *f = start();
	struct json_writer w;
	jw_init(&w, f);
	jw_object(&w, NULL);
	jw_array(&w, "empty_array");
	jw_end(&w);
	jw_object(&w, "empty_object");
	jw_end(&w);
	jw_object_flat(&w, "flat");
	jw_int(&w, "a", 1);
	/* Inside a flat container, everything stays on its line. */
	jw_object(&w, "inner");
	jw_array(&w, "list");
	jw_int(&w, NULL, 2);
	jw_int(&w, NULL, 3);
	jw_end(&w);
	jw_end(&w);
	jw_end(&w);
	jw_raw(&w, "stats", embedded, strlen(embedded));
	jw_end(&w);
	cr_assert_eq(jw_finish(&w), 0);
	parse(f);
	cr_assert_str_eq(text, "{\n"
			       " \"empty_array\": [],\n"
			       " \"empty_object\": {},\n"
			       " \"flat\": {\"a\": 1, \"inner\": {\"list\": [2, 3]}},\n"
			       " \"stats\": {\"pid\":7,\"rings\":[\n{\"ring\":0}\n]}\n"
			       "}\n");
	int stats = json_member(&doc, 0, "stats");
	uint64_t pid;
	cr_assert_eq(json_u64(&doc, json_member(&doc, stats, "pid"), &pid), 0);
	cr_assert_eq(pid, 7);
	finish();
}

Test(json_write, a_failed_stream_is_reported)
{
	FILE *f = fopen("/dev/full", "w");
	cr_assert_not_null(f);
	struct json_writer w;
	jw_init(&w, f);
	jw_object(&w, NULL);
	jw_string(&w, "k", "v");
	jw_end(&w);
	cr_assert_eq(jw_finish(&w), -1);
	fclose(f);
}
