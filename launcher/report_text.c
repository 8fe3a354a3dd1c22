/*
 * The report as text (report_text.h).  Numbers are formatted here from
 * integers, never through a double, so that the output is exact; a file
 * from an older bufsel gets a note naming what it lacks and what stands in.
 */
#include "launcher/report_text.h"

#include "launcher/report_advice.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static char *fmt_u128(char buf[40], u128 v)
{
	char t[40];
	size_t n = 0;
	do {
		t[n++] = (char)('0' + (unsigned)(v % 10));
		v /= 10;
	} while (v);
	for (size_t i = 0; i < n; i++)
		buf[i] = t[n - 1 - i];
	buf[n] = '\0';
	return buf;
}

/* v / 10^decimals in decimal, trailing zeros of the fraction dropped ("25", "12.5"). */
static char *fmt_scaled(char buf[48], u128 v, unsigned decimals)
{
	u128 scale = 1;
	for (unsigned i = 0; i < decimals; i++)
		scale *= 10;
	fmt_u128(buf, v / scale);
	u128 frac = v % scale;
	if (frac) {
		size_t n = strlen(buf);
		buf[n++] = '.';
		for (unsigned i = 0; i < decimals && frac; i++) {
			scale /= 10;
			buf[n++] = (char)('0' + (unsigned)(frac / scale));
			frac %= scale;
		}
		buf[n] = '\0';
	}
	return buf;
}

/* "29 B" below 1 KiB; else "1.5 KiB (1536 B)" or "3.0 MiB (3145728 B)", rounded to a tenth. */
static char *fmt_bytes(char buf[96], u128 v)
{
	char exact[40], whole[40];
	fmt_u128(exact, v);
	if (v < 1024) {
		snprintf(buf, 96, "%s B", exact);
		return buf;
	}
	unsigned shift = v < (u128)1 << 20 ? 10 : 20;
	u128 tenths = (v * 10 + ((u128)1 << (shift - 1))) >> shift;
	snprintf(buf, 96, "%s.%u %s (%s B)", fmt_u128(whole, tenths / 10), (unsigned)(tenths % 10),
		 shift == 10 ? "KiB" : "MiB", exact);
	return buf;
}

enum { COL_RING, COL_BGID, COL_BUFFERS, COL_BUF_LEN, COL_PEAK_OUT, COL_SELECTED, COL_ENOBUFS, COL_P50, COL_P99,
       NCOLS };

static const char *const titles[NCOLS] = { "ring",     "bgid",		 "buffers",   "buf_len",  "peak out",
					   "selected", "-ENOBUFS e/c/i", "bytes p50", "bytes p99" };

typedef char cell[72];	/* the longest: three 20-digit counters and two '/' */

static void fill_row(cell *c, const struct group_row *g)
{
	snprintf(c[COL_RING], sizeof(cell), "%" PRIu64, g->ring);
	snprintf(c[COL_BGID], sizeof(cell), "%" PRIu64, g->bgid);
	snprintf(c[COL_BUFFERS], sizeof(cell), "%" PRIu64, g->peak_size);
	if (g->has_buf_len)
		snprintf(c[COL_BUF_LEN], sizeof(cell), "%" PRIu64, g->buf_len);
	else
		snprintf(c[COL_BUF_LEN], sizeof(cell), "?");
	snprintf(c[COL_PEAK_OUT], sizeof(cell), "%" PRIu64, g->peak_out);
	snprintf(c[COL_SELECTED], sizeof(cell), "%" PRIu64, g->selected);
	snprintf(c[COL_ENOBUFS], sizeof(cell), "%" PRIu64 "/%" PRIu64 "/%" PRIu64, g->empty, g->capped,
		 g->injected);
	int p50 = report_percentile_bucket(g->bytes, 50ull * MICRO), p99 = report_percentile_bucket(g->bytes, 99ull * MICRO);
	if (p50 < 0)
		snprintf(c[COL_P50], sizeof(cell), "-");
	else
		snprintf(c[COL_P50], sizeof(cell), "%" PRIu64, report_bucket_hi((unsigned)p50));
	if (p99 < 0)
		snprintf(c[COL_P99], sizeof(cell), "-");
	else
		snprintf(c[COL_P99], sizeof(cell), "%" PRIu64, report_bucket_hi((unsigned)p99));
}

static void print_cells(FILE *out, const cell *c, const size_t *width)
{
	for (int i = 0; i < NCOLS; i++)
		fprintf(out, "%s%*s", i ? "  " : "", (int)width[i], c[i]);
	fputc('\n', out);
}

static void print_table(FILE *out, const struct stats *st)
{
	size_t width[NCOLS];
	cell *rows = calloc(st->ngroups + 1, sizeof(cell) * NCOLS);
	cell head[NCOLS];
	for (int i = 0; i < NCOLS; i++) {
		snprintf(head[i], sizeof(cell), "%s", titles[i]);
		width[i] = strlen(titles[i]);
	}
	if (rows)
		for (size_t g = 0; g < st->ngroups; g++) {
			fill_row(rows + g * NCOLS, &st->groups[g]);
			for (int i = 0; i < NCOLS; i++)
				if (strlen(rows[g * NCOLS + i]) > width[i])
					width[i] = strlen(rows[g * NCOLS + i]);
		}
	print_cells(out, head, width);
	for (size_t g = 0; g < st->ngroups; g++) {
		cell one[NCOLS];
		if (rows) {
			print_cells(out, rows + g * NCOLS, width);
		} else {
			/* Out of memory for the whole table: each row in its own widths. */
			fill_row(one, &st->groups[g]);
			print_cells(out, one, width);
		}
	}
	free(rows);
}

static void print_legend(FILE *out, const struct stats *st)
{
	fputs("\n"
	      "buffers: the most the group had; buf_len: its longest buffer, in bytes;\n"
	      "peak out: the most buffers in use or held by the program at once;\n"
	      "-ENOBUFS e/c/i: selections refused because the group was empty / at its cap / by injection;\n"
	      "bytes p50, p99: the upper bound of the power-of-two bucket holding that percentile\n"
	      "of the bytes delivered in a buffer ('-': none recorded).\n",
	      out);
	bool no_len = false, no_size = false, no_out = false;
	for (size_t g = 0; g < st->ngroups; g++) {
		no_len |= !st->groups[g].has_buf_len;
		no_size |= !st->groups[g].has_peak_size;
		no_out |= !st->groups[g].has_peak_out;
	}
	if (no_len || no_size || no_out) {
		fputs("note: groups without", out);
		const char *sep = " ";
		if (no_size) {
			fprintf(out, "%speak_size", sep);
			sep = ", ";
		}
		if (no_out) {
			fprintf(out, "%speak_out", sep);
			sep = ", ";
		}
		if (no_len)
			fprintf(out, "%sbuf_len", sep);
		fputs(" (a file from an older bufsel):", out);
		sep = " ";
		if (no_size) {
			fprintf(out, "%sbuffers is the number provided", sep);
			sep = "; ";
		}
		if (no_out) {
			fprintf(out, "%speak out counts only buffers in use, not those the program held", sep);
			sep = "; ";
		}
		if (no_len)
			fprintf(out, "%sbuf_len is '?' and memory is not estimated", sep);
		fputs(".\n", out);
	}
	for (size_t r = 0; r < st->nrings; r++)
		if (st->rings[r].strays)
			fprintf(out,
				"warning: ring %" PRIu64 ": %" PRIu64 " strays (put-backs or deliveries that matched no "
				"buffer: a bufsel bug; the counts may be off)\n",
				st->rings[r].index, st->rings[r].strays);
}

static void print_advice(FILE *out, const struct stats *st, const struct options *o)
{
	char margin[48], factor[48], pct[48], n[40], len[40], now[40], bytes[96];
	fmt_scaled(margin, o->margin, 6);
	fmt_scaled(factor, (u128)100 * MICRO + o->margin, 8);
	fmt_scaled(pct, o->percentile, 6);
	fprintf(out,
		"\n"
		"recommendation (margin %s%%, percentile %s):\n"
		"count = ceil(peak out x %s), at least 1; length = bytes p%s, at most buf_len, at least 1\n"
		"(buf_len when no bytes were recorded); saves = buffers x buf_len - count x length.\n",
		margin, pct, factor, pct);
	for (size_t i = 0; i < st->ngroups; i++)
		if (st->groups[i].ring_entries) {
			fputs("A buffer ring's count is the power of two at or above it (at most 32768).\n", out);
			break;
		}
	u128 saved = 0, added = 0;
	size_t known = 0;
	for (size_t i = 0; i < st->ngroups; i++) {
		const struct group_row *g = &st->groups[i];
		struct advice a;
		report_advise(g, o, &a);
		fmt_u128(n, a.count);
		if (a.length_known)
			fmt_u128(len, a.length);
		else
			snprintf(len, sizeof(len), "?");
		if (g->has_buf_len)
			fmt_u128(now, g->buf_len);
		else
			snprintf(now, sizeof(now), "?");
		if (g->ring_entries)
			fprintf(out, "  ring %" PRIu64 " bgid %" PRIu64 ": a buffer ring of %s entr%s, buffers of %s bytes%s, now %" PRIu64 " entries, %" PRIu64 " buffers of %s: ",
				g->ring, g->bgid, n, a.count == 1 ? "y" : "ies", len,
				a.no_bytes ? " (no bytes recorded)" : "", g->ring_entries, g->peak_size, now);
		else
			fprintf(out, "  ring %" PRIu64 " bgid %" PRIu64 ": %s buffer%s of %s bytes%s, now %" PRIu64 " of %s: ",
				g->ring, g->bgid, n, a.count == 1 ? "" : "s", len,
				a.no_bytes ? " (no bytes recorded)" : "", g->peak_size, now);
		if (!a.memory_known) {
			fputs("memory not estimated (no buf_len)\n", out);
			continue;
		}
		known++;
		fmt_bytes(bytes, a.difference);
		if (a.saves) {
			saved += a.difference;
			fprintf(out, "saves %s\n", bytes);
		} else {
			added += a.difference;
			fprintf(out, "needs %s more\n", bytes);
		}
	}
	if (!known) {
		fputs("total: memory not estimated (no buf_len in the file)\n", out);
		return;
	}
	fmt_bytes(bytes, saved >= added ? saved - added : added - saved);
	fprintf(out, "total: %s %s%s", saved >= added ? "saves" : "needs", bytes, saved >= added ? "" : " more");
	if (known < st->ngroups)
		fprintf(out, " over %zu of %zu groups (the others have no buf_len)", known, st->ngroups);
	fputc('\n', out);
}

void report_print(FILE *out, const struct stats *st, const struct options *o)
{
	fprintf(out, "bufsel report: %s", o->file);
	if (st->has_pid)
		fprintf(out, " (pid %" PRIu64 ")", st->pid);
	fprintf(out, ": %zu ring%s, %zu buffer group%s\n", st->nrings, st->nrings == 1 ? "" : "s", st->ngroups,
		st->ngroups == 1 ? "" : "s");
	if (!st->ngroups) {
		fputs("no legacy buffer groups: nothing to recommend\n", out);
		return;
	}
	fputc('\n', out);
	print_table(out, st);
	print_legend(out, st);
	print_advice(out, st, o);
}
