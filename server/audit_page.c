/*
 * audit_page.c - the audit log for the staff.
 */
#include "server/page.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "server/audit.h"
#include "server/views.h"

static int page_audit(struct page *p)
{
    const char *action = http_request_query(p->req, "action");
    json_t *log = NULL, *x;
    size_t i;
    int any = 0;

    if (!page_is_staff(p))
        return page_error(p, 403, "Not allowed", "The audit log is for course staff.");
    if (action && !*action)
        action = NULL;
    if (audit_list(p->app, action, &log) != 0)
        return page_error(p, 500, "Something broke on our side", "The audit log could not be read.");
    page_begin(p, "Audit log");
    html_raw(&p->b, "<h1>Audit log</h1>\n<p class=\"muted small\">Every regrade, score override, "
                    "rubric change, new user and extension, newest first.</p>\n");
    html_raw(&p->b, "<form class=\"filters\" method=\"get\" action=\"/audit\"><label>Action"
                    "<input type=\"text\" name=\"action\" placeholder=\"e.g. override\"");
    if (action)
        html_fmt(&p->b, " value=\"%s\"", action);
    html_raw(&p->b, "></label><button type=\"submit\">Filter</button></form>\n");
    json_array_foreach(log, i, x) {
        if (!any)
            html_raw(&p->b, TABLE_BOX("Audit log") "<table id=\"audit\"><thead><tr><th>When</th><th>Who</th><th>Action</th>"
                            "<th>Target</th><th>Detail</th></tr></thead><tbody>\n");
        any = 1;
        html_raw(&p->b, "<tr><td>");
        put_when(&p->b, page_jnum(x, "at", 0));
        html_fmt(&p->b, "</td><td>%s</td><td><span class=\"badge\">%s</span></td><td>%s</td><td>%s</td></tr>\n",
                 json_is_string(json_object_get(x, "who")) ? page_jstr(x, "who") : "system",
                 page_jstr(x, "action"), page_jstr(x, "target"), page_jstr(x, "detail"));
    }
    json_decref(log);
    if (any)
        html_raw(&p->b, "</tbody></table></div>\n");
    else
        html_raw(&p->b, "<p class=\"muted\">Nothing recorded yet.</p>\n");
    return page_end(p, 200);
}

const struct route audit_page_routes[] = {
    PAGE_ROUTE_READ(HTTP_GET, "/audit", page_audit),
};
const size_t audit_page_nroutes = sizeof(audit_page_routes) / sizeof(audit_page_routes[0]);
