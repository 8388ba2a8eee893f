/*
 * hidden.h - what a student may not see yet of a result: the rubric's
 * visibility rule for tests and correctness cases, and the filter that
 * removes hidden cases from a result document and scrubs their names and
 * counts from its free text (output, detail).
 */
#ifndef CUGRADE_HIDDEN_H
#define CUGRADE_HIDDEN_H

#include "server/app.h"

/* 1 when a test or case with visibility vis ("visible", "after_due_date",
 * "hidden", ...) may be shown to a student at now, given their due date. */
int hidden_visible_to_student(const char *vis, double due, double now);

/* The result document res of a submission of user uid in lab as that
 * student may see it now. Returns a new reference (NULL: out of memory). */
json_t *hidden_result_filter(struct app *app, const char *lab, long long uid, const json_t *res);

/* The progress detail text as the student may see it. malloc'd (caller
 * frees); NULL when out of memory. */
char *hidden_detail_filter(struct app *app, const char *lab, long long uid, const char *detail);

#endif
