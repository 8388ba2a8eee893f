/*
 * result_page.h - the result of a finished submission as its page shows it
 * (server/result_page.c; docs/web.md "The result page").
 */
#ifndef CUGRADE_RESULT_PAGE_H
#define CUGRADE_RESULT_PAGE_H

#include <jansson.h>

#include "server/page.h"

/* Append sub's result (sub: the submission object the viewer may see) to
 * p: the summary, what to fix first, the compiler output, the tests with
 * hidden ones as one placeholder row, the correctness numbers, the
 * sanitizers grouped by line, the speed on a log scale with the next tier,
 * the hints not shown yet. Nothing when sub has no result. */
void result_put(struct page *p, json_t *sub);

/* After the result and its profile: for a student their rank and latest
 * submissions to the lab. Nothing when sub has no result. */
void result_put_standing(struct page *p, json_t *sub);

/* 1 when sub's result has the runner's summary (result_put shows it; for
 * a timeout or runtime error as the page's notice), else 0. */
int result_has_summary(json_t *sub);

#endif
