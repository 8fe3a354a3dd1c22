/*
 * A fault inside bufsel's own code prints one backtrace marked as bufsel's,
 * then the default action proceeds, so a crash report says where to look.
 * Only installed over SIG_DFL: a program's own fault handlers are untouched,
 * and one it installs later simply replaces this.
 */
#ifndef BUFSEL_PRELOAD_CRASH_H
#define BUFSEL_PRELOAD_CRASH_H

#include <signal.h>

void crash_init(void);
/* Is this disposition bufsel's crash reporter?  (sigaction reports SIG_DFL.) */
int crash_is_ours(const void *handler);

#endif
