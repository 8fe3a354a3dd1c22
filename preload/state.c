/*
 * The definition of `bufsel`, the library's one struct of process-wide
 * state (state.h says what it holds).  It is a file of its own so that
 * every file that reads the state depends on this one and on nothing that
 * sets the state up: init.c fills it in, and the rest only read it or count
 * in it.
 */
#include "preload/state.h"

struct bufsel_state bufsel;
