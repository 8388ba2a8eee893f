/*
 * course.h - the course tools beside grading (late days, regrade requests,
 * similarity checks) plugged into the server: their routes appended to the
 * API's route table, and their shutdown.
 */
#ifndef CUGRADE_COURSE_H
#define CUGRADE_COURSE_H

#include <stddef.h>

#include "server/router.h"

struct app;

/* A new table (owned here: course_routes_free frees it) of base's n routes followed by the course
 * modules' routes, its length in *nout. 0 or -ENOMEM. */
int course_routes_merge(const struct route *base, size_t n, struct route **out, size_t *nout);

/* Free the merged table (after the router stops using it). */
void course_routes_free(void);

/* Start what the modules run in the background (the similarity scheduler). */
void course_start(struct app *app);

/* Stop what the modules run in the background (a similarity check). */
void course_shutdown(struct app *app);

#endif
