/*
 * The suite's state (state.h).  Defined apart from every file that writes
 * or reads it, so that none of them depends on another to reach it.
 */
#include "bench/suite/state.h"

struct suite suite_S;
