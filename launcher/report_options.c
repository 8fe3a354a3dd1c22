/*
 * The command line of `bufsel report` (report_options.h) and its --help.
 * It never exits: report_run() is also called by the unit tests, so a bad
 * command line and --help return the status for report_run() to return.
 */
#define _GNU_SOURCE
#include "launcher/report_options.h"

#include "launcher/report_plot.h"

#include <stdarg.h>
#include <stdbool.h>
#include <string.h>

#define DEFAULT_MARGIN (25ull * MICRO)
#define DEFAULT_PERCENTILE (99ull * MICRO)
#define MAX_MARGIN (10000ull * MICRO)
#define EXIT_BAD_USAGE 2

/*
 * A decimal "D[.D]" with at most 6 places, in millionths, at most max.
 * Exact: 12.5 is 12500000, never 12.4999.
 */
static int parse_micro(const char *s, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;
	size_t i = 0, digits = 0;
	for (; s[i] >= '0' && s[i] <= '9'; i++, digits++) {
		if (v > max / 10)
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (!digits || v > max / MICRO)
		return -1;
	v *= MICRO;
	if (s[i] == '.') {
		uint64_t scale = MICRO;
		i++;
		if (s[i] < '0' || s[i] > '9')
			return -1;
		for (; s[i] >= '0' && s[i] <= '9'; i++) {
			scale /= 10;
			if (!scale)
				return -1;
			v += (uint64_t)(s[i] - '0') * scale;
		}
	}
	if (s[i] || v > max)
		return -1;
	*out = v;
	return 0;
}

static void usage(FILE *out)
{
	fputs("Usage: bufsel report [--margin PCT] [--percentile P] [--plot OUT.svg|OUT.png] STATS.json\n"
	      "\n"
	      "Reads the statistics a program wrote under bufsel with BUFSEL_STATS=STATS.json\n"
	      "(docs/stats-schema.md) and prints a line per buffer group, then how many buffers\n"
	      "of what length each group needs and the memory that would save:\n"
	      "  count  = ceil(peak out x (1 + PCT/100)), at least 1, where peak out is the\n"
	      "           most buffers in use or held by the program at once;\n"
	      "  length = the upper bound of the power-of-two bucket holding the P-th\n"
	      "           percentile of the bytes delivered per buffer, at most the group's\n"
	      "           buffer length, at least 1 (that length when none were recorded).\n"
	      "\n"
	      "Options:\n"
	      "  --margin PCT      headroom over peak out, in percent (default 25; 0..10000)\n"
	      "  --percentile P    percentile of the bytes used (default 99; above 0, at most 100)\n"
	      "  --plot OUT        draw the in-use and bytes-used histograms of every group with\n"
	      "                    gnuplot: SVG for a name ending in .svg, PNG for .png\n"
	      "  -h, --help        print this help and exit\n"
	      "\n"
	      "Exit status: 0; 1 when STATS.json cannot be read or is not a statistics file,\n"
	      "or the plot fails; 2 for a bad command line.\n",
	      out);
}

static int usage_error(FILE *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int usage_error(FILE *err, const char *fmt, ...)
{
	va_list ap;
	fputs("bufsel: report: ", err);
	va_start(ap, fmt);
	vfprintf(err, fmt, ap);
	va_end(ap);
	fputs(" (bufsel report --help)\n", err);
	return EXIT_BAD_USAGE;
}

/* Parses argv into *o: -1 to go on, else the exit status to return. */
int report_parse_args(int argc, char **argv, struct options *o, FILE *out, FILE *err)
{
	bool options_done = false;
	*o = (struct options){ .margin = DEFAULT_MARGIN, .percentile = DEFAULT_PERCENTILE };
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (options_done || a[0] != '-' || !a[1]) {
			if (o->file)
				return usage_error(err, "one statistics file, but '%s' follows '%s'", a, o->file);
			o->file = a;
			continue;
		}
		if (!strcmp(a, "--")) {
			options_done = true;
			continue;
		}
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(out);
			return 0;
		}
		const char *eq = strchr(a, '=');
		size_t klen = eq ? (size_t)(eq - a) : strlen(a);
		const char *names[] = { "--margin", "--percentile", "--plot" };
		int which = -1;
		for (int k = 0; k < 3; k++)
			if (strlen(names[k]) == klen && !strncmp(a, names[k], klen))
				which = k;
		if (which < 0)
			return usage_error(err, "unknown option '%.*s'", (int)klen, a);
		const char *val = eq ? eq + 1 : i + 1 < argc ? argv[++i] : NULL;
		if (!val || !*val)
			return usage_error(err, "%s needs a value", names[which]);
		if (which == 0 && parse_micro(val, MAX_MARGIN, &o->margin))
			return usage_error(err, "--margin: '%s' is not a percentage in 0..10000 (at most 6 decimals)",
					   val);
		if (which == 1 && (parse_micro(val, 100ull * MICRO, &o->percentile) || !o->percentile))
			return usage_error(err,
					   "--percentile: '%s' is not a number above 0 and at most 100 (at most 6 "
					   "decimals)",
					   val);
		if (which == 2) {
			if (!report_ends_with(val, ".svg") && !report_ends_with(val, ".png"))
				return usage_error(err, "--plot: '%s' should end in .svg or .png", val);
			o->plot = val;
		}
	}
	if (!o->file)
		return usage_error(err, "no statistics file given");
	return -1;
}
