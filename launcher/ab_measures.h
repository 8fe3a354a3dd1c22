/*
 * The measures of `bufsel ab`: those every run has, then the program's own
 * metrics; which way each is better; and the figures the report and the
 * JSON give of them, over an arm's runs and as ratios to native round by
 * round.
 */
#ifndef BUFSEL_LAUNCHER_AB_MEASURES_H
#define BUFSEL_LAUNCHER_AB_MEASURES_H

#include "launcher/ab_state.h"

#include <stdbool.h>

/* The measures every run has; the program's metrics follow them. */
enum { M_WALL, M_USER, M_SYS, M_CPU, M_RSS, M_BUILTIN };
extern const char *const ab_builtin_names[M_BUILTIN];
extern const bool ab_builtin_ratio[M_BUILTIN];

struct spread {
	unsigned n;
	double median, min, max;
};

struct spread ab_spread_of(const double *v, unsigned n);
/* Of measure m over the runs arm a has done. */
struct spread ab_measure_spread(const struct arm *a, unsigned m);
void ab_pair_ratios(const struct arm *a, unsigned m, double *ratios);
bool ab_higher_is_better(unsigned m);
/* Whether any of a's runs has measure m. */
bool ab_reported(const struct arm *a, unsigned m);
/* Whether measure m gets a ratio to native. */
bool ab_compared(unsigned m);
/* The run's noise floor for measure m: the native2 arm's pair ratios to
 * native (n 0 without that arm, or when it has no such pair). */
struct spread ab_noise(unsigned m);
/* Where a median ratio of measure m lies against that floor (noise, from
 * ab_noise): "better" or "worse" beyond its range, else "within noise";
 * NULL without a floor. */
const char *ab_against_noise(unsigned m, double median, struct spread noise);

#endif
