/*
 * Buffer-pool statistics: at exit, and on SIGUSR2, to stderr ("-") or to a
 * file (BUFSEL_STATS).  The file is the host's business only as far as the
 * user asked: it is written to a fresh temporary file beside it (created
 * O_EXCL|O_NOFOLLOW, mode 0600) and renamed over it, so a reader never sees
 * half of it; an existing target that is not a regular file (a symbolic
 * link, a FIFO, a device, a directory) is refused, so nothing is followed
 * and nothing blocks; the file-size limit is kept to by bufsel itself and
 * SIGXFSZ is blocked around the writes, so no signal reaches the host; any
 * failure is one "bufsel:" line, and the host's exit status and output are
 * left alone.
 */
#define _GNU_SOURCE
#include "preload/stats.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "pool/pool.h"
#include "preload/heap.h"
#include "preload/intercept/real.h"
#include "preload/intercept/signals.h"
#include "preload/log.h"
#include "preload/shadow/ring.h"
#include "preload/stats_closed.h"
#include "preload/sys.h"

/* Where the report goes, and the first write error (a file's only). */
static __thread struct out {
	int fd;
	int err;		/* -errno of the first failed write; 0 */
	unsigned long long off, limit;	/* bytes written; RLIMIT_FSIZE (~0: none) */
} out;

static void put(int fd, const char *s, size_t n)
{
	(void)fd;
	while (n && !out.err) {
		/* Past the file-size limit the kernel would raise SIGXFSZ: stop first. */
		size_t room = n;
		if (out.limit != ~0ULL) {
			if (out.off >= out.limit) {
				out.err = -EFBIG;
				return;
			}
			if (room > out.limit - out.off)
				room = (size_t)(out.limit - out.off);
		}
		long w = sys_write(out.fd, s, room);
		if (w == -EINTR)
			continue;
		if (w <= 0) {
			if (out.fd != 2)
				out.err = w < 0 ? (int)w : -EIO;
			return;
		}
		s += w;
		n -= (size_t)w;
		out.off += (unsigned long long)w;
	}
}

/* On stderr every line is bufsel's: each gets the prefix. */
static void put_text(int fd, const char *s, size_t n)
{
	if (!stats_to_stderr()) {
		put(fd, s, n);
		return;
	}
	while (n) {
		const char *nl = memchr(s, '\n', n);
		size_t len = nl ? (size_t)(nl - s) + 1 : n;
		put(fd, "bufsel: ", 8);
		put(fd, s, len);
		s += len;
		n -= len;
	}
}

/* One live ring, piece by piece through a fixed buffer: no allocation, so
 * the SIGUSR2 path can use it too. */
static void put_live(int fd, struct ring *r, int *first)
{
	char buf[POOL_STATS_PIECE_MAX];
	struct pool_stats_cursor cur = { 0 };
	ssize_t n;
	if (!stats_ours(r))
		return;
	if (!stats_take(&r->x->pool_lock))
		return;
	if (!stats_to_stderr() && !*first)
		put(fd, ",\n", 2);
	*first = 0;
	while ((n = stats_to_stderr() ? pool_stats_table_next(r->x->pool, &cur, buf, sizeof(buf))
				: pool_stats_json_next(r->x->pool, r->serial, &cur, buf, sizeof(buf))) > 0)
		put_text(fd, buf, (size_t)n);
	spin_unlock(&r->x->pool_lock);
}

static void has_pool(int fd, struct ring *r, int *any)
{
	(void)fd;
	*any |= stats_ours(r);
}

/* "%p" in the path becomes the process id, so processes can keep apart. */
static void expand_path(char *out, size_t len)
{
	size_t o = 0;
	for (const char *p = bufsel.conf.stats; *p && o + 1 < len; p++) {
		if (p[0] == '%' && p[1] == 'p') {
			int n = snprintf(out + o, len - o, "%ld", sys_call3(SYS_getpid, 0, 0, 0));
			o += n > 0 ? (size_t)n : 0;
			p++;
		} else {
			out[o++] = *p;
		}
	}
	out[o < len ? o : len - 1] = '\0';
}

/* Copies s for a message: control bytes and '\\' become \\xNN, so a path
 * cannot carry terminal escapes or break the line. */
static void escape(char *dst, size_t len, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;
	for (; *s && o + 5 < len; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch < 0x20 || ch == 0x7f || ch == '\\') {
			dst[o++] = '\\';
			dst[o++] = 'x';
			dst[o++] = hex[ch >> 4];
			dst[o++] = hex[ch & 15];
		} else {
			dst[o++] = (char)ch;
		}
	}
	if (*s && o + 3 < len)
		dst[o++] = '.', dst[o++] = '.', dst[o++] = '.';
	dst[o] = '\0';
}

static void report(const char *path, const char *what, int err)
{
	char q[512];	/* a message, not the path: a long one is cut with "..." */
	escape(q, sizeof(q), path);
	log_warn("stats: %s: %s%s%s; no statistics written", q, what, err ? ": " : "",
		 err ? log_errname(err) : "");
}

/* tmp: the same directory as path, ".NAME.bufsel-PID-N", a name nobody else picks. */
static int tmp_name(const char *path, char *tmp, size_t len, unsigned n)
{
	const char *slash = strrchr(path, '/');
	size_t dirlen = slash ? (size_t)(slash - path) + 1 : 0;
	int w = snprintf(tmp, len, "%.*s.%s.bufsel-%ld-%u", (int)dirlen, path, slash ? slash + 1 : path,
			 sys_call3(SYS_getpid, 0, 0, 0), n);
	return w < 0 || (size_t)w >= len ? -ENAMETOOLONG : 0;
}

/* The report's text: the JSON document, or on stderr the tables. */
static void put_report(int fd)
{
	char head[96];
	int first = 1;
	if (stats_to_stderr()) {
		put(fd, "bufsel: buffer pools\n", 21);
	} else {
		int n = snprintf(head, sizeof(head), "{\"pid\":%ld,\"rings\":[\n",
				 sys_call3(SYS_getpid, 0, 0, 0));
		put(fd, head, (size_t)n);
	}
	if (stats_closed_lock()) {
		for (const struct stats_closed_ring *c = stats_closed_head(); c; c = c->next) {
			if (!stats_to_stderr() && !first)
				put(fd, ",\n", 2);
			first = 0;
			put_text(fd, c->text, c->len);
		}
		stats_closed_unlock();
	}
	ring_for_each_live(put_live, fd, &first);
	if (!stats_to_stderr())
		put(fd, "\n]}\n", 4);
}

static unsigned long long fsize_limit(void)
{
	struct rlimit rl;
	if (sys_call6(SYS_prlimit64, 0, RLIMIT_FSIZE, 0, (long)&rl, 0, 0) || rl.rlim_cur == RLIM_INFINITY)
		return ~0ULL;
	return rl.rlim_cur;
}

static int sigxfsz_pending(void)
{
	sigset_t set;
	sigemptyset(&set);
	sys_call3(SYS_rt_sigpending, (long)&set, 8, 0);
	return sigismember(&set, SIGXFSZ);
}

/* Writes the report to path through a temporary file and a rename, or says why not. */
static void write_file(const char *path)
{
	char tmp[CONF_PATH_MAX + 96];
	struct stat st;
	sigset_t xfsz, old;
	int fd = -1;

	/* lstat: an existing target must be a regular file; a link is not followed. */
	long r = sys_call6(SYS_newfstatat, AT_FDCWD, (long)path, (long)&st, AT_SYMLINK_NOFOLLOW, 0, 0);
	if (!r && !S_ISREG(st.st_mode)) {
		report(path, S_ISLNK(st.st_mode) ? "a symbolic link, not followed"
						 : "not a regular file", 0);
		return;
	}
	if (r && r != -ENOENT) {
		report(path, "cannot look at it", (int)r);
		return;
	}
	for (unsigned n = 0; n < 100 && fd < 0; n++) {
		if ((r = tmp_name(path, tmp, sizeof(tmp), n))) {
			report(path, "cannot name a temporary file beside it", (int)r);
			return;
		}
		fd = (int)sys_call6(SYS_openat, AT_FDCWD, (long)tmp,
				    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600, 0, 0);
		if (fd < 0 && fd != -EEXIST) {
			report(path, "cannot create a temporary file beside it", fd);
			return;
		}
	}
	if (fd < 0) {
		report(path, "cannot create a temporary file beside it", fd);
		return;
	}

	/* No SIGXFSZ for the host: the limit is kept to by put(); blocked too,
	 * for a limit lowered meanwhile, and one raised here is taken back. */
	sigemptyset(&xfsz);
	sigaddset(&xfsz, SIGXFSZ);
	int was_pending = sigxfsz_pending();
	sys_call6(SYS_rt_sigprocmask, SIG_BLOCK, (long)&xfsz, (long)&old, 8, 0, 0);
	out.fd = fd;
	out.err = 0;
	out.off = 0;
	out.limit = fsize_limit();
	put_report(fd);
	if (!was_pending && sigxfsz_pending()) {
		struct timespec zero = { 0, 0 };
		sys_call6(SYS_rt_sigtimedwait, (long)&xfsz, 0, (long)&zero, 8, 0, 0);
	}
	sys_call6(SYS_rt_sigprocmask, SIG_SETMASK, (long)&old, 0, 8, 0, 0);

	int err = out.err;
	long c = sys_close(fd);
	if (!err && c && c != -EINTR)
		err = (int)c;
	if (!err && (r = sys_call3(SYS_rename, (long)tmp, (long)path, 0)))
		err = (int)r;
	if (err) {
		sys_call3(SYS_unlink, (long)tmp, 0, 0);
		report(path, "cannot write", err);
	}
}

static void write_all(void)
{
	int any = stats_closed_head() != NULL;
	char path[CONF_PATH_MAX + 32];
	ring_for_each_live(has_pool, 0, &any);
	if (!any)
		return;		/* no buffer group in this process: nothing to say */
	if (stats_to_stderr()) {
		out.fd = 2;
		out.err = 0;
		out.off = 0;
		out.limit = ~0ULL;	/* stderr is the host's: written as before, errors ignored */
		put_report(2);
		return;
	}
	expand_path(path, sizeof(path));
	write_file(path);
}

void stats_write(void)
{
	if (stats_wanted())
		write_all();
}

static void on_sigusr2(int sig)
{
	(void)sig;
	struct out saved = out;	/* the exit report this signal may have interrupted */
	stats_set_in_signal(1);
	write_all();
	stats_set_in_signal(0);
	out = saved;
}

void stats_init(void)
{
	struct sigaction cur, sa;
	if (!stats_wanted() || real_sigaction_call(SIGUSR2, NULL, &cur) || cur.sa_handler != SIG_DFL)
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigusr2;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	real_sigaction_call(SIGUSR2, &sa, NULL);
}
