/*
 * A program that hardens itself with prctl(PR_SET_MDWE,
 * PR_MDWE_REFUSE_EXEC_GAIN): from then on no mapping may be writable and
 * executable, nor become executable.  Its io_uring calls come from
 * liburing's inline system calls, which bufsel rewrites after their first
 * trap: that must need nothing MDWE refuses (bufsel used to make the page
 * RWX, ignore the refusal and fault on the write).  Then it runs itself
 * again: MDWE is inherited across fork and execve, so bufsel's own start-up
 * runs under it there.  Output and exit status as natively; not one
 * writable and executable mapping in /proc/self/maps at any point seen.
 *
 * With "nodump" it first makes itself non-dumpable, which (for a user
 * without CAP_DAC_OVERRIDE) closes /proc/self/mem to it: bufsel cannot
 * rewrite a site and must answer every call through the trap instead
 * (test/integration/security.c runs it so, as nobody).  No child then.
 */
#include "test/prog/sec_wx.h"

#include <sys/prctl.h>

#ifndef PR_SET_MDWE
#define PR_SET_MDWE 65
#define PR_GET_MDWE 66
#define PR_MDWE_REFUSE_EXEC_GAIN 1
#endif

int main(int argc, char **argv)
{
	bool child = argc > 1 && !strcmp(argv[1], "child");
	bool nodump = argc > 1 && !strcmp(argv[1], "nodump");
	if (nodump && prctl(PR_SET_DUMPABLE, 0, 0, 0, 0))
		die("PR_SET_DUMPABLE: %s", strerror(errno));
	if (!child && prctl(PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN, 0, 0, 0))
		die("PR_SET_MDWE: %s", strerror(errno));
	const char *who = child ? "child" : "parent";
	note("%s: MDWE flags %d", who, prctl(PR_GET_MDWE, 0, 0, 0, 0) & PR_MDWE_REFUSE_EXEC_GAIN);
	wx_note_exec_gain();
	note("%s: writable and executable mappings before io_uring: %d", who, wx_count());
	wx_uring_work(who);
	if (!child && !nodump)
		wx_run_child();
	return 0;
}
