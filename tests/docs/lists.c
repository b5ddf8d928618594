/* SPDX-License-Identifier: MIT */
/*
 * lists.c - the lists the code keeps, as JSON, for the tests that compare
 * the docs with them (docs.py): the table's columns (core/fields.h, in
 * their order, with when each gives way), the MSTAT_* variables of the
 * library (lib/config.h), the segment format's version, and the metrics
 * a process read once gets, as the one writer of them prints them
 * (core/exposition.c, OpenMetrics, from a process with two size classes
 * used).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "core/columns.h"
#include "lib/config.h"
#include "shm/layout.h"
#include "core/model.h"
#include "core/output.h"

static const char *const variables[] = {
#define MSTAT_X(id, name, ...) name,
	MSTAT_CONFIG(MSTAT_X)
#undef MSTAT_X
};

static json_object *
columns(void)
{
	json_object *a = json_object_new_array();

	for (int k = 0; k < MSTAT_SORT_COUNT; k++) {
		const struct mstat_column *c = mstat_columns_at(k);
		json_object *o = json_object_new_object();
		json_object_object_add(o, "name", json_object_new_string(c->name));
		json_object_object_add(o, "title", json_object_new_string(c->title));
		json_object_object_add(o, "drop", json_object_new_int((int)c->drop));
		json_object_array_add(a, o);
	}
	return a;
}

/* The exposition of one process read once, with two classes used. */
static json_object *
exposition(void)
{
	static struct mstat_snapshot s;
	struct mstat_model m;
	const struct mstat_model_row *rows[1];
	struct mstat_output_tick t = { .seq = 1, .time_ms = 1, .interval_s = 1 };
	char *buf = NULL;
	size_t len = 0;

	s.state = MSTAT_RUNNING;
	s.threads = 1;
	s.class_count = 2;
	s.class_max_size[0] = 16;
	s.class_max_size[1] = UINT64_MAX;
	s.classes[0] = (struct mstat_counts){ 2, 32, 1, 16 };
	s.classes[1] = (struct mstat_counts){ 1, 1 << 20, 0, 0 };
	s.total = (struct mstat_counts){ 3, 32 + (1 << 20), 1, 16 };
	struct mstat_model_input in = {
		.key = "k", .pid = 1, .name = "p", .live = MSTAT_LIVE_RUNNING,
		.err = "", .t_ns = 1, .snap = &s, .start_ns = 1, .writer_mode = 2,
		.layout_major = MSTAT_SHM_VERSION_MAJOR,
		.layout_minor = MSTAT_SHM_VERSION_MINOR,
	};
	mstat_model_init(&m, 0);
	FILE *f = open_memstream(&buf, &len);
	if (!f || mstat_model_update(&m, &in, 1, 1) < 0 ||
	    mstat_columns_view(&m, "", MSTAT_SORT_PID, false, rows) != 1 ||
	    mstat_output_write(f, MSTAT_FORMAT_OPENMETRICS, &t, rows, 1) < 0 ||
	    fclose(f) != 0) {
		fprintf(stderr, "lists: the exposition could not be written\n");
		exit(1);
	}
	json_object *o = json_object_new_string(buf);
	free(buf);
	mstat_model_fini(&m);
	return o;
}

int
main(void)
{
	json_object *out = json_object_new_object();
	json_object *vars = json_object_new_array();
	char layout[32];

	for (size_t i = 0; i < sizeof(variables) / sizeof(variables[0]); i++)
		json_object_array_add(vars, json_object_new_string(variables[i]));
	snprintf(layout, sizeof(layout), "%d.%d", MSTAT_SHM_VERSION_MAJOR,
		 MSTAT_SHM_VERSION_MINOR);
	json_object_object_add(out, "columns", columns());
	json_object_object_add(out, "variables", vars);
	json_object_object_add(out, "layout", json_object_new_string(layout));
	json_object_object_add(out, "exposition", exposition());
	puts(json_object_to_json_string_ext(out, JSON_C_TO_STRING_PRETTY));
	json_object_put(out);
	return 0;
}
