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
#include "server/grades_lms.h"
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
                    "best score per lab with overrides applied.</li>\n"
                    "<li><a href=\"/admin/export/grades-lms.csv\">Grades CSV, one row per student</a> "
                    "for an LMS import: <code>user,display_name</code> and one column per lab with the "
                    "best score (overrides applied, system errors never counted); every student, an "
                    "empty cell where a student has no counted submission. The file is named for "
                    "today's date.</li>\n");
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

/* A lab's results.json built off the loop (export.c): sent as before. */
static void export_results_done(struct app *app, struct http_request *req, struct http_buf *out,
                                const struct api_error *e)
{
    struct page p;
    char fname[96];
    page_open(&p, app, req);
    snprintf(fname, sizeof(fname), "%.64s-results.json", http_request_query(req, "lab"));
    if (e)
        page_api_error(&p, e);
    else
        send_download(&p, "application/json", fname, out->data, out->len);
    page_free(&p);
}

/* One row per student, one column per lab (grades_lms_csv), in a file
 * named for today. */
static int export_grades_lms(struct page *p)
{
    struct api_error e;
    struct http_buf out = {0};
    char fname[64];
    int rc;

    if (!page_is_admin(p))
        return page_error(p, 403, "Not allowed", "Only admins export grades.");
    if (grades_lms_csv(p->app, &p->user, &out, &e) != 0) {
        http_buf_free(&out);
        return page_api_error(p, &e);
    }
    grades_lms_filename(db_now(), fname, sizeof(fname));
    rc = send_download(p, "text/csv; charset=utf-8", fname, out.data, out.len);
    http_buf_free(&out);
    return rc;
}

/* Gradescope-style: [{"user","display_name","submission","results":{score,
 * max_score,output,tests,...}}] with each student's best submission, the
 * score replaced by the override when there is one (export.c). */
static int export_results(struct page *p)
{
    const char *lab = http_request_query(p->req, "lab");

    if (!page_is_admin(p))
        return page_error(p, 403, "Not allowed", "Only admins export grades.");
    if (lab == NULL)
        return page_error(p, 400, "Which lab?", "Pick a lab on the exports page.");
    return export_results_json(p->app, p->req, &p->user, lab, export_results_done);
}

const struct route export_page_routes[] = {
    PAGE_ROUTE(HTTP_GET, "/admin/exports", page_exports),
    PAGE_ROUTE(HTTP_GET, "/admin/export/grades.csv", export_grades),
    PAGE_ROUTE(HTTP_GET, "/admin/export/results.json", export_results),
    PAGE_ROUTE_READ(HTTP_GET, "/admin/export/grades-lms.csv", export_grades_lms),
};
const size_t export_page_nroutes = sizeof(export_page_routes) / sizeof(export_page_routes[0]);
