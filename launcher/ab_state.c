/*
 * The state of `bufsel ab` (ab_state.h), defined in a file of its own so
 * that every other ab_*.c file depends on it and it on none of them.
 */
#include "launcher/ab_state.h"

struct ab_state ab;
