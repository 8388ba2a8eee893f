/*
 * queue_page.c - admin: the runners and the queued, running and failed jobs.
 */
#include "server/page.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "server/runner.h"
#include "server/submission.h"
#include "server/views.h"

static int page_queue(struct page *p)
{
    struct api_error e;
    json_t *q = NULL, *s;
    json_t *runners = NULL, *r;
    size_t i;
    int any = 0;

    if (!page_is_staff(p))
        return page_error(p, 403, "Not allowed", "The queue page is for course staff.");
    if (api_queue_list(p->app, &p->user, &q, &e) != 0)
        return page_api_error(p, &e);
    p->refresh = 10;
    page_begin(p, "Queue");
    html_fmt(&p->b, "<h1>Runners and queue</h1>\n<p id=\"queue-depth\">Queued jobs: <strong>%lld</strong>"
                    " &middot; runners waiting for work: <strong>%zu</strong></p>\n",
             queue_depth(p->app->queue), queue_waiting(p->app->queue));
    html_raw(&p->b, "<h2>Runners</h2>\n");
    runner_list(p->app, 0, &runners);
    json_array_foreach(runners, i, r) {
        double seen = page_jnum(r, "last_seen", 0);
        if (!any)
            html_raw(&p->b, TABLE_BOX("Runners") "<table id=\"runners\"><thead><tr><th>Runner</th><th>GPU</th><th>Last seen</th>"
                            "<th class=\"num\">Jobs done</th><th>State</th></tr></thead><tbody>\n");
        any = 1;
        html_fmt(&p->b, "<tr><td>%s</td><td>%s</td><td>", page_jstr(r, "name"), page_jstr(r, "gpu"));
        put_when(&p->b, seen);
        html_fmt(&p->b, "</td><td class=\"num\">%d</td><td>%R</td></tr>\n", (int)page_jnum(r, "jobs_done", 0),
                 db_now() - seen < 90 ? "<span class=\"badge good\">online</span>"
                                      : "<span class=\"badge warn\">not seen lately</span>");
    }
    json_decref(runners);
    if (any)
        html_raw(&p->b, "</tbody></table></div>\n");
    else
        html_raw(&p->b, "<div class=\"notice warn\"><p>No runner has ever connected. Jobs wait in the "
                        "queue until one does: start <code>cugrade-runner</code> on a GPU host with a "
                        "runner token.</p></div>\n");
    html_raw(&p->b, "<h2>Queued, running and failed jobs</h2>\n");
    if (json_array_size(json_object_get(q, "queue")) == 0) {
        html_raw(&p->b, "<p class=\"muted\">Nothing queued, running or failed.</p>\n");
    } else {
        html_raw(&p->b, TABLE_BOX("Jobs") "<table id=\"jobs\"><thead><tr><th>#</th><th>Lab</th><th>Student</th><th>Status</th>"
                        "<th>Phase</th><th class=\"num\">Attempts</th><th>Submitted</th><th></th></tr></thead><tbody>\n");
        json_array_foreach(json_object_get(q, "queue"), i, s) {
            long long id = (long long)page_jnum(s, "id", 0);
            html_fmt(&p->b, "<tr><td><a href=\"/submissions/%lld\">#%lld</a></td><td>%s</td><td>%s</td><td>",
                     id, id, page_jstr(s, "lab"), page_jstr(s, "user"));
            put_status(&p->b, page_jstr(s, "status"));
            html_fmt(&p->b, "</td><td>%s %s</td><td class=\"num\">%d</td><td>", page_jstr(s, "phase"),
                     page_jstr(s, "detail"), (int)page_jnum(s, "attempts", 0));
            put_when_iso(&p->b, page_jstr(s, "created_at"));
            html_raw(&p->b, "</td><td>");
            if (strcmp(page_jstr(s, "status"), "system_error") == 0) {
                html_fmt(&p->b, "<form class=\"inline\" method=\"post\" action=\"/submissions/%lld/regrade\">", id);
                page_csrf_field(p);
                html_raw(&p->b, "<button type=\"submit\" class=\"secondary\">Regrade</button></form>");
            }
            html_raw(&p->b, "</td></tr>\n");
        }
        html_raw(&p->b, "</tbody></table></div>\n");
    }
    json_decref(q);
    return page_end(p, 200);
}

const struct route queue_page_routes[] = {
    PAGE_ROUTE_READ(HTTP_GET, "/admin/queue", page_queue),
};
const size_t queue_page_nroutes = sizeof(queue_page_routes) / sizeof(queue_page_routes[0]);
