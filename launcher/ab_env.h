/*
 * The environment each arm of `bufsel ab` runs PROGRAM in: the caller's,
 * without bufsel for the native arm, with the library preloaded and the
 * arm's BUFSEL_* settings for the others.
 */
#ifndef BUFSEL_LAUNCHER_AB_ENV_H
#define BUFSEL_LAUNCHER_AB_ENV_H

#include "launcher/ab_state.h"

char *ab_preload_with_bufsel(void);
/* Fills a->envp; bufsel_preload is ab_preload_with_bufsel()'s, unused for the native arm. */
void ab_build_env(struct arm *a, const char *bufsel_preload);
/* Loads the configuration a bufsel arm's library will load; exits with status 1 when it is bad. */
void ab_check_conf(const struct arm *a);

#endif
