/*
 * Reading a workload's result (results.h): ab's JSON document, parsed by
 * launcher/json.c, walked by member paths.  ab names its own measures
 * (wall_s, cpu_s, ...) beside the program's metrics, so a measure's path
 * depends on which of the two it is.
 */
#define _GNU_SOURCE
#include "bench/suite/results.h"

#include "bench/suite/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The node at a dotted path of member names; -1 when absent. */
int suite_at(const struct json_doc *d, int from, const char *path)
{
	char seg[128];
	int node = from;
	for (const char *s = path; node >= 0;) {
		size_t n = strcspn(s, ".");
		snprintf(seg, sizeof(seg), "%.*s", (int)n, s);
		node = d->nodes[node].type == JSON_OBJECT ? json_member(d, node, seg) : -1;
		if (!s[n])
			break;
		s += n + 1;
	}
	return node;
}

double suite_num_at(const struct json_doc *d, int from, const char *path)
{
	int node = suite_at(d, from, path);
	if (node < 0 || d->nodes[node].type != JSON_NUMBER)
		return NAN;
	char buf[64];
	snprintf(buf, sizeof(buf), "%.*s", (int)d->nodes[node].len, d->nodes[node].text);
	return strtod(buf, NULL);
}

static const char *str_at(const struct json_doc *d, int from, const char *path)
{
	int node = suite_at(d, from, path);
	return node >= 0 && d->nodes[node].type == JSON_STRING ? d->nodes[node].text : NULL;
}

/* The arm's object in a result, -1 when the workload did not run it. */
int suite_arm_node(const struct result *r, const char *arm)
{
	if (!r->has_doc)
		return -1;
	int arms = suite_at(&r->doc, 0, "arms");
	return arms >= 0 ? suite_at(&r->doc, arms, arm) : -1;
}

/* "summary.metrics.NAME" for a metric, "summary.NAME" for ab's own measures. */
static void measure_path(char *buf, size_t len, const char *part, const char *metric)
{
	static const char *const own[] = { "wall_s", "user_s", "sys_s", "cpu_s", "maxrss_kib" };
	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++)
		if (!strcmp(metric, own[i])) {
			snprintf(buf, len, "%s.%s", part, metric);
			return;
		}
	snprintf(buf, len, "%s.metrics.%s", part, metric);
}

double suite_arm_median(const struct result *r, const char *arm, const char *metric)
{
	char path[192];
	int a = suite_arm_node(r, arm);
	measure_path(path, sizeof(path), "summary", metric);
	return a < 0 ? NAN : suite_num_at(&r->doc, a, strcat(path, ".median")); // NOLINT(clang-analyzer-security.insecureAPI.strcpy): metric names are short
}

/* The ratio's median, min and max for arm / native; false when there is none. */
bool suite_arm_ratio(const struct result *r, const char *arm, const char *metric, double out[3])
{
	static const char *const fields[] = { ".median", ".min", ".max" };
	int a = suite_arm_node(r, arm);
	if (a < 0)
		return false;
	for (int i = 0; i < 3; i++) {
		char path[192];
		measure_path(path, sizeof(path), "ratio", metric);
		out[i] = suite_num_at(&r->doc, a, strcat(path, fields[i])); // NOLINT(clang-analyzer-security.insecureAPI.strcpy): metric names are short
	}
	return isfinite(out[0]);
}

/* Why an arm has no figures: "" when it has them. */
void suite_arm_missing(const struct result *r, const char *arm, char *why, size_t len)
{
	*why = '\0';
	if (!r->ran) {
		snprintf(why, len, "not run");
		return;
	}
	if (!r->has_doc) {
		suite_message(why, len, "%s", r->error);
		return;
	}
	int a = suite_arm_node(r, arm);
	if (a < 0) {
		snprintf(why, len, "not an arm of this workload");
		return;
	}
	const char *status = str_at(&r->doc, a, "status");
	if (status && !strcmp(status, "incomplete"))
		suite_message(why, len, "stopped early: %s", r->error);
	else if (status && strcmp(status, "ok"))
		snprintf(why, len, "%s, %s", str_at(&r->doc, a, "failure.where") ? str_at(&r->doc, a, "failure.where") : "?",
			 str_at(&r->doc, a, "failure.reason") ? str_at(&r->doc, a, "failure.reason") : status);
}
