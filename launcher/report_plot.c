/*
 * The plot (report_plot.h).  gnuplot is an optional tool, found on PATH
 * when --plot asks for it; its absence gives one line saying how to
 * install it.  Its output goes to stderr, never into the report.
 */
#define _GNU_SOURCE
#include "launcher/report_plot.h"

#include "launcher/report_advice.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <spawn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define GNUPLOT_MISSING "bufsel: report --plot needs gnuplot (apt-get install gnuplot-nox)"

/* A bucket as its range, "0", "1", "2-3", for the plot's axis. */
static void bucket_range(char buf[48], unsigned b)
{
	if (b <= 1)
		snprintf(buf, 48, "%u", b);
	else
		snprintf(buf, 48, "%" PRIu64 "-%" PRIu64, (uint64_t)1 << (b - 1), report_bucket_hi(b));
}

/*
 * gnuplot runs in a fresh directory of its own with relative names only, so
 * no path, however odd, is ever written into its script; the picture is
 * then copied to where the user asked.
 */
struct plot_dir {
	char path[4096];
	bool made;
};

static const char *const plot_files[] = { "in_use.dat", "bytes.dat", "plot.gp", "plot.svg", "plot.png" };

static void plot_dir_remove(struct plot_dir *pd)
{
	if (!pd->made)
		return;
	char f[4200];
	for (size_t i = 0; i < sizeof(plot_files) / sizeof(plot_files[0]); i++) {
		snprintf(f, sizeof(f), "%s/%s", pd->path, plot_files[i]);
		unlink(f);
	}
	rmdir(pd->path);
	pd->made = false;
}

static FILE *plot_open(const struct plot_dir *pd, const char *name)
{
	char f[4200];
	snprintf(f, sizeof(f), "%s/%s", pd->path, name);
	return fopen(f, "we");
}

/*
 * One histogram of every group as a data file: a row per bucket from the
 * lowest to the highest holding anything in any group, a column per group.
 * *max is the highest count, 0 when the histogram is empty everywhere.
 * Returns 0, or -1 on a write error.
 */
static int write_hist_data(FILE *f, const struct stats *st, bool bytes, uint64_t *max)
{
	int lo = -1, hi = -1;
	*max = 0;
	for (size_t g = 0; g < st->ngroups; g++) {
		const uint64_t *h = bytes ? st->groups[g].bytes : st->groups[g].in_use;
		for (int b = 0; b < HIST_BUCKETS; b++)
			if (h[b]) {
				if (lo < 0 || b < lo)
					lo = b;
				if (b > hi)
					hi = b;
				if (h[b] > *max)
					*max = h[b];
			}
	}
	if (lo < 0)
		lo = hi = bytes ? 0 : 1;	/* in use is at least 1 right after a selection */
	fputs("\"bucket\"", f);
	for (size_t g = 0; g < st->ngroups; g++)
		fprintf(f, " \"ring %" PRIu64 " bgid %" PRIu64 "\"", st->groups[g].ring, st->groups[g].bgid);
	fputc('\n', f);
	for (int b = lo; b <= hi; b++) {
		char range[48];
		bucket_range(range, (unsigned)b);
		fprintf(f, "\"%s\"", range);
		for (size_t g = 0; g < st->ngroups; g++)
			fprintf(f, " %" PRIu64, (bytes ? st->groups[g].bytes : st->groups[g].in_use)[b]);
		fputc('\n', f);
	}
	return ferror(f) ? -1 : 0;
}

static void script_panel(FILE *f, const char *data, const char *title, const char *xlabel, const char *ylabel,
			 uint64_t max, size_t ngroups)
{
	fprintf(f, "set title '%s%s'\n", title, max ? "" : " (no data)");
	fprintf(f, "set xlabel '%s'\nset ylabel '%s'\n", xlabel, ylabel);
	/* An all-zero histogram would leave gnuplot an empty y range to complain about. */
	if (max)
		fputs("set yrange [0:*]\n", f);
	else
		fputs("set yrange [0:1]\n", f);
	/* Counts are whole: small ones get a tic per count, not gnuplot's 0.5 steps. */
	fputs(max && max <= 10 ? "set ytics 1\n" : "set ytics autofreq\n", f);
	fprintf(f, "plot for [i=2:%zu] '%s' using i:xtic(1) title columnheader(i)\n", ngroups + 1, data);
}

static int write_script(FILE *f, const struct stats *st, bool svg, uint64_t max_in_use, uint64_t max_bytes)
{
	if (svg) {
		fputs("set terminal svg size 1000,1100 dynamic noenhanced font 'sans,11' background rgb 'white'\n"
		      "set output 'plot.svg'\n",
		      f);
	} else {
		/* pngcairo draws better, but a gnuplot built without cairo has only png. */
		fputs("if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
		      "    set terminal pngcairo size 1000,1100 noenhanced font 'sans,10' background rgb 'white'\n"
		      "} else {\n"
		      "    set terminal png size 1000,1100 noenhanced background rgb 'white'\n"
		      "}\n"
		      "set output 'plot.png'\n",
		      f);
	}
	fputs("set multiplot layout 2,1\n"
	      "set style data histograms\n"
	      "set style histogram clustered gap 1\n"
	      "set style fill solid 0.85 border -1\n"
	      "set key outside right top vertical noenhanced\n"
	      "set xtics nomirror rotate by 30 right\n"
	      "set ytics nomirror\n"
	      "set grid ytics\n",
	      f);
	script_panel(f, "in_use.dat", "Buffers in use right after each selection",
		     "buffers in use (power-of-two buckets)", "selections", max_in_use, st->ngroups);
	script_panel(f, "bytes.dat", "Bytes the program got per delivered buffer", "bytes (power-of-two buckets)",
		     "deliveries", max_bytes, st->ngroups);
	fputs("unset multiplot\n", f);
	return ferror(f) ? -1 : 0;
}

/* Runs gnuplot on plot.gp in dir: 0, or -1 with the problem on err. */
static int run_gnuplot(const char *dir, FILE *err)
{
	posix_spawn_file_actions_t fa;
	pid_t pid;
	char *argv[] = { "gnuplot", "plot.gp", NULL };
	if (posix_spawn_file_actions_init(&fa)) {
		fprintf(err, "bufsel: report: --plot: out of memory\n");
		return -1;
	}
	/* gnuplot's stdout is not the report's: anything it says goes to stderr. */
	int r = posix_spawn_file_actions_addchdir_np(&fa, dir);
	if (!r)
		r = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	if (!r)
		r = posix_spawn_file_actions_adddup2(&fa, 2, 1);
	if (!r)
		r = posix_spawnp(&pid, "gnuplot", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (r == ENOENT) {
		fprintf(err, "%s\n", GNUPLOT_MISSING);
		return -1;
	}
	if (r) {
		fprintf(err, "bufsel: report: --plot: cannot run gnuplot: %s\n", strerror(r));
		return -1;
	}
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			fprintf(err, "bufsel: report: --plot: waiting for gnuplot: %s\n", strerror(errno));
			return -1;
		}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (WIFEXITED(status))
		fprintf(err, "bufsel: report: --plot: gnuplot failed (exit status %d)\n", WEXITSTATUS(status));
	else
		fprintf(err, "bufsel: report: --plot: gnuplot killed by signal %d (%s)\n", WTERMSIG(status),
			strsignal(WTERMSIG(status)));
	return -1;
}

/* Copies the picture gnuplot made to the user's file, refusing an empty one. */
static int copy_plot(const struct plot_dir *pd, const char *name, const char *dest, FILE *err)
{
	char src[4200], buf[65536];
	snprintf(src, sizeof(src), "%s/%s", pd->path, name);
	int in = open(src, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (in < 0 || fstat(in, &st) || st.st_size <= 0) {
		fprintf(err, "bufsel: report: --plot: gnuplot exited without writing a picture\n");
		if (in >= 0)
			close(in);
		return -1;
	}
	int out = open(dest, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (out < 0) {
		fprintf(err, "bufsel: report: %s: %s\n", dest, strerror(errno));
		close(in);
		return -1;
	}
	int ret = 0;
	for (;;) {
		ssize_t n = read(in, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n < 0) {
				fprintf(err, "bufsel: report: --plot: reading %s: %s\n", src, strerror(errno));
				ret = -1;
			}
			break;
		}
		for (ssize_t done = 0; done < n;) {
			ssize_t w = write(out, buf + done, (size_t)(n - done));
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0) {
				fprintf(err, "bufsel: report: %s: %s\n", dest, strerror(errno));
				ret = -1;
				break;
			}
			done += w;
		}
		if (ret)
			break;
	}
	close(in);
	if (close(out) && !ret) {
		fprintf(err, "bufsel: report: %s: %s\n", dest, strerror(errno));
		ret = -1;
	}
	return ret;
}

bool report_ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n > k && !strcasecmp(s + n - k, suffix);
}

int report_plot(const struct stats *st, const struct options *o, FILE *err)
{
	bool svg = report_ends_with(o->plot, ".svg");
	if (!st->ngroups) {
		fprintf(err, "bufsel: report: --plot: %s has no buffer groups to draw\n", o->file);
		return -1;
	}
	struct plot_dir pd = { .made = false };
	const char *tmp = getenv("TMPDIR");
	if (!tmp || tmp[0] != '/')
		tmp = "/tmp";
	snprintf(pd.path, sizeof(pd.path), "%s/bufsel-report-XXXXXX", tmp);
	if (!mkdtemp(pd.path)) {
		fprintf(err, "bufsel: report: --plot: cannot make a directory in %s: %s\n", tmp, strerror(errno));
		return -1;
	}
	pd.made = true;
	int ret = -1;
	uint64_t max_in_use = 0, max_bytes = 0;
	errno = 0;
	FILE *f1 = plot_open(&pd, "in_use.dat"), *f2 = plot_open(&pd, "bytes.dat"), *f3 = plot_open(&pd, "plot.gp");
	bool ok = f1 && f2 && f3 && !write_hist_data(f1, st, false, &max_in_use) &&
		  !write_hist_data(f2, st, true, &max_bytes) && !write_script(f3, st, svg, max_in_use, max_bytes);
	int e = errno;
	/* A full disk may show only when the buffers are written out. */
	FILE *files[] = { f1, f2, f3 };
	for (int i = 0; i < 3; i++)
		if (files[i] && fclose(files[i]) && ok) {
			ok = false;
			e = errno;
		}
	if (!ok)
		fprintf(err, "bufsel: report: --plot: cannot write gnuplot's files in %s: %s\n", pd.path,
			e ? strerror(e) : "write error");
	else if (!run_gnuplot(pd.path, err))
		ret = copy_plot(&pd, svg ? "plot.svg" : "plot.png", o->plot, err);
	plot_dir_remove(&pd);
	return ret;
}
