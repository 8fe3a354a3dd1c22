/*
 * `bufsel report` (launcher/report.c) and its JSON reader (launcher/json.c).
 *
 * The reader: every value type, escapes and surrogate pairs, exact 64-bit
 * integers; a list of malformed texts that must each fail with a message;
 * every truncation of a real statistics file; nesting at and past the bound,
 * and far past it; numbers of any size; and thousands of mutated documents,
 * none of which may crash it (make asan runs this too).
 *
 * The report: hand-written statistics files, one with the group fields
 * buf_len, peak_size and peak_out and one from before them, whose whole
 * output is compared with text worked out by hand (the arithmetic is in the
 * comments); the options; one line and exit status 1 for every kind of bad
 * file; and --plot through gnuplot, which must be installed.
 */
#define _GNU_SOURCE
#include "launcher/json.h"
#include "launcher/report.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[] = "/tmp/bufsel-report-test-XXXXXX";

/* Each test runs in its own process, in a directory of its own, so the
 * file names in the expected texts are short and fixed. */
static void setup(void)
{
	strcpy(dir, "/tmp/bufsel-report-test-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	cr_assert_eq(chdir(dir), 0);
}

static void teardown(void)
{
	char cmd[96];
	cr_assert_eq(chdir("/"), 0);
	/* By full path: a test may have emptied PATH. */
	snprintf(cmd, sizeof(cmd), "/bin/rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(json);
TestSuite(report, .init = setup, .fini = teardown);

/* ---- the JSON reader -------------------------------------------------------- */

static struct json_doc doc;
static char err[512];

static int parse(const char *text, size_t len)
{
	err[0] = '\0';
	return json_parse(&doc, text, len, err, sizeof(err));
}

static int parse_str(const char *text)
{
	return parse(text, strlen(text));
}

Test(json, every_type)
{
	static const char text[] = " {\"n\":null,\"t\":true,\"f\":false,\"i\":42,\"d\":0.25,\"neg\":-3,\"e\":1E+5,"
				   "\"s\":\"a\\\"b\\\\c\\/\\b\\f\\n\\r\\t\\u00e9\\ud83d\\ude00\\u0041\","
				   "\"raw\":\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\","
				   "\"a\":[1,[],{}],\"o\":{\"x\":{\"y\":[\"z\"]}},\"\\u0062uf_len\":7}\r\n\t";
	cr_assert_eq(parse(text, sizeof(text) - 1), 0, "%s", err);
	cr_assert_eq(doc.nodes[0].type, JSON_OBJECT);
	cr_assert_eq(doc.nodes[0].count, 12);
	cr_assert_eq(doc.nodes[json_member(&doc, 0, "n")].type, JSON_NULL);
	cr_assert_eq(doc.nodes[json_member(&doc, 0, "t")].type, JSON_TRUE);
	cr_assert_eq(doc.nodes[json_member(&doc, 0, "f")].type, JSON_FALSE);

	uint64_t v;
	cr_assert_eq(json_u64(&doc, json_member(&doc, 0, "i"), &v), 0);
	cr_assert_eq(v, 42);
	/* Decimals, signs and exponents are numbers, kept as written, but not
	 * the non-negative integers json_u64 converts. */
	int d = json_member(&doc, 0, "d");
	cr_assert_eq(doc.nodes[d].type, JSON_NUMBER);
	cr_assert_eq(doc.nodes[d].len, 4);
	cr_assert_eq(memcmp(doc.nodes[d].text, "0.25", 4), 0);
	cr_assert_eq(json_u64(&doc, d, &v), -1);
	cr_assert_eq(json_u64(&doc, json_member(&doc, 0, "neg"), &v), -1);
	cr_assert_eq(json_u64(&doc, json_member(&doc, 0, "e"), &v), -1);

	int s = json_member(&doc, 0, "s");
	static const char want[] = "a\"b\\c/\b\f\n\r\t\xc3\xa9\xf0\x9f\x98\x80" "A";
	cr_assert_eq(doc.nodes[s].type, JSON_STRING);
	cr_assert_eq(doc.nodes[s].len, sizeof(want) - 1);
	cr_assert_eq(memcmp(doc.nodes[s].text, want, sizeof(want)), 0, "decoded: %s", doc.nodes[s].text);
	int raw = json_member(&doc, 0, "raw");
	cr_assert_str_eq(doc.nodes[raw].text, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");

	int a = json_member(&doc, 0, "a");
	cr_assert_eq(doc.nodes[a].type, JSON_ARRAY);
	cr_assert_eq(doc.nodes[a].count, 3);
	cr_assert_eq(doc.nodes[json_element(&doc, a, 1)].type, JSON_ARRAY);
	cr_assert_eq(doc.nodes[json_element(&doc, a, 1)].count, 0);
	cr_assert_eq(doc.nodes[json_element(&doc, a, 2)].type, JSON_OBJECT);
	cr_assert_eq(json_element(&doc, a, 3), -1);
	int o = json_member(&doc, json_member(&doc, json_member(&doc, 0, "o"), "x"), "y");
	cr_assert_str_eq(doc.nodes[json_element(&doc, o, 0)].text, "z");
	/* A name is compared decoded. */
	cr_assert_eq(json_u64(&doc, json_member(&doc, 0, "buf_len"), &v), 0);
	cr_assert_eq(v, 7);
	cr_assert_eq(json_member(&doc, 0, "missing"), -1);
	cr_assert_eq(json_member(&doc, a, "n"), -1, "an array has no members");

	size_t line, col;
	json_where(&doc, json_member(&doc, 0, "t"), &line, &col);
	cr_assert_eq(line, 1);
	cr_assert_eq(col, 16);
	json_free(&doc);

	cr_assert_eq(parse_str("0"), 0);
	json_free(&doc);
	cr_assert_eq(parse_str("\"\""), 0);
	cr_assert_eq(doc.nodes[0].len, 0);
	json_free(&doc);
	cr_assert_eq(parse_str("-0.0e-0"), 0);
	json_free(&doc);
}

Test(json, duplicate_names_are_not_picked_from)
{
	cr_assert_eq(parse_str("{\"a\":1,\"b\":2,\"a\":3}"), 0, "%s", err);
	cr_assert_eq(json_member(&doc, 0, "a"), JSON_DUPLICATE);
	cr_assert_geq(json_member(&doc, 0, "b"), 0);
	json_free(&doc);
}

Test(json, integers_exact_to_64_bits)
{
	static const struct {
		const char *text;
		int ok;
		uint64_t v;
	} cases[] = {
		{ "0", 1, 0 },
		{ "9007199254740993", 1, 9007199254740993ull }, /* 2^53 + 1: a double would lose it */
		{ "18446744073709551615", 1, UINT64_MAX },
		{ "18446744073709551616", 0, 0 },
		{ "99999999999999999999", 0, 0 },
		{ "-0", 0, 0 },
		{ "1.0", 0, 0 },
		{ "1e3", 0, 0 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t v = 12345;
		cr_assert_eq(parse_str(cases[i].text), 0, "%s: %s", cases[i].text, err);
		cr_assert_eq(json_u64(&doc, 0, &v), cases[i].ok ? 0 : -1, "%s", cases[i].text);
		if (cases[i].ok)
			cr_assert_eq(v, cases[i].v, "%s", cases[i].text);
		json_free(&doc);
	}
}

/* Numbers of any length are valid JSON; only the conversion refuses them. */
Test(json, huge_numbers)
{
	static char text[20000];
	memset(text, '9', sizeof(text) - 1);
	cr_assert_eq(parse_str(text), 0, "%s", err);
	uint64_t v;
	cr_assert_eq(json_u64(&doc, 0, &v), -1);
	json_free(&doc);
	cr_assert_eq(parse_str("[1e999999999999999999999, -1e-999999, 123456789012345678901234567890.5]"), 0, "%s",
		     err);
	json_free(&doc);
}

Test(json, malformed)
{
	static const struct {
		const char *text;
		const char *says;
	} cases[] = {
		{ "", "empty" },
		{ " \n\t", "only blanks" },
		{ "{", "line 1, column 2: the text ends early" },
		{ "[1,]", "line 1, column 4: unexpected ']'" },
		{ "[1 2]", "line 1, column 4: unexpected '2': expected ',' or ']'" },
		{ "{\"a\" 1}", "column 6: unexpected '1': expected ':'" },
		{ "{\"a\":1,}", "column 8: unexpected '}': expected a member name" },
		{ "{1:2}", "expected a member name" },
		{ "{'a':1}", "unexpected '''" },
		{ "[01]", "leading zero" },
		{ "[1.]", "a digit after '.'" },
		{ "[.5]", "unexpected '.'" },
		{ "[-]", "expected a digit" },
		{ "[+1]", "unexpected '+'" },
		{ "[1e]", "a digit in the exponent" },
		{ "[NaN]", "unexpected 'N'" },
		{ "[Infinity]", "unexpected 'I'" },
		{ "[tru]", "not a JSON value (true?)" },
		{ "[nul", "not a JSON value (null?)" },
		{ "[True]", "unexpected 'T'" },
		{ "\"abc", "ends inside this string" },
		{ "\"ab\\", "ends inside this string" },
		{ "\"\\x\"", "invalid escape" },
		{ "\"\\u12\"", "four hexadecimal digits" },
		{ "\"\\u12g4\"", "four hexadecimal digits" },
		{ "\"\\ud800\"", "high surrogate without a low one" },
		{ "\"\\ud800\\u0041\"", "high surrogate without a low one" },
		{ "\"\\udc00\"", "low surrogate without a high one" },
		{ "\"a\tb\"", "control character 0x09" },
		{ "\"a\nb\"", "control character 0x0a" },
		{ "\"\xff\"", "invalid UTF-8" },
		{ "\"\xc0\x80\"", "invalid UTF-8" },		/* overlong NUL */
		{ "\"\xe0\x80\xaf\"", "invalid UTF-8" },	/* overlong '/' */
		{ "\"\xed\xa0\x80\"", "invalid UTF-8" },	/* a surrogate */
		{ "\"\xf4\x90\x80\x80\"", "invalid UTF-8" },	/* above U+10FFFF */
		{ "\"\xe2\x82\"", "invalid UTF-8" },		/* cut short */
		{ "\xef\xbb\xbf{}", "unexpected byte 0xef" },	/* a byte-order mark */
		{ "{} x", "column 4: unexpected 'x': expected nothing after the end" },
		{ "[1]]", "expected nothing after the end" },
		{ "[1,\n 2,\n x]", "line 3, column 2: unexpected 'x'" },
		{ "// comment\n{}", "unexpected '/'" },
		{ "{\"a\":1}\0", "unexpected byte 0x00" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t len = strlen(cases[i].text);
		if (!strcmp(cases[i].says, "unexpected byte 0x00"))
			len++;	/* the NUL is part of the input */
		doc.n = -1;
		cr_assert_eq(parse(cases[i].text, len), -1, "accepted: %s", cases[i].text);
		cr_assert(strstr(err, cases[i].says), "%s: the message is \"%s\", expected it to say \"%s\"",
			  cases[i].text, err, cases[i].says);
		cr_assert(doc.nodes == NULL && doc.n == 0, "a failed parse leaves nodes behind");
	}
}

Test(json, nesting_bound)
{
	static char text[2 * 100000 + 1];
	for (int depth = JSON_MAX_DEPTH; depth <= JSON_MAX_DEPTH + 1; depth++) {
		memset(text, 0, sizeof(text));
		memset(text, '[', (size_t)depth);
		memset(text + depth, ']', (size_t)depth);
		int r = parse_str(text);
		if (depth == JSON_MAX_DEPTH) {
			cr_assert_eq(r, 0, "%d deep: %s", depth, err);
			json_free(&doc);
		} else {
			cr_assert_eq(r, -1);
			cr_assert(strstr(err, "nested more than 64 deep"), "%s", err);
		}
	}
	/* Objects count the same, mixed with arrays. */
	size_t k = 0;
	for (int i = 0; i <= JSON_MAX_DEPTH; i++)
		k += (size_t)sprintf(text + k, i % 2 ? "[" : "{\"k\":");
	cr_assert_eq(parse(text, k), -1);
	cr_assert(strstr(err, "nested more than 64 deep"), "%s", err);
	/* Far past the bound, open or closed: an error, not a stack overflow. */
	memset(text, '[', 100000);
	memset(text + 100000, ']', 100000);
	cr_assert_eq(parse(text, 200000), -1);
	cr_assert(strstr(err, "nested more than 64 deep"), "%s", err);
	cr_assert_eq(parse(text, 100000), -1);
}

/* The statistics file of the pol_stats integration run, as written. */
static const char real_stats[] =
	"{\"pid\":32271,\"rings\":[\n"
	"{\"ring\":0,\"peak_in_use\":1,\"strays\":0,\"groups\":[\n"
	"{\"bgid\":1,\"policy\":{\"cap\":0,\"max_len\":0,\"enobufs_rate\":0,\"seed\":\"1\"},\"available\":0,"
	"\"in_use\":0,\"peak_in_use\":1,\"held\":3,\"peak_out\":4,\"size\":3,\"peak_size\":4,\"buf_len\":16,"
	"\"provided\":4,\"removed\":1,\"selected\":4,\"returned\":1,\"consumed\":3,\"enobufs\":{\"total\":1,"
	"\"empty\":1,\"capped\":0,\"injected\":0},\"wait\":{\"count\":0,\"ns\":0},\"bytes_used\":{\"count\":3,"
	"\"sum\":15,\"hist\":[0,0,1,2,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]},"
	"\"in_use_hist\":[0,4,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]},\n"
	"{\"bgid\":3,\"policy\":{\"cap\":0,\"max_len\":0,\"enobufs_rate\":0.5,\"seed\":\"7\"},\"available\":1,"
	"\"in_use\":0,\"peak_in_use\":0,\"held\":0,\"peak_out\":0,\"size\":1,\"peak_size\":1,\"buf_len\":16,"
	"\"provided\":1,\"removed\":0,\"selected\":0,\"returned\":0,\"consumed\":0,\"enobufs\":{\"total\":1,"
	"\"empty\":0,\"capped\":0,\"injected\":1},\"wait\":{\"count\":0,\"ns\":0},\"bytes_used\":{\"count\":0,"
	"\"sum\":0,\"hist\":[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]},"
	"\"in_use_hist\":[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]}\n"
	"]}\n"
	"]}\n";

/* A file cut anywhere before its last bracket (a killed writer) is refused. */
Test(json, every_truncation_fails)
{
	size_t len = sizeof(real_stats) - 1, end = len;
	cr_assert_eq(parse(real_stats, len), 0, "%s", err);
	json_free(&doc);
	while (end > 0 && strchr(" \n", real_stats[end - 1]))
		end--;
	for (size_t n = 0; n < end; n++) {
		/* A copy of exactly n bytes, so that reading past them is ASan's to catch. */
		char *cut = malloc(n ? n : 1);
		cr_assert_not_null(cut);
		memcpy(cut, real_stats, n);
		cr_assert_eq(parse(cut, n), -1, "a truncation to %zu bytes was accepted", n);
		free(cut);
	}
}

/* Mutated documents, deterministically: any outcome but a crash or a leak. */
Test(json, mutations_do_not_crash)
{
	size_t len = sizeof(real_stats) - 1;
	static const char alphabet[] = "{}[]\",:\\0123456789-+.eEtrufalsn \n\x80\xff\x00u";
	uint64_t x = 0x9e3779b97f4a7c15ull;
	int accepted = 0;
	for (int i = 0; i < 20000; i++) {
		char *m = malloc(len);
		cr_assert_not_null(m);
		memcpy(m, real_stats, len);
		size_t n = len;
		int edits = 1 + i % 4;
		for (int e = 0; e < edits; e++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			size_t at = (size_t)(x >> 8) % n;
			switch (x & 3) {
			case 0: /* replace a byte */
			case 1:
				m[at] = alphabet[(x >> 40) % (sizeof(alphabet) - 1)];
				break;
			case 2: /* cut */
				n = at + 1;
				break;
			default: /* delete a byte */
				memmove(m + at, m + at + 1, n - at - 1);
				if (n > 1)
					n--;
				break;
			}
		}
		if (!parse(m, n)) {
			accepted++;
			/* Whatever was accepted is walkable. */
			for (int k = 0; k < doc.n; k++)
				cr_assert(doc.nodes[k].first < doc.n && doc.nodes[k].next < doc.n);
			json_free(&doc);
		} else {
			cr_assert(err[0], "a failure without a message");
		}
		free(m);
	}
	cr_assert_gt(accepted, 0, "no mutation was accepted: the mutations test nothing valid");
}

/* ---- the report ------------------------------------------------------------- */

static char *out_text, *err_text;
static size_t out_len, err_len;

static void write_text(const char *name, const char *text)
{
	FILE *f = fopen(name, "w");
	cr_assert_not_null(f, "%s: %s", name, strerror(errno));
	cr_assert_eq(fputs(text, f) >= 0, 1);
	cr_assert_eq(fclose(f), 0);
}

/* bufsel report ARGS...: the exit status, the output in out_text and err_text. */
static int report(const char *a1, ...)
{
	char *argv[16] = { "report" };
	int argc = 1;
	va_list ap;
	va_start(ap, a1);
	for (const char *a = a1; a && argc < 15; a = va_arg(ap, const char *))
		argv[argc++] = (char *)a;
	va_end(ap);
	argv[argc] = NULL;
	free(out_text);
	free(err_text);
	FILE *out = open_memstream(&out_text, &out_len), *errf = open_memstream(&err_text, &err_len);
	cr_assert(out && errf);
	int status = report_run(argc, argv, out, errf);
	fclose(out);
	fclose(errf);
	return status;
}

#define REPORT(...) report(__VA_ARGS__, (const char *)NULL)

#define Z8 "0,0,0,0,0,0,0,0"
#define Z16 Z8 "," Z8
#define ZERO_HIST "[0," Z16 "," Z16 "]"

/*
 * Two rings.  Ring 0:
 *   group 1: 64 buffers of 4096 at most, peak out 10; 1000 deliveries: 900
 *     of 256-511 bytes (bucket 9), 95 of 1024-2047 (11), 5 of 4096 (13).
 *     p50: the 500th is in bucket 9, 511; p99: the 990th is in bucket 11
 *     (900 + 95 = 995 >= 990), 2047.  count = ceil(10 x 1.25) = 13;
 *     13 x 2047 = 26611 against 64 x 4096 = 262144: saves 235533 B,
 *     230.0 KiB.
 *   group 2: 8 buffers of 512, peak out 8, 40 deliveries of 512 bytes
 *     (bucket 10, 512-1023), so the length is capped at buf_len, 512;
 *     count = ceil(8 x 1.25) = 10: 5120 against 4096, needs 1024 B more.
 * Ring 5, with 2 strays:
 *   group 0: 4 buffers of 1 MiB, never selected: count 1 (at least 1),
 *     length kept at buf_len: 1 MiB against 4: saves 3145728 B, 3.0 MiB.
 *   group 65535: 1 buffer of 100, peak out 1, one delivery of 0 bytes
 *     (bucket 0): length 0, so 1; count ceil(1.25) = 2: 2 against 100,
 *     saves 98 B.
 * Total: 235533 - 1024 + 3145728 + 98 = 3380335 B, 3.22 MiB.
 */
static const char new_stats[] =
	"{\"pid\":4242,\"rings\":[\n"
	"{\"ring\":0,\"peak_in_use\":14,\"strays\":0,\"groups\":[\n"
	"{\"bgid\":1,\"policy\":{\"cap\":0,\"max_len\":0,\"enobufs_rate\":0.001,\"seed\":\"1\"},"
	"\"available\":60,\"in_use\":2,\"peak_in_use\":6,\"held\":2,\"peak_out\":10,\"size\":64,\"peak_size\":64,"
	"\"buf_len\":4096,\"provided\":64,\"removed\":0,\"selected\":1000,\"returned\":0,\"consumed\":998,"
	"\"enobufs\":{\"total\":0,\"empty\":0,\"capped\":0,\"injected\":0},\"wait\":{\"count\":0,\"ns\":0},"
	"\"bytes_used\":{\"count\":1000,\"sum\":400000,\"hist\":[0,0,0,0,0,0,0,0,0,900,0,95,0,5,0,0,0," Z16 "]},"
	"\"in_use_hist\":[0,100,300,500,100,0,0,0,0," Z8 "," Z16 "]},\n"
	"{\"bgid\":2,\"policy\":{\"cap\":8,\"max_len\":0,\"enobufs_rate\":0,\"seed\":\"1\"},"
	"\"available\":0,\"in_use\":0,\"peak_in_use\":8,\"held\":8,\"peak_out\":8,\"size\":8,\"peak_size\":8,"
	"\"buf_len\":512,\"provided\":8,\"removed\":0,\"selected\":40,\"returned\":0,\"consumed\":40,"
	"\"enobufs\":{\"total\":7,\"empty\":7,\"capped\":0,\"injected\":0},\"wait\":{\"count\":40,\"ns\":1000},"
	"\"bytes_used\":{\"count\":40,\"sum\":20480,\"hist\":[0,0,0,0,0,0,0,0,0,0,40,0,0,0,0,0,0," Z16 "]},"
	"\"in_use_hist\":[0,5,10,20,5,0,0,0,0," Z8 "," Z16 "]}\n"
	"]},\n"
	"{\"ring\":5,\"peak_in_use\":1,\"strays\":2,\"groups\":[\n"
	"{\"bgid\":0,\"policy\":{\"cap\":0,\"max_len\":0,\"enobufs_rate\":1,\"seed\":\"18446744073709551615\"},"
	"\"available\":4,\"in_use\":0,\"peak_in_use\":0,\"held\":0,\"peak_out\":0,\"size\":4,\"peak_size\":4,"
	"\"buf_len\":1048576,\"provided\":4,\"removed\":0,\"selected\":0,\"returned\":0,\"consumed\":0,"
	"\"enobufs\":{\"total\":3,\"empty\":0,\"capped\":0,\"injected\":3},\"wait\":{\"count\":0,\"ns\":0},"
	"\"bytes_used\":{\"count\":0,\"sum\":0,\"hist\":" ZERO_HIST "},\"in_use_hist\":" ZERO_HIST "},\n"
	"{\"bgid\":65535,\"policy\":{\"cap\":0,\"max_len\":0,\"enobufs_rate\":0,\"seed\":\"1\"},"
	"\"available\":0,\"in_use\":0,\"peak_in_use\":1,\"held\":1,\"peak_out\":1,\"size\":1,\"peak_size\":1,"
	"\"buf_len\":100,\"provided\":1,\"removed\":0,\"selected\":1,\"returned\":0,\"consumed\":1,"
	"\"enobufs\":{\"total\":0,\"empty\":0,\"capped\":0,\"injected\":0},\"wait\":{\"count\":0,\"ns\":0},"
	"\"bytes_used\":{\"count\":1,\"sum\":0,\"hist\":[1," Z16 "," Z16 "]},"
	"\"in_use_hist\":[0,1," Z8 "," Z8 "," Z8 ",0,0,0,0,0,0,0]}\n"
	"]}\n"
	"]}\n";

#define LEGEND                                                                                              \
	"buffers: the most the group had; buf_len: its longest buffer, in bytes;\n"                         \
	"peak out: the most buffers in use or held by the program at once;\n"                               \
	"-ENOBUFS e/c/i: selections refused because the group was empty / at its cap / by injection;\n"     \
	"bytes p50, p99: the upper bound of the power-of-two bucket holding that percentile\n"              \
	"of the bytes delivered in a buffer ('-': none recorded).\n"

#define FORMULA(margin, factor, pct)                                                                        \
	"recommendation (margin " margin "%, percentile " pct "):\n"                                        \
	"count = ceil(peak out x " factor "), at least 1; length = bytes p" pct                              \
	", at most buf_len, at least 1\n"                                                                    \
	"(buf_len when no bytes were recorded); saves = buffers x buf_len - count x length.\n"

static const char new_report[] =
	"bufsel report: new.json (pid 4242): 2 rings, 4 buffer groups\n"
	"\n"
	"ring   bgid  buffers  buf_len  peak out  selected  -ENOBUFS e/c/i  bytes p50  bytes p99\n"
	"   0      1       64     4096        10      1000           0/0/0        511       2047\n"
	"   0      2        8      512         8        40           7/0/0       1023       1023\n"
	"   5      0        4  1048576         0         0           0/0/3          -          -\n"
	"   5  65535        1      100         1         1           0/0/0          0          0\n"
	"\n" LEGEND
	"warning: ring 5: 2 strays (put-backs or deliveries that matched no buffer: a bufsel bug; the counts may "
	"be off)\n"
	"\n" FORMULA("25", "1.25", "99")
	"  ring 0 bgid 1: 13 buffers of 2047 bytes, now 64 of 4096: saves 230.0 KiB (235533 B)\n"
	"  ring 0 bgid 2: 10 buffers of 512 bytes, now 8 of 512: needs 1.0 KiB (1024 B) more\n"
	"  ring 5 bgid 0: 1 buffer of 1048576 bytes (no bytes recorded), now 4 of 1048576: saves 3.0 MiB (3145728 B)\n"
	"  ring 5 bgid 65535: 2 buffers of 1 bytes, now 1 of 100: saves 98 B\n"
	"total: saves 3.2 MiB (3380335 B)\n";

Test(report, new_fields_whole_text)
{
	write_text("new.json", new_stats);
	cr_assert_eq(REPORT("new.json"), 0, "stderr: %s", err_text);
	cr_assert_str_eq(out_text, new_report);
	cr_assert_str_eq(err_text, "");
}

/*
 * Margin 0 and the median: group 1 gets ceil(10 x 1) = 10 of 511 (the
 * 500th delivery is in bucket 9): 5110 against 262144, saves 257034 B
 * (251.0 KiB); group 2: 8 of 512, as now; group 0: 1 of 1 MiB; group 65535:
 * 1 of 1, saves 99 B.  Total 257034 + 3145728 + 99 = 3402861 B.
 */
Test(report, margin_and_percentile)
{
	write_text("new.json", new_stats);
	cr_assert_eq(REPORT("--margin", "0", "--percentile=50", "new.json"), 0, "stderr: %s", err_text);
	const char *rec = strstr(out_text, "recommendation");
	cr_assert_not_null(rec, "%s", out_text);
	cr_assert_str_eq(rec, FORMULA("0", "1", "50")
		"  ring 0 bgid 1: 10 buffers of 511 bytes, now 64 of 4096: saves 251.0 KiB (257034 B)\n"
		"  ring 0 bgid 2: 8 buffers of 512 bytes, now 8 of 512: saves 0 B\n"
		"  ring 5 bgid 0: 1 buffer of 1048576 bytes (no bytes recorded), now 4 of 1048576: saves 3.0 MiB "
		"(3145728 B)\n"
		"  ring 5 bgid 65535: 1 buffer of 1 bytes, now 1 of 100: saves 99 B\n"
		"total: saves 3.2 MiB (3402861 B)\n");

	/*
	 * Margin 12.5%: ceil(10 x 1.125) = 12, ceil(8 x 1.125) = 9,
	 * ceil(1 x 1.125) = 2.  Percentile 99.6: the 996th delivery of group 1
	 * is past 995, in bucket 13, 8191, capped at 4096: 12 x 4096 = 49152
	 * against 262144, saves 212992 B (208.0 KiB); group 2: 9 x 512 = 4608
	 * against 4096, needs 512 B more.
	 */
	cr_assert_eq(REPORT("--percentile", "99.6", "--margin=12.5", "new.json"), 0, "stderr: %s", err_text);
	rec = strstr(out_text, "recommendation");
	cr_assert_not_null(rec, "%s", out_text);
	cr_assert_str_eq(rec, FORMULA("12.5", "1.125", "99.6")
		"  ring 0 bgid 1: 12 buffers of 4096 bytes, now 64 of 4096: saves 208.0 KiB (212992 B)\n"
		"  ring 0 bgid 2: 9 buffers of 512 bytes, now 8 of 512: needs 512 B more\n"
		"  ring 5 bgid 0: 1 buffer of 1048576 bytes (no bytes recorded), now 4 of 1048576: saves 3.0 MiB "
		"(3145728 B)\n"
		"  ring 5 bgid 65535: 2 buffers of 1 bytes, now 1 of 100: saves 98 B\n"
		"total: saves 3.2 MiB (3358306 B)\n");

	/* Percentile 100 is the largest delivery; a large margin can make the total negative. */
	cr_assert_eq(REPORT("--percentile", "100", "--margin", "10000", "new.json"), 0, "stderr: %s", err_text);
	cr_assert(strstr(out_text, "recommendation (margin 10000%, percentile 100):\n"
				   "count = ceil(peak out x 101), at least 1; length = bytes p100,"),
		  "%s", out_text);
	/* 1010 x 4096 = 4136960 against 262144: needs 3874816 B, 3.7 MiB more. */
	cr_assert(strstr(out_text, "  ring 0 bgid 1: 1010 buffers of 4096 bytes, now 64 of 4096: needs 3.7 MiB "
				   "(3874816 B) more\n"),
		  "%s", out_text);
	/* 3874816 + 409600 (808 x 512 - 4096) - 3145728 + 1 (101 x 1 - 100) = 1138689 more. */
	cr_assert(strstr(out_text, "total: needs 1.1 MiB (1138689 B) more\n"), "%s", out_text);
}

/*
 * A file from before buf_len, peak_size and peak_out: buffers is provided,
 * peak out is peak_in_use, and nothing about memory can be said.
 * Group 1: peak in use 1, ceil(1.25) = 2 buffers; 3 deliveries, the 3rd
 * (ceil(3 x 0.99)) in bucket 3, 7 bytes.  Group 3: never selected, 1
 * buffer, and no length to keep.
 */
static const char old_stats[] =
	"{\"pid\":7,\"rings\":[\n"
	"{\"ring\":0,\"peak_in_use\":1,\"strays\":0,\"groups\":[\n"
	"{\"bgid\":1,\"policy\":{\"cap\":0,\"max_len\":0,\"enobufs_rate\":0,\"seed\":\"1\"},\"available\":0,"
	"\"in_use\":0,\"peak_in_use\":1,\"provided\":4,\"removed\":1,\"selected\":4,\"returned\":1,\"consumed\":3,"
	"\"enobufs\":{\"total\":1,\"empty\":1,\"capped\":0,\"injected\":0},\"wait\":{\"count\":0,\"ns\":0},"
	"\"bytes_used\":{\"count\":3,\"sum\":15,\"hist\":[0,0,1,2,0,0,0,0,0," Z8 "," Z16 "]},"
	"\"in_use_hist\":[0,4,0,0,0,0,0,0,0," Z8 "," Z16 "]},\n"
	"{\"bgid\":3,\"policy\":{\"cap\":0,\"max_len\":0,\"enobufs_rate\":1,\"seed\":\"7\"},\"available\":1,"
	"\"in_use\":0,\"peak_in_use\":0,\"provided\":1,\"removed\":0,\"selected\":0,\"returned\":0,\"consumed\":0,"
	"\"enobufs\":{\"total\":1,\"empty\":0,\"capped\":0,\"injected\":1},\"wait\":{\"count\":0,\"ns\":0},"
	"\"bytes_used\":{\"count\":0,\"sum\":0,\"hist\":" ZERO_HIST "},\"in_use_hist\":" ZERO_HIST "}\n"
	"]}\n"
	"]}\n";

static const char old_report[] =
	"bufsel report: old.json (pid 7): 1 ring, 2 buffer groups\n"
	"\n"
	"ring  bgid  buffers  buf_len  peak out  selected  -ENOBUFS e/c/i  bytes p50  bytes p99\n"
	"   0     1        4        ?         1         4           1/0/0          7          7\n"
	"   0     3        1        ?         0         0           0/0/1          -          -\n"
	"\n" LEGEND
	"note: groups without peak_size, peak_out, buf_len (a file from an older bufsel): buffers is the number "
	"provided; peak out counts only buffers in use, not those the program held; buf_len is '?' and memory "
	"is not estimated.\n"
	"\n" FORMULA("25", "1.25", "99")
	"  ring 0 bgid 1: 2 buffers of 7 bytes, now 4 of ?: memory not estimated (no buf_len)\n"
	"  ring 0 bgid 3: 1 buffer of ? bytes (no bytes recorded), now 1 of ?: memory not estimated (no buf_len)\n"
	"total: memory not estimated (no buf_len in the file)\n";

Test(report, old_file_whole_text)
{
	write_text("old.json", old_stats);
	cr_assert_eq(REPORT("old.json"), 0, "stderr: %s", err_text);
	cr_assert_str_eq(out_text, old_report);
	cr_assert_str_eq(err_text, "");
}

/* Groups with and without buf_len in one file: the total covers those with it. */
Test(report, partly_old_file)
{
	static const char text[] =
		"{\"rings\":[{\"ring\":2,\"strays\":0,\"groups\":["
		"{\"bgid\":4,\"provided\":2,\"peak_in_use\":2,\"selected\":2,"
		"\"enobufs\":{\"empty\":0,\"capped\":0,\"injected\":0},\"bytes_used\":{\"hist\":" ZERO_HIST "},"
		"\"in_use_hist\":" ZERO_HIST "},"
		"{\"bgid\":9,\"provided\":3,\"peak_in_use\":1,\"selected\":1,\"buf_len\":64,"
		"\"enobufs\":{\"empty\":0,\"capped\":0,\"injected\":0},\"bytes_used\":{\"hist\":" ZERO_HIST "},"
		"\"in_use_hist\":" ZERO_HIST "}]}]}";
	write_text("mixed.json", text);
	cr_assert_eq(REPORT("mixed.json"), 0, "stderr: %s", err_text);
	/* No pid: the header does without.  Group 9 has buf_len but not
	 * peak_size or peak_out: 3 provided of 64, ceil(1 x 1.25) = 2 of 64. */
	cr_assert(!strncmp(out_text, "bufsel report: mixed.json: 1 ring, 2 buffer groups\n", 51), "%s", out_text);
	cr_assert(strstr(out_text, "\n  ring 2 bgid 4: 3 buffers of ? bytes (no bytes recorded), now 2 of ?: "
				   "memory not estimated (no buf_len)\n"
				   "  ring 2 bgid 9: 2 buffers of 64 bytes (no bytes recorded), now 3 of 64: saves 64 B\n"
				   "total: saves 64 B over 1 of 2 groups (the others have no buf_len)\n"),
		  "%s", out_text);
	cr_assert(strstr(out_text, "note: groups without peak_size, peak_out, buf_len"), "%s", out_text);
}

Test(report, no_groups)
{
	write_text("empty.json", "{\"pid\":1,\"rings\":[]}");
	cr_assert_eq(REPORT("empty.json"), 0);
	cr_assert_str_eq(out_text, "bufsel report: empty.json (pid 1): 0 rings, 0 buffer groups\n"
				   "no legacy buffer groups: nothing to recommend\n");
	write_text("empty.json", "{\"pid\":1,\"rings\":[{\"ring\":0,\"peak_in_use\":0,\"strays\":0,\"groups\":[]}]}");
	cr_assert_eq(REPORT("empty.json"), 0);
	cr_assert_str_eq(out_text, "bufsel report: empty.json (pid 1): 1 ring, 0 buffer groups\n"
				   "no legacy buffer groups: nothing to recommend\n");
}

/* Unknown members are skipped whatever their type, as the schema asks of readers. */
Test(report, unknown_fields_ignored)
{
	static char text[sizeof(new_stats) + 256];
	snprintf(text, sizeof(text), "{\"future\":[null,true,{\"x\":\"\\u00e9\"}],%s", new_stats + 1);
	write_text("new.json", text);
	cr_assert_eq(REPORT("new.json"), 0, "stderr: %s", err_text);
	cr_assert_str_eq(out_text, new_report);
}

/* new_stats with its one occurrence of old replaced by new, into text. */
static void edit(char *text, const char *old, const char *new)
{
	const char *at = strstr(new_stats, old);
	cr_assert_not_null(at, "no %s in new_stats", old);
	cr_assert_null(strstr(at + 1, old), "%s more than once in new_stats", old);
	size_t before = (size_t)(at - new_stats);
	memcpy(text, new_stats, before);
	strcpy(text + before, new);
	strcat(text + before, at + strlen(old));
}

/* A bad file: nothing on stdout, one line on stderr, exit status 1. */
static void expect_bad_file(const char *name, const char *text, const char *line)
{
	if (text)
		write_text(name, text);
	cr_assert_eq(REPORT(name), 1, "%s was accepted:\n%s", name, out_text);
	cr_assert_str_eq(out_text, "", "%s", name);
	cr_assert_str_eq(err_text, line, "%s: got    %sexpected %s", name, err_text, line);
}

Test(report, bad_files)
{
	expect_bad_file("missing.json", NULL, "bufsel: report: missing.json: No such file or directory\n");
	cr_assert_eq(mkdir("adir", 0755), 0);
	expect_bad_file("adir", NULL, "bufsel: report: adir: is a directory\n");
	expect_bad_file("empty.json", "", "bufsel: report: empty.json: not JSON: empty, no JSON value\n");
	/* Read up to 64 MiB, and no further. */
	int fd = open("huge.json", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, (64 << 20) + 1), 0);
	close(fd);
	expect_bad_file("huge.json", NULL, "bufsel: report: huge.json: larger than 64 MiB: not a statistics file\n");
	cr_assert_eq(truncate("huge.json", 64 << 20), 0);
	expect_bad_file("huge.json", NULL,
			"bufsel: report: huge.json: not JSON: line 1, column 1: unexpected byte 0x00: expected a value\n");
	unlink("huge.json");
	expect_bad_file("cut.json", "{\"pid\":1,\"rings\":[\n{\"ring\":0,",
			"bufsel: report: cut.json: not JSON: line 2, column 11: the text ends early: expected a member "
			"name in double quotes\n");
	expect_bad_file("array.json", "[1,2]",
			"bufsel: report: array.json: an array, expected an object with \"rings\": not a statistics file "
			"(line 1)\n");
	expect_bad_file("norings.json", "{\"pid\":1}", "bufsel: report: norings.json: no \"rings\" (line 1)\n");
	expect_bad_file("pid.json", "{\"pid\":-1,\"rings\":[]}",
			"bufsel: report: pid.json: pid: -1 is not an integer in 0..18446744073709551615 (line 1)\n");
	expect_bad_file("ringobj.json", "{\"rings\":{}}",
			"bufsel: report: ringobj.json: rings: an object, expected an array (line 1)\n");
	expect_bad_file("dup.json", "{\"rings\":[],\"rings\":[]}",
			"bufsel: report: dup.json: \"rings\" given twice (line 1)\n");
	expect_bad_file("ringnum.json", "{\"rings\":[3]}",
			"bufsel: report: ringnum.json: rings[0]: a number, expected an object (line 1)\n");
	expect_bad_file("nostrays.json", "{\"rings\":[{\"ring\":0,\"groups\":[]}]}",
			"bufsel: report: nostrays.json: rings[0]: no \"strays\" (line 1)\n");

	/* Group problems name the group and the line it is on. */
	static char text[sizeof(new_stats) + 64];
	edit(text, "\"selected\":40", "\"selectee\":40");
	expect_bad_file("g.json", text, "bufsel: report: g.json: rings[0].groups[1]: no \"selected\" (line 4)\n");
	edit(text, "\"bgid\":65535", "\"bgid\":65536");
	expect_bad_file("g.json", text,
			"bufsel: report: g.json: rings[1].groups[1]: bgid: 65536 is not an integer in 0..65535 "
			"(line 8)\n");
	edit(text, "\"buf_len\":1048576", "\"buf_len\":\"1048576\"");
	expect_bad_file("g.json", text,
			"bufsel: report: g.json: rings[1].groups[0]: buf_len: a string, expected an integer (line 7)\n");
	edit(text, "\"buf_len\":1048576", "\"buf_len\":4294967296");
	expect_bad_file("g.json", text,
			"bufsel: report: g.json: rings[1].groups[0]: buf_len: 4294967296 is not an integer in "
			"0..4294967295 (line 7)\n");
	edit(text, "\"peak_out\":10", "\"peak_out\":1.");
	expect_bad_file("g.json", text,
			"bufsel: report: g.json: not JSON: line 3, column 138: unexpected ',': expected a digit after "
			"'.'\n");
	edit(text, "\"peak_out\":10", "\"peak_out\":1e1");
	expect_bad_file("g.json", text,
			"bufsel: report: g.json: rings[0].groups[0]: peak_out: 1e1 is not an integer in "
			"0..18446744073709551615 (line 3)\n");
	edit(text, "\"enobufs\":{\"total\":7,\"empty\":7,\"capped\":0,\"injected\":0}", "\"enobufs\":[7,7,0,0]");
	expect_bad_file("g.json", text,
			"bufsel: report: g.json: rings[0].groups[1]: enobufs: an array, expected an object (line 4)\n");
	edit(text, "\"enobufs\":{\"total\":7,\"empty\":7,", "\"enobufs\":{\"total\":7,\"empty\":7,\"empty\":8,");
	expect_bad_file("g.json", text,
			"bufsel: report: g.json: rings[0].groups[1]: \"enobufs.empty\" given twice (line 4)\n");

	/* A histogram must have its 33 integers. */
	edit(text, "\"in_use_hist\":[0,5,", "\"in_use_hist\":[5,");
	expect_bad_file("g.json", text,
			"bufsel: report: g.json: rings[0].groups[1]: in_use_hist: not an array of 33 integers "
			"(line 4)\n");
	edit(text, "\"in_use_hist\":[0,5,", "\"in_use_hist\":[0,5,0,");
	expect_bad_file("g.json", text,
			"bufsel: report: g.json: rings[0].groups[1]: in_use_hist: not an array of 33 integers "
			"(line 4)\n");
	edit(text, "\"in_use_hist\":[0,5,", "\"in_use_hist\":[0,-5,");
	expect_bad_file("g.json", text,
			"bufsel: report: g.json: rings[0].groups[1]: in_use_hist[1]: not an integer in "
			"0..18446744073709551615 (line 4)\n");
	edit(text, "\"hist\":[1,", "\"hist\":[99999999999999999999999,");
	expect_bad_file("g.json", text,
			"bufsel: report: g.json: rings[1].groups[1]: bytes_used.hist[0]: not an integer in "
			"0..18446744073709551615 (line 8)\n");
	edit(text, "\"bytes_used\":{\"count\":1,\"sum\":0,\"hist\":[1,", "\"bytes_used\":{\"count\":1,\"sum\":0,\"hist\":{\"0\":1},\"x\":[");
	expect_bad_file("g.json", text,
			"bufsel: report: g.json: rings[1].groups[1]: bytes_used.hist: not an array of 33 integers "
			"(line 8)\n");
}

/* Counters at the top of their range are exact: the products are 128-bit. */
Test(report, largest_counters)
{
	static char text[sizeof(new_stats) + 64];
	edit(text, "\"peak_out\":10,", "\"peak_out\":18446744073709551615,");
	write_text("big.json", text);
	cr_assert_eq(REPORT("big.json"), 0, "%s", err_text);
	/* ceil((2^64 - 1) x 1.25) = 23058430092136939519 buffers of 2047 bytes
	 * = 47200606398604314933249 B, less the 262144 there are now. */
	cr_assert(strstr(out_text, "  ring 0 bgid 1: 23058430092136939519 buffers of 2047 bytes, now 64 of 4096: "
				   "needs 45014006041149439.7 MiB (47200606398604314933249 B) more\n"),
		  "%s", out_text);
}

Test(report, usage_errors)
{
	write_text("new.json", new_stats);
	static const struct {
		const char *a, *b, *c;
		const char *says;
	} cases[] = {
		{ NULL, NULL, NULL, "bufsel: report: no statistics file given (bufsel report --help)\n" },
		{ "new.json", "new.json", NULL,
		  "bufsel: report: one statistics file, but 'new.json' follows 'new.json' (bufsel report --help)\n" },
		{ "--bogus", "new.json", NULL, "bufsel: report: unknown option '--bogus' (bufsel report --help)\n" },
		{ "--margin", NULL, NULL, "bufsel: report: --margin needs a value (bufsel report --help)\n" },
		{ "--margin=", "new.json", NULL, "bufsel: report: --margin needs a value (bufsel report --help)\n" },
		{ "--margin", "-5", "new.json",
		  "bufsel: report: --margin: '-5' is not a percentage in 0..10000 (at most 6 decimals) (bufsel report "
		  "--help)\n" },
		{ "--margin", "10000.000001", "new.json",
		  "bufsel: report: --margin: '10000.000001' is not a percentage in 0..10000 (at most 6 decimals) "
		  "(bufsel report --help)\n" },
		{ "--margin", "1.0000001", "new.json",
		  "bufsel: report: --margin: '1.0000001' is not a percentage in 0..10000 (at most 6 decimals) "
		  "(bufsel report --help)\n" },
		{ "--margin", "25%", "new.json",
		  "bufsel: report: --margin: '25%' is not a percentage in 0..10000 (at most 6 decimals) (bufsel "
		  "report --help)\n" },
		{ "--percentile", "0", "new.json",
		  "bufsel: report: --percentile: '0' is not a number above 0 and at most 100 (at most 6 decimals) "
		  "(bufsel report --help)\n" },
		{ "--percentile", "100.5", "new.json",
		  "bufsel: report: --percentile: '100.5' is not a number above 0 and at most 100 (at most 6 decimals) "
		  "(bufsel report --help)\n" },
		{ "--percentile", "1e2", "new.json",
		  "bufsel: report: --percentile: '1e2' is not a number above 0 and at most 100 (at most 6 decimals) "
		  "(bufsel report --help)\n" },
		{ "--percentile", ".5", "new.json",
		  "bufsel: report: --percentile: '.5' is not a number above 0 and at most 100 (at most 6 decimals) "
		  "(bufsel report --help)\n" },
		{ "--plot", "out.pdf", "new.json",
		  "bufsel: report: --plot: 'out.pdf' should end in .svg or .png (bufsel report --help)\n" },
		{ "--plot", ".svg", "new.json",
		  "bufsel: report: --plot: '.svg' should end in .svg or .png (bufsel report --help)\n" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cr_assert_eq(report(cases[i].a, cases[i].b, cases[i].c, (const char *)NULL), 2, "case %zu: %s", i,
			     err_text);
		cr_assert_str_eq(err_text, cases[i].says, "case %zu", i);
		cr_assert_str_eq(out_text, "", "case %zu", i);
	}
	/* "--" ends the options: a file may be called --margin. */
	write_text("--margin", new_stats);
	cr_assert_eq(REPORT("--", "--margin"), 0, "%s", err_text);
	cr_assert(!strncmp(out_text, "bufsel report: --margin (pid 4242):", 35), "%s", out_text);
	cr_assert_eq(REPORT("--help"), 0);
	cr_assert(!strncmp(out_text, "Usage: bufsel report [--margin PCT]", 35), "%s", out_text);
}

/*
 * Mutated statistics files through the whole report: a report (status 0)
 * or one line (status 1), never a crash, whatever the loader is handed.
 * Edits that keep the JSON valid, such as digits changed and members
 * dropped, reach the checks of the fields.
 */
Test(report, mutated_files)
{
	static const char *const swaps[][2] = {
		{ "\"peak_out\":10", "\"peak_out\":-1" },   { "\"buf_len\":512", "\"buf_len\":null" },
		{ "\"hist\":[1,", "\"hist\":[[1],"},        { "\"strays\":0,\"groups\":[", "\"strays\":0,\"groups\":[[]," },
		{ "\"strays\":2", "\"strays\":\"2\"" },     { "\"in_use_hist\":[0,1,", "\"in_use_hist\":[0,1,2," },
		{ "\"empty\":7", "\"empty\":7e0" },          { "\"bgid\":0,", "\"bgid\":0.0," },
	};
	static char text[sizeof(new_stats) + 64];
	uint64_t x = 0x2545f4914f6cdd1dull;
	int reports = 0, refusals = 0;
	for (int i = 0; i < 600; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		if (i < (int)(sizeof(swaps) / sizeof(swaps[0]))) {
			edit(text, swaps[i][0], swaps[i][1]);
		} else {
			strcpy(text, new_stats);
			size_t len = strlen(text);
			for (int e = 0; e < 1 + i % 3; e++) {
				size_t at = (size_t)(x >> (8 + 3 * e)) % len;
				if (x >> 62)
					text[at] = (char)('0' + (x >> 20) % 10);	/* another digit, mostly */
				else
					memmove(text + at, text + at + 1, len - at);	/* a byte dropped */
				len = strlen(text);
			}
		}
		write_text("m.json", text);
		int status = REPORT("m.json");
		if (status == 0) {
			reports++;
			cr_assert(strstr(out_text, "\ntotal: "), "a report without its total:\n%s", out_text);
		} else {
			refusals++;
			cr_assert_eq(status, 1);
			cr_assert(!strncmp(err_text, "bufsel: report: m.json: ", 24) &&
					  strchr(err_text, '\n') == err_text + err_len - 1,
				  "not one line: %s", err_text);
		}
	}
	cr_assert(reports > 0 && refusals > 0, "%d reports and %d refusals: the mutations test too little", reports,
		  refusals);
}

/* ---- --plot ------------------------------------------------------------------ */

static size_t file_size(const char *path, char *head, size_t head_len)
{
	int fd = open(path, O_RDONLY);
	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	struct stat st;
	cr_assert_eq(fstat(fd, &st), 0);
	memset(head, 0, head_len);
	cr_assert_geq(read(fd, head, head_len - 1), 0);
	close(fd);
	return (size_t)st.st_size;
}

/* The temporary directories of the plot are gone afterwards. */
static void expect_no_leftovers(const char *tmp)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "test -z \"$(ls -A '%s')\"", tmp);
	cr_assert_eq(system(cmd), 0, "files left in %s", tmp);
}

Test(report, plot_svg_and_png)
{
	char head[4096];
	write_text("new.json", new_stats);
	cr_assert_eq(mkdir("tmp", 0755), 0);
	char tmp[128];
	snprintf(tmp, sizeof(tmp), "%s/tmp", dir);
	setenv("TMPDIR", tmp, 1);

	cr_assert_eq(REPORT("--plot", "out.svg", "new.json"), 0, "stderr: %s", err_text);
	cr_assert_str_eq(out_text, new_report, "--plot changes nothing in the text");
	cr_assert_gt(file_size("out.svg", head, sizeof(head)), 1000);
	cr_assert(strstr(head, "<svg"), "not SVG:\n%s", head);
	expect_no_leftovers(tmp);

	cr_assert_eq(REPORT("--plot=out.PNG", "old.json"), 1);
	cr_assert_str_eq(err_text, "bufsel: report: old.json: No such file or directory\n");
	write_text("old.json", old_stats);
	cr_assert_eq(REPORT("--plot=out.PNG", "old.json"), 0, "stderr: %s", err_text);
	cr_assert_gt(file_size("out.PNG", head, sizeof(head)), 1000);
	cr_assert_eq(memcmp(head, "\x89PNG\r\n\x1a\n", 8), 0, "not PNG");
	expect_no_leftovers(tmp);

	/* An existing picture is replaced, not appended to. */
	size_t before = file_size("out.svg", head, sizeof(head));
	cr_assert_eq(REPORT("--plot", "out.svg", "new.json"), 0, "stderr: %s", err_text);
	cr_assert_eq(file_size("out.svg", head, sizeof(head)), before);
}

Test(report, plot_problems)
{
	write_text("new.json", new_stats);
	/* Where the picture cannot go: the report is printed, the plot fails. */
	cr_assert_eq(REPORT("--plot", "no/such/dir/out.svg", "new.json"), 1);
	cr_assert_str_eq(out_text, new_report);
	cr_assert_str_eq(err_text, "bufsel: report: no/such/dir/out.svg: No such file or directory\n");

	write_text("empty.json", "{\"pid\":1,\"rings\":[]}");
	cr_assert_eq(REPORT("--plot", "out.svg", "empty.json"), 1);
	cr_assert_str_eq(err_text, "bufsel: report: --plot: empty.json has no buffer groups to draw\n");

	/* No gnuplot on PATH: one line saying what to install. */
	cr_assert_eq(mkdir("bin", 0755), 0);
	char bin[128];
	snprintf(bin, sizeof(bin), "%s/bin", dir);
	setenv("PATH", bin, 1);
	cr_assert_eq(REPORT("--plot", "out.svg", "new.json"), 1);
	cr_assert_str_eq(err_text, "bufsel: report --plot needs gnuplot (apt-get install gnuplot-nox)\n");
	cr_assert_eq(access("out.svg", F_OK), -1, "a picture without gnuplot");

	/* A gnuplot that fails, and one that writes nothing. */
	write_text("bin/gnuplot", "#!/bin/sh\nexit 3\n");
	cr_assert_eq(chmod("bin/gnuplot", 0755), 0);
	cr_assert_eq(REPORT("--plot", "out.svg", "new.json"), 1);
	cr_assert_str_eq(err_text, "bufsel: report: --plot: gnuplot failed (exit status 3)\n");
	write_text("bin/gnuplot", "#!/bin/sh\nexit 0\n");
	cr_assert_eq(REPORT("--plot", "out.svg", "new.json"), 1);
	cr_assert_str_eq(err_text, "bufsel: report: --plot: gnuplot exited without writing a picture\n");
	cr_assert_eq(access("out.svg", F_OK), -1, "an empty picture");
}
