/*
 * The measures (ab_measures.h).  A ratio is taken pair by pair, round i of
 * an arm over round i of native, rather than median over median, so that
 * what changed between rounds on a shared machine falls on both sides of
 * each ratio.  Missing values (a metric a run did not report) are NaN and
 * left out of every figure.
 */
#define _GNU_SOURCE
#include "launcher/ab_measures.h"

#include "launcher/ab_messages.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *const ab_builtin_names[M_BUILTIN] = { "wall_s", "user_s", "sys_s", "cpu_s", "maxrss_kib" };
/* Compared pair by pair; user_s and sys_s are in cpu_s. */
const bool ab_builtin_ratio[M_BUILTIN] = { true, false, false, true, true };

/*
 * A metric is a rate, higher is better, when its name ends in one of these;
 * everything else (times, latencies, CPU, bytes) is better lower.
 */
static const char *const higher_suffixes[] = { "_per_s", "_per_sec", "_per_second", "bps", "iops", "qps",
					       "rps", "tps", "throughput" };

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Of the finite values among v[0..n-1]; n 0 when there is none. */
struct spread ab_spread_of(const double *v, unsigned n)
{
	struct spread s = { 0, NAN, NAN, NAN };
	double *x = ab_xcalloc(n, sizeof(double));
	for (unsigned i = 0; i < n; i++)
		if (isfinite(v[i]))
			x[s.n++] = v[i];
	if (s.n) {
		qsort(x, s.n, sizeof(double), cmp_double);
		s.min = x[0];
		s.max = x[s.n - 1];
		s.median = s.n % 2 ? x[s.n / 2] : (x[s.n / 2 - 1] + x[s.n / 2]) / 2;
	}
	free(x);
	return s;
}

struct spread ab_measure_spread(const struct arm *a, unsigned m)
{
	double *v = ab_xcalloc(ab.runs, sizeof(double));
	for (unsigned i = 0; i < a->done; i++)
		v[i] = a->runs[i].v[m];
	struct spread s = ab_spread_of(v, a->done);
	free(v);
	return s;
}

/* ratios[i]: round i of a over round i of native; NaN where either lacks the measure or native is 0. */
void ab_pair_ratios(const struct arm *a, unsigned m, double *ratios)
{
	for (unsigned i = 0; i < ab.runs; i++) {
		ratios[i] = NAN;
		if (i < a->done && i < ab.native->done) {
			double x = a->runs[i].v[m], y = ab.native->runs[i].v[m];
			if (isfinite(x) && isfinite(y) && y != 0)
				ratios[i] = x / y;
		}
	}
}

bool ab_higher_is_better(unsigned m)
{
	if (m < M_BUILTIN || m >= ab.nmeasures)
		return false;
	const char *name = ab.measure[m];
	size_t n = strlen(name);
	for (size_t i = 0; i < sizeof(higher_suffixes) / sizeof(higher_suffixes[0]); i++) {
		size_t k = strlen(higher_suffixes[i]);
		if (n >= k && !strcmp(name + n - k, higher_suffixes[i]))
			return true;
	}
	return false;
}

bool ab_reported(const struct arm *a, unsigned m)
{
	for (unsigned i = 0; i < a->done; i++)
		if (isfinite(a->runs[i].v[m]))
			return true;
	return false;
}

bool ab_compared(unsigned m)
{
	return m >= M_BUILTIN || ab_builtin_ratio[m];
}

struct spread ab_noise(unsigned m)
{
	struct spread none = { 0, NAN, NAN, NAN };
	if (!ab.aa || !ab.native || ab.aa->failed)
		return none;
	double *r = ab_xcalloc(ab.runs, sizeof(double));
	ab_pair_ratios(ab.aa, m, r);
	struct spread s = ab_spread_of(r, ab.runs);
	free(r);
	return s;
}

const char *ab_against_noise(unsigned m, double median, struct spread noise)
{
	if (!noise.n || !isfinite(median))
		return NULL;
	/* Native against itself spans min..max: a ratio inside that span is
	 * what this run cannot tell from 1. */
	if (median >= noise.min && median <= noise.max)
		return "within noise";
	return (median > noise.max) == ab_higher_is_better(m) ? "better" : "worse";
}
