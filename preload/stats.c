#define _GNU_SOURCE
#include "preload/stats.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#include "pool/pool.h"
#include "preload/log.h"
#include "preload/ring.h"
#include "preload/signals.h"
#include "preload/sys.h"

/* Rendered statistics of rings that are gone, oldest first. */
struct closed_ring {
	struct closed_ring *next;
	size_t len;
	char text[];
};

static struct {
	struct closed_ring *head, **tail;
	struct spin lock;
} closed = { NULL, &closed.head, { 0 } };

/* Set while the SIGUSR2 report runs: locks are tried, never waited for, and
 * a ring whose lock is held is left out of that report. */
static __thread int in_signal;

static int take(struct spin *l)
{
	if (!in_signal) {
		spin_lock(l);
		return 1;
	}
	return spin_trylock(l);
}

/* Rings made since the last fork (the ones this process reports); a forked
 * child's inherited pools are copies of its parent's, which reports them. */
static unsigned fork_gen;

void stats_after_fork(void)
{
	fork_gen++;
	closed.head = NULL;	/* the parent's, copied: it reports them */
	closed.tail = &closed.head;
	spin_unlock(&closed.lock);
}

unsigned stats_fork_gen(void)
{
	return fork_gen;
}

static int ours(const struct ring *r)
{
	return r->pool && r->fork_gen == fork_gen;
}

static int stats_wanted(void)
{
	return bufsel.conf.stats[0] != '\0';
}

static int to_stderr(void)
{
	return !strcmp(bufsel.conf.stats, "-");
}

void stats_ring_closed(struct ring *r)
{
	if (!stats_wanted() || !ours(r))
		return;
	/* What the ring would print: measure, then render into one block. */
	size_t n = to_stderr() ? pool_stats_table(r->pool, NULL, 0)
			       : pool_stats_json(r->pool, r->serial, NULL, 0);
	struct closed_ring *c = malloc(sizeof(*c) + n + 1);
	if (!c)
		return;
	c->next = NULL;
	c->len = to_stderr() ? pool_stats_table(r->pool, c->text, n + 1)
			     : pool_stats_json(r->pool, r->serial, c->text, n + 1);
	spin_lock(&closed.lock);
	*closed.tail = c;
	closed.tail = &c->next;
	spin_unlock(&closed.lock);
}

static void put(int fd, const char *s, size_t n)
{
	while (n) {
		long w = sys_write(fd, s, n);
		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}

/* On stderr every line is bufsel's: each gets the prefix. */
static void put_text(int fd, const char *s, size_t n)
{
	if (!to_stderr()) {
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
	if (!ours(r))
		return;
	if (!take(&r->pool_lock))
		return;
	if (!to_stderr() && !*first)
		put(fd, ",\n", 2);
	*first = 0;
	while ((n = to_stderr() ? pool_stats_table_next(r->pool, &cur, buf, sizeof(buf))
				: pool_stats_json_next(r->pool, r->serial, &cur, buf, sizeof(buf))) > 0)
		put_text(fd, buf, (size_t)n);
	spin_unlock(&r->pool_lock);
}

static void has_pool(int fd, struct ring *r, int *any)
{
	(void)fd;
	*any |= ours(r);
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

static void write_all(void)
{
	int fd = 2, any = closed.head != NULL;
	char path[CONF_PATH_MAX + 32];
	ring_for_each_live(has_pool, 0, &any);
	if (!any)
		return;		/* no buffer group in this process: nothing to say */
	if (!to_stderr()) {
		expand_path(path, sizeof(path));
		fd = (int)sys_call6(SYS_openat, AT_FDCWD, (long)path,
				    O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644, 0, 0);
		if (fd < 0) {
			log_warn("stats: cannot open %s: %s", path, strerror(-fd));
			return;
		}
	}
	char head[96];
	int first = 1;
	if (to_stderr()) {
		put(fd, "bufsel: buffer pools\n", 21);
	} else {
		int n = snprintf(head, sizeof(head), "{\"pid\":%ld,\"rings\":[\n",
				 sys_call3(SYS_getpid, 0, 0, 0));
		put(fd, head, (size_t)n);
	}
	if (take(&closed.lock)) {
		for (struct closed_ring *c = closed.head; c; c = c->next) {
			if (!to_stderr() && !first)
				put(fd, ",\n", 2);
			first = 0;
			put_text(fd, c->text, c->len);
		}
		spin_unlock(&closed.lock);
	}
	ring_for_each_live(put_live, fd, &first);
	if (!to_stderr()) {
		put(fd, "\n]}\n", 4);
		sys_close(fd);
	}
}

void stats_write(void)
{
	if (stats_wanted())
		write_all();
}

static void on_sigusr2(int sig)
{
	(void)sig;
	in_signal = 1;
	write_all();
	in_signal = 0;
}

void stats_init(void)
{
	struct sigaction cur, sa;
	if (!stats_wanted() || signals_real_sigaction(SIGUSR2, NULL, &cur) || cur.sa_handler != SIG_DFL)
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigusr2;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	signals_real_sigaction(SIGUSR2, &sa, NULL);
}
