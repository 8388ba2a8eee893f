/*
 * course.c - see course.h.
 */
#include "server/course.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "server/lateday.h"
#include "server/regrade.h"
#include "server/similarity.h"

static struct route *merged; /* the table course_routes_merge made */

int course_routes_merge(const struct route *base, size_t n, struct route **out, size_t *nout)
{
    const struct route *parts[] = {lateday_routes, regrade_routes, similarity_routes};
    const size_t counts[] = {lateday_nroutes, regrade_nroutes, similarity_nroutes};
    size_t total = n;
    for (size_t i = 0; i < 3; i++)
        total += counts[i];
    struct route *all = malloc(total * sizeof(*all));
    if (!all)
        return -ENOMEM;
    memcpy(all, base, n * sizeof(*all));
    size_t k = n;
    for (size_t i = 0; i < 3; i++) {
        memcpy(all + k, parts[i], counts[i] * sizeof(*all));
        k += counts[i];
    }
    free(merged);
    merged = all;
    *out = all;
    *nout = total;
    return 0;
}

void course_routes_free(void)
{
    free(merged);
    merged = NULL;
}

void course_start(struct app *app)
{
    similarity_schedule(app);
}

void course_shutdown(struct app *app)
{
    similarity_shutdown(app);
}
