/*
 * export_page.c - admin: grade and result exports.
 */
#include "server/page.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "server/export.h"
#include "server/scoreboard.h"
#include "server/submission.h"
#include "server/views.h"

static int page_exports(struct page *p)
{
    if (!page_is_admin(p))
        return page_error(p, 403, "Not allowed", "Only admins export grades.");
    page_begin(p, "Exports");
    html_raw(&p->b, "<h1>Exports</h1>\n<ul>\n<li><a href=\"/admin/export/grades.csv\">Grades CSV</a> for the "
                    "LMS: <code>user,display_name,lab,score,max_score,late,submission</code>, each student's "
                    "best score per lab with overrides applied.</li>\n");
    for (size_t i = 0; i < p->app->nlabs; i++)
        html_fmt(&p->b, "<li><a href=\"/admin/export/results.json?lab=%u\">%s: Gradescope-style results</a> "
                        "(one <code>results.json</code> per student: their best submission) &middot; "
                        "<a href=\"/labs/%u/scoreboard.csv\">scoreboard CSV</a></li>\n",
                 p->app->labs[i].lab.name, p->app->labs[i].lab.name, p->app->labs[i].lab.name);
    html_raw(&p->b, "</ul>\n");
    return page_end(p, 200);
}

static int send_download(struct page *p, const char *type, const char *filename, const char *data, size_t len)
{
    char cd[160];

    page_security_headers(p->req);
    http_response_header(p->req, "Cache-Control", "no-store");
    snprintf(cd, sizeof(cd), "attachment; filename=\"%s\"", filename);
    http_response_header(p->req, "Content-Disposition", cd);
    http_response_body(p->req, 200, type, data ? data : "", len);
    return HTTP_DONE;
}

/* The grades CSV built off the loop (export.c): sent as before. */
static void export_grades_done(struct app *app, struct http_request *req, struct http_buf *out,
                               const struct api_error *e)
{
    struct page p;
    page_open(&p, app, req);
    if (e)
        page_api_error(&p, e);
    else
        send_download(&p, "text/csv; charset=utf-8", "grades.csv", out->data, out->len);
    page_free(&p);
}

static int export_grades(struct page *p)
{
    if (!page_is_admin(p))
        return page_error(p, 403, "Not allowed", "Only admins export grades.");
    return export_grades_csv(p->app, p->req, &p->user, export_grades_done);
}

/* Gradescope-style: [{"user","display_name","submission","results":{score,
 * max_score,output,tests,...}}] with each student's best submission, the
 * score replaced by the override when there is one. */
static int export_results(struct page *p)
{
    struct api_error e;
    const char *lab = http_request_query(p->req, "lab");
    json_t *sb = NULL, *r, *out, *students;
    char *text, fname[96];
    size_t i;
    int rc;

    if (!page_is_admin(p))
        return page_error(p, 403, "Not allowed", "Only admins export grades.");
    if (lab == NULL || api_scoreboard(p->app, &p->user, lab, &sb, &e) != 0)
        return lab ? page_api_error(p, &e) : page_error(p, 400, "Which lab?", "Pick a lab on the exports page.");
    out = json_pack("{s:s,s:[]}", "lab", lab, "students");
    students = json_object_get(out, "students");
    json_array_foreach(json_object_get(sb, "rows"), i, r) {
        json_t *sub = NULL, *res;
        long long id = (long long)page_jnum(r, "submission", 0);
        if (api_submission_get(p->app, &p->user, id, &sub, &e) != 0)
            continue;
        res = json_object_get(sub, "result");
        res = json_is_object(res) ? json_deep_copy(res) : json_object();
        json_object_set(res, "score", json_object_get(r, "score"));
        json_object_set(res, "max_score", json_object_get(r, "max_score"));
        json_array_append_new(students, json_pack("{s:s,s:s,s:I,s:o}", "user", page_jstr(r, "user"), "display_name",
                                                  page_jstr(r, "display_name"), "submission", id, "results", res));
        json_decref(sub);
    }
    json_decref(sb);
    text = json_dumps(out, JSON_INDENT(1));
    json_decref(out);
    if (text == NULL)
        return page_error(p, 500, "Out of memory", "Try again in a minute.");
    snprintf(fname, sizeof(fname), "%.64s-results.json", lab);
    rc = send_download(p, "application/json", fname, text, strlen(text));
    free(text);
    return rc;
}

const struct route export_page_routes[] = {
    PAGE_ROUTE(HTTP_GET, "/admin/exports", page_exports),
    PAGE_ROUTE(HTTP_GET, "/admin/export/grades.csv", export_grades),
    PAGE_ROUTE(HTTP_GET, "/admin/export/results.json", export_results),
};
const size_t export_page_nroutes = sizeof(export_page_routes) / sizeof(export_page_routes[0]);
