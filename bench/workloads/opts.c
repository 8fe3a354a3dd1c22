#include "bench/workloads/opts.h"
#include "bench/workloads/bench.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_meta[] = {
	[OPT_UINT] = "N",
	[OPT_DOUBLE] = "X",
	[OPT_STRING] = "S",
};

static void usage(FILE *f, const struct opt *t, unsigned n, const char *summary)
{
	fprintf(f, "usage: %s [options]\n%s\n\noptions:\n", bench_name(), summary);
	for (unsigned i = 0; i < n; i++) {
		char left[64];
		snprintf(left, sizeof(left), "--%s %s", t[i].name, kind_meta[t[i].kind]);
		char def[96] = "";
		if (t[i].kind == OPT_UINT)
			snprintf(def, sizeof(def), " (default %lu)", *(unsigned long *)t[i].dst);
		else if (t[i].kind == OPT_DOUBLE)
			snprintf(def, sizeof(def), " (default %g)", *(double *)t[i].dst);
		else if (*(const char **)t[i].dst)
			snprintf(def, sizeof(def), " (default %.80s)", *(const char **)t[i].dst);
		/* A default that depends on other options is in the help text already. */
		fprintf(f, "  %-22s %s%s\n", left, t[i].help, strstr(t[i].help, "default") ? "" : def);
	}
}

__attribute__((noreturn, format(printf, 1, 2))) static void bad(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s: ", bench_name());
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (--help lists the options)\n");
	exit(2);
}

static void set(struct opt *o, const char *v)
{
	char *end;
	errno = 0;
	if (o->kind == OPT_STRING) {
		*(const char **)o->dst = v;
	} else if (o->kind == OPT_UINT) {
		if (*v < '0' || *v > '9')
			bad("--%s: '%s' is not a non-negative integer", o->name, v);
		unsigned long x = strtoul(v, &end, 10);
		if (errno || *end || (double)x < o->min || (double)x > o->max)
			bad("--%s: '%s' is not an integer in %.0f..%.0f", o->name, v, o->min, o->max);
		*(unsigned long *)o->dst = x;
	} else {
		double x = strtod(v, &end);
		if (errno || end == v || *end || !isfinite(x) || x < o->min || x > o->max)
			bad("--%s: '%s' is not a number in %g..%g", o->name, v, o->min, o->max);
		*(double *)o->dst = x;
	}
	o->given = true;
}

void opts_parse(int argc, char **argv, struct opt *t, unsigned n, const char *summary)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout, t, n, summary);
			exit(0);
		}
		if (strncmp(a, "--", 2) != 0)
			bad("unexpected argument '%s'", a);
		a += 2;
		const char *eq = strchr(a, '=');
		size_t len = eq ? (size_t)(eq - a) : strlen(a);
		struct opt *o = NULL;
		for (unsigned k = 0; k < n && !o; k++)
			if (strlen(t[k].name) == len && !strncmp(t[k].name, a, len))
				o = &t[k];
		if (!o)
			bad("unknown option '%s'", argv[i]);
		if (eq) {
			set(o, eq + 1);
		} else {
			if (i + 1 >= argc)
				bad("--%s needs a value", o->name);
			set(o, argv[++i]);
		}
	}
}
