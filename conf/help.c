/*
 * --help's key list: every row of the options table with its values, its
 * default, its BUFSEL_* variables and its help text, wrapped for a terminal.
 * Generated from conf_options[], so --help cannot drift from what the parser
 * accepts.
 */
#define _GNU_SOURCE /* strchrnul */
#include "conf/internal.h"

#include <stdio.h>
#include <string.h>

/* Appends text as lines of at most 78 columns, each indented by six spaces. */
static void append_wrapped(char *buf, size_t len, size_t *used, const char *text)
{
	const size_t width = 78 - 6;
	while (*text) {
		size_t n = strlen(text), cut = n;
		if (n > width) {
			/* The last space that fits; a longer word stays whole. */
			for (cut = width; cut && text[cut] != ' '; cut--)
				;
			if (!cut)
				cut = (size_t)(strchrnul(text, ' ') - text);
		}
		conf_append(buf, len, used, "      %.*s\n", (int)cut, text);
		text += cut;
		while (*text == ' ')
			text++;
	}
}

size_t conf_describe(char *buf, size_t len)
{
	size_t used = 0;
	char var[CONF_KEY_MAX], gvar[CONF_KEY_MAX], line[256];

	if (len)
		buf[0] = '\0';
	for (size_t k = 0; k < CONF_KEYS; k++) {
		const struct conf_option *o = &conf_options[k];
		struct conf_ref r = { (enum conf_key)k, -1 };
		conf_var_name(&r, var, sizeof(var));
		conf_append(buf, len, &used, "  %s = %s (default %s)\n", o->name, o->values,
			    *o->dflt ? o->dflt : "empty");
		if (o->scope == CONF_SCOPE_GROUP) {
			/* 65535 stands in for any group id in the generated name. */
			r.bgid = 65535;
			conf_var_name(&r, gvar, sizeof(gvar));
			char *id = strstr(gvar, "65535");
			snprintf(line, sizeof(line), "%s; one group: group.<bgid>.%s, %.*s<bgid>%s", var, o->name,
				 (int)(id - gvar), gvar, id + 5);
			append_wrapped(buf, len, &used, line);
		} else {
			append_wrapped(buf, len, &used, var);
		}
		append_wrapped(buf, len, &used, o->help);
	}
	return used;
}
