#ifndef BUFSEL_PRELOAD_HOOKS_H
#define BUFSEL_PRELOAD_HOOKS_H

void hooks_init(void);

#endif
