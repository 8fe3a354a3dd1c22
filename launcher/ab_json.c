/*
 * The JSON of `bufsel ab` (ab_json.h), written with launcher/json_write.c.
 * A statistics file is copied into it as it is (it was checked when read);
 * a figure that does not exist (no run, no native arm) is null.
 */
#define _GNU_SOURCE
#include "launcher/ab_json.h"

#include "launcher/ab_measures.h"
#include "launcher/ab_messages.h"
#include "launcher/ab_pool_stats.h"
#include "launcher/ab_state.h"
#include "launcher/json_write.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static void json_run(struct json_writer *w, const struct run_result *r, unsigned round)
{
	jw_object_flat(w, NULL);
	jw_int(w, "round", round);
	jw_int(w, "position", r->position);
	jw_int(w, "seq", r->seq);
	for (unsigned m = 0; m < M_BUILTIN; m++)
		jw_number(w, ab_builtin_names[m], r->v[m]);
	jw_int(w, "exit_status", WIFEXITED(r->status) ? WEXITSTATUS(r->status) : -1);
	jw_object(w, "metrics");
	for (unsigned m = M_BUILTIN; m < ab.nmeasures; m++)
		if (isfinite(r->v[m]))
			jw_number(w, ab.measure[m], r->v[m]);
	jw_end(w);
	jw_end(w);
}

static void json_spread(struct json_writer *w, const char *key, struct spread s)
{
	jw_object_flat(w, key);
	jw_int(w, "n", s.n);
	jw_number(w, "median", s.median);
	jw_number(w, "min", s.min);
	jw_number(w, "max", s.max);
	jw_end(w);
}

static void json_summary(struct json_writer *w, const struct arm *a)
{
	jw_object(w, "summary");
	for (unsigned m = 0; m < M_BUILTIN; m++)
		json_spread(w, ab_builtin_names[m], ab_measure_spread(a, m));
	jw_object(w, "metrics");
	for (unsigned m = M_BUILTIN; m < ab.nmeasures; m++)
		if (ab_reported(a, m))
			json_spread(w, ab.measure[m], ab_measure_spread(a, m));
	jw_end(w);
	jw_end(w);
}

static void json_ratio_one(struct json_writer *w, const struct arm *a, unsigned m, double *r)
{
	ab_pair_ratios(a, m, r);
	struct spread s = ab_spread_of(r, ab.runs);
	jw_object(w, ab.measure[m]);
	jw_string(w, "better", ab_higher_is_better(m) ? "higher" : "lower");
	jw_array_flat(w, "ratios");
	for (unsigned i = 0; i < ab.runs; i++)
		jw_number(w, NULL, r[i]);
	jw_end(w);
	jw_int(w, "n", s.n);
	jw_number(w, "median", s.median);
	jw_number(w, "min", s.min);
	jw_number(w, "max", s.max);
	if (a != ab.aa) {
		/* The run's noise floor, as the text report shows it. */
		struct spread n = ab_noise(m);
		const char *verdict = s.n ? ab_against_noise(m, s.median, n) : NULL;
		jw_number(w, "aa_min", n.n ? n.min : NAN);
		jw_number(w, "aa_max", n.n ? n.max : NAN);
		if (verdict)
			jw_string(w, "against_noise", verdict);
		else
			jw_null(w, "against_noise");
	}
	jw_end(w);
}

static void json_ratio(struct json_writer *w, const struct arm *a)
{
	if (a == ab.native || !ab.native || a->failed) {
		jw_null(w, "ratio");
		return;
	}
	double *r = ab_xcalloc(ab.runs, sizeof(double));
	jw_object(w, "ratio");
	jw_int(w, "pairs", a->done < ab.native->done ? a->done : ab.native->done);
	for (unsigned m = 0; m < M_BUILTIN; m++)
		if (ab_builtin_ratio[m])
			json_ratio_one(w, a, m, r);
	jw_object(w, "metrics");
	for (unsigned m = M_BUILTIN; m < ab.nmeasures; m++)
		if (ab_reported(a, m) || ab_reported(ab.native, m))
			json_ratio_one(w, a, m, r);
	jw_end(w);
	jw_end(w);
	free(r);
}

static void json_pools(struct json_writer *w, const struct arm *a)
{
	if (!a->def->mode || a->failed || a->done < ab.runs) {
		jw_null(w, "pool_stats");
		return;
	}
	uint64_t total = 0;
	jw_object(w, "pool_stats");
	jw_int(w, "round", ab.runs);
	jw_array(w, "groups");
	for (size_t k = 0; k < a->ngroups; k++) {
		const struct group_summary *g = &a->groups[k];
		jw_object_flat(w, NULL);
		if (g->has_pid)
			jw_u64(w, "pid", g->pid);
		else
			jw_null(w, "pid");
		jw_u64(w, "ring", g->ring);
		jw_u64(w, "bgid", g->bgid);
		jw_u64(w, "buffers", g->buffers);
		jw_u64(w, "buf_len", g->buf_len);
		jw_u64(w, "peak_out", g->peak_out);
		jw_u64(w, "held_bytes", ab_held_bytes(g));
		jw_u64(w, "selected", g->selected);
		jw_u64(w, "enobufs", g->empty + g->capped + g->injected);
		jw_u64(w, "enobufs_empty", g->empty);
		jw_u64(w, "enobufs_capped", g->capped);
		jw_u64(w, "enobufs_injected", g->injected);
		jw_u64(w, "strays", g->strays);
		jw_end(w);
		total = ab_held_bytes(g) > UINT64_MAX - total ? UINT64_MAX : total + ab_held_bytes(g);
	}
	jw_end(w);
	jw_u64(w, "held_bytes", total);
	jw_array(w, "files");
	for (size_t i = 0; i < a->nfiles; i++) {
		const struct stats_file *f = &a->files[i];
		jw_object(w, NULL);
		jw_string(w, "file", f->name);
		if (f->text) {
			jw_null(w, "error");
			jw_raw(w, "stats", f->text, f->len);
		} else {
			jw_string(w, "error", f->error);
			jw_null(w, "stats");
		}
		jw_end(w);
	}
	jw_end(w);
	jw_end(w);
}

void ab_write_json(void)
{
	struct json_writer w;
	jw_init(&w, ab.json);
	jw_object(&w, NULL);
	jw_int(&w, "bufsel_ab", 1);
	jw_string(&w, "status", ab.status);
	if (ab.failed_arm) {
		jw_object(&w, "failure");
		jw_string(&w, "arm", ab.failed_arm->def->name);
		jw_string(&w, "where", ab.failed_arm->where);
		jw_string(&w, "reason", ab.failed_arm->reason);
		jw_end(&w);
	} else {
		jw_null(&w, "failure");
	}
	jw_array_flat(&w, "program");
	for (int i = 0; ab.argv[i]; i++)
		jw_string(&w, NULL, ab.argv[i]);
	jw_end(&w);
	char real[PATH_MAX];
	jw_string(&w, "path", realpath(ab.path, real) ? real : ab.path);
	jw_string(&w, "library", ab.libpath[0] ? ab.libpath : NULL);
	jw_int(&w, "runs", ab.runs);
	jw_int(&w, "warmup", ab.warmup);
	jw_number(&w, "timeout_s", ab.timeout_s);
	jw_string(&w, "conf", ab.conf);
	jw_array_flat(&w, "set");
	for (unsigned i = 0; i < ab.nsets; i++)
		jw_string(&w, NULL, ab.sets[i]);
	jw_end(&w);
	jw_array_flat(&w, "arm_order");
	for (unsigned i = 0; i < ab.narms; i++)
		jw_string(&w, NULL, ab.arms[i].def->name);
	jw_end(&w);
	jw_object(&w, "arms");
	for (unsigned i = 0; i < ab.narms; i++) {
		const struct arm *a = &ab.arms[i];
		jw_object(&w, a->def->name);
		jw_bool(&w, "bufsel", a->def->mode != NULL);
		jw_string(&w, "mode", a->def->mode);
		jw_string(&w, "kernel", a->def->kernel);
		jw_bool(&w, "optional", a->optional);
		jw_string(&w, "status", a->failed ? "failed" : a->done == ab.runs ? "ok" : "incomplete");
		if (a->failed) {
			jw_object(&w, "failure");
			jw_string(&w, "where", a->where);
			jw_string(&w, "reason", a->reason);
			jw_string(&w, "stderr_tail", a->tail);
			jw_end(&w);
		} else {
			jw_null(&w, "failure");
		}
		jw_array(&w, "warmup_runs");
		for (unsigned r = 0; r < a->warm_done; r++)
			json_run(&w, &a->warm[r], r + 1);
		jw_end(&w);
		jw_array(&w, "runs");
		for (unsigned r = 0; r < a->done; r++)
			json_run(&w, &a->runs[r], r + 1);
		jw_end(&w);
		json_summary(&w, a);
		json_ratio(&w, a);
		json_pools(&w, a);
		jw_end(&w);
	}
	jw_end(&w);
	jw_end(&w);
	if (jw_finish(&w) || fclose(ab.json)) {
		ab.json = NULL;
		ab_warn("--json %s: %s", ab.json_path, strerror(errno));
		exit(1);
	}
	ab.json = NULL;
}
