/* bs_echo with its buffers in a buffer ring (bs_echo.c, ECHO_RING). */
#define ECHO_RING 1
#include "test/prog/bs_echo.c"
