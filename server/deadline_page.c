/*
 * deadline_page.c - admin: deadlines and extensions.
 */
#include "server/page.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "server/course.h"
#include "server/staff_write.h"
#include "server/views.h"

/* "2026-12-04T23:59" (datetime-local, taken as UTC) or full ISO -> seconds. */
static double parse_local_time(const char *s)
{
    char buf[40];
    double t = 0;

    if (s == NULL || *s == '\0')
        return 0;
    if (strlen(s) == 16)
        snprintf(buf, sizeof(buf), "%s:00Z", s);
    else if (strlen(s) == 19)
        snprintf(buf, sizeof(buf), "%sZ", s);
    else
        snprintf(buf, sizeof(buf), "%s", s);
    if (rubric_time_parse(buf, &t) != 0)
        return -1;
    return t;
}

static void fmt_local(char *buf, size_t len, double t)
{
    time_t s = (time_t)t;
    struct tm tm;

    buf[0] = '\0';
    if (t > 0 && gmtime_r(&s, &tm))
        strftime(buf, len, "%Y-%m-%dT%H:%M", &tm);
}

static int page_deadlines(struct page *p, const char *problem, const char *done, int status)
{
    json_t *exts = NULL, *x;
    size_t k;
    char a[32], h[32];
    int any = 0;

    if (!page_is_admin(p))
        return page_error(p, 403, "Not allowed", "Only admins change deadlines.");
    page_begin(p, "Deadlines");
    html_raw(&p->b, "<h1>Deadlines and extensions</h1>\n");
    if (done)
        html_fmt(&p->b, "<div class=\"notice good\" role=\"status\"><p>%s</p></div>\n", done);
    if (problem)
        html_fmt(&p->b, "<div class=\"notice bad\" role=\"alert\"><p>%s</p></div>\n", problem);
    html_raw(&p->b, "<p class=\"small muted\">Times are UTC. Changing a lab's deadline stores a new "
                    "rubric version.</p>\n" TABLE_BOX("Lab deadlines") "<table><thead><tr><th>Lab</th><th>Due</th><th>Hard deadline</th>"
                    "<th>Change</th></tr></thead><tbody>\n");
    for (size_t i = 0; i < p->app->nlabs; i++) {
        struct app_lab *l = &p->app->labs[i];
        double due = l->has_rubric ? l->rubric.due : 0, hard = l->has_rubric ? l->rubric.hard_deadline : 0;

        fmt_local(a, sizeof(a), due);
        fmt_local(h, sizeof(h), hard);
        html_fmt(&p->b, "<tr><td><a href=\"/labs/%u\">%s</a></td><td>", l->lab.name, l->lab.name);
        put_when(&p->b, due);
        html_raw(&p->b, "</td><td>");
        put_when(&p->b, hard);
        html_fmt(&p->b, "</td><td><form class=\"inline\" method=\"post\" action=\"/admin/labs/%u/deadline\">",
                 l->lab.name);
        page_csrf_field(p);
        html_fmt(&p->b, "<label class=\"sr-only\" for=\"due-%s\">Due</label><input type=\"datetime-local\" id=\"due-%s\" name=\"due\" value=\"%s\">"
                        "<label class=\"sr-only\" for=\"hard-%s\">Hard deadline</label><input type=\"datetime-local\" id=\"hard-%s\" name=\"hard_deadline\" value=\"%s\">"
                        "<button type=\"submit\">Save</button></form></td></tr>\n",
                 l->lab.name, l->lab.name, a, l->lab.name, l->lab.name, h);
    }
    html_raw(&p->b, "</tbody></table></div>\n<h2>Extensions</h2>\n");
    course_extensions_list(p->app, &exts);
    json_array_foreach(exts, k, x) {
        if (!any)
            html_raw(&p->b, TABLE_BOX("Extensions") "<table id=\"extensions\"><thead><tr><th>Student</th><th>Lab</th><th>Due</th>"
                            "<th>Hard deadline</th></tr></thead><tbody>\n");
        any = 1;
        html_fmt(&p->b, "<tr><td>%s</td><td>%s</td><td>", page_jstr(x, "user"), page_jstr(x, "lab"));
        put_when(&p->b, page_jnum(x, "due", 0));
        html_raw(&p->b, "</td><td>");
        put_when(&p->b, page_jnum(x, "hard_deadline", 0));
        html_raw(&p->b, "</td></tr>\n");
    }
    json_decref(exts);
    html_raw(&p->b, any ? "</tbody></table></div>\n" : "<p class=\"muted\">No extensions.</p>\n");
    html_raw(&p->b, "<h3>Give an extension</h3>\n<form class=\"filters\" method=\"post\" action=\"/admin/extensions\">");
    page_csrf_field(p);
    html_raw(&p->b, "<label>Student<input type=\"text\" name=\"user\" required></label><label>Lab<select name=\"lab\">");
    for (size_t i = 0; i < p->app->nlabs; i++)
        html_fmt(&p->b, "<option>%s</option>", p->app->labs[i].lab.name);
    html_raw(&p->b, "</select></label><label>Due (UTC)<input type=\"datetime-local\" name=\"due\" required></label>"
                    "<label>Hard deadline (UTC, optional)<input type=\"datetime-local\" name=\"hard_deadline\"></label>"
                    "<button type=\"submit\">Save extension</button></form>\n");
    return page_end(p, status);
}

/* page_deadlines again (page_again): s[0] the problem, s[1] what was done. */
static int deadlines_again(struct page *p, const struct page_again *a)
{
    return page_deadlines(p, a->s[0], a->s[1], a->status);
}

/* A POST's answer: the deadlines page, rendered off the loop. */
static int deadlines_form_again(struct page *p, const char *problem, const char *done, int status)
{
    struct page_again a = {.status = status, .s = {problem, done}};
    return page_again(p, deadlines_again, &a);
}

/* The writer stored (or refused) the extension (staff_write.h): the
 * deadlines page again, saying so. */
static int extension_done(struct app *app, struct http_request *req, const struct staff_write *w,
                          int rc)
{
    struct page p;
    char msg[300];
    page_open(&p, app, req);
    snprintf(msg, sizeof(msg), "Extension saved for %.64s in %.64s.", w->user, w->lab);
    int r = rc ? deadlines_form_again(&p, w->e.message, NULL, w->e.status ? w->e.status : 400)
               : deadlines_form_again(&p, NULL, msg, 200);
    page_free(&p);
    return r;
}

static int post_extension(struct page *p)
{
    struct api_error e;
    const char *user, *lab;
    double due, hard;

    if (!page_is_admin(p))
        return page_error(p, 403, "Not allowed", "Only admins change deadlines.");
    if (page_post_check(p) != 0)
        return HTTP_DONE;
    user = page_field(p, "user");
    lab = page_field(p, "lab");
    due = parse_local_time(page_field(p, "due"));
    hard = parse_local_time(page_field(p, "hard_deadline"));
    if (!user || !*user || !lab || due <= 0 || hard < 0)
        return deadlines_form_again(
            p, "Give the student's user name, the lab and a due date (UTC).", NULL, 400);
    struct staff_write w = {.kind = STAFF_EXTENSION, .viewer = p->user, .due = due, .hard = hard};
    snprintf(w.user, sizeof(w.user), "%s", user);
    snprintf(w.lab, sizeof(w.lab), "%s", lab);
    if (staff_write_start(p->app, p->req, &w, extension_done, &e) != 0)
        return deadlines_form_again(p, e.message, NULL, e.status ? e.status : 400);
    return HTTP_DEFERRED; /* answered by extension_done */
}

/* The writer stored (or refused) the lab's new deadlines (a new rubric
 * version): the deadlines page again, saying so. */
static int deadline_done(struct app *app, struct http_request *req, json_t *out, int rc,
                         const struct api_error *e)
{
    struct page p;
    char msg[200];
    page_open(&p, app, req);
    snprintf(msg, sizeof(msg), "Deadlines of %.64s saved (rubric version %d).",
             json_string_value(json_object_get(out, "lab")),
             (int)json_integer_value(json_object_get(out, "version")));
    int r = rc ? deadlines_form_again(&p, e->message, NULL, e->status ? e->status : 400)
               : deadlines_form_again(&p, NULL, msg, 200);
    page_free(&p);
    return r;
}

static int post_deadline(struct page *p, const char *lab)
{
    struct api_error e;
    struct app_lab *al = app_lab_find(p->app, lab);
    json_t *doc, *late;
    double due, hard;
    char iso[40];

    if (!page_is_admin(p))
        return page_error(p, 403, "Not allowed", "Only admins change deadlines.");
    if (page_post_check(p) != 0)
        return HTTP_DONE;
    if (al == NULL || al->rubric_doc == NULL)
        return deadlines_form_again(p, "That lab has no rubric to change.", NULL, 404);
    due = parse_local_time(page_field(p, "due"));
    hard = parse_local_time(page_field(p, "hard_deadline"));
    if (due <= 0 || hard < 0)
        return deadlines_form_again(p, "Enter the due date as a date and time (UTC).", NULL, 400);
    doc = json_deep_copy(al->rubric_doc);
    if (doc == NULL)
        return page_error(p, 500, "Out of memory", "Try again in a minute.");
    api_time_iso(due, iso, sizeof(iso));
    json_object_set_new(doc, "due", json_string(iso));
    if (hard > 0) {
        late = json_object_get(doc, "late");
        if (!json_is_object(late)) {
            late = json_object();
            json_object_set_new(late, "policy", json_string("accept"));
            json_object_set_new(doc, "late", late);
        }
        api_time_iso(hard, iso, sizeof(iso));
        json_object_set_new(late, "hard_deadline", json_string(iso));
    }
    int rc = course_rubric_put_start(p->app, &p->user, lab, doc, 0, p->req, deadline_done, &e);
    json_decref(doc);
    if (rc != 0)
        return deadlines_form_again(p, e.message, NULL, e.status ? e.status : 400);
    return HTTP_DEFERRED; /* answered by deadline_done */
}

static int r_deadlines(struct page *p)
{
    return page_deadlines(p, NULL, NULL, 200);
}

static int r_deadline(struct page *p)
{
    return post_deadline(p, http_request_param(p->req, "lab"));
}

const struct route deadline_page_routes[] = {
    PAGE_ROUTE_READ(HTTP_GET, "/admin/deadlines", r_deadlines),
    PAGE_ROUTE(HTTP_POST, "/admin/extensions", post_extension),
    PAGE_ROUTE(HTTP_POST, "/admin/labs/{lab}/deadline", r_deadline),
};
const size_t deadline_page_nroutes = sizeof(deadline_page_routes) / sizeof(deadline_page_routes[0]);
