/*
 * lateday_page.c - the late-day pages (pageview.h):
 *   GET  /me/late-days              a student's pool, per lab, and grants
 *   GET  /admin/late-days           staff: every student's pool; admins:
 *                                   the forms below
 *   POST /admin/late-days/default   admin: the course's default budget
 *   POST /admin/late-days/grant     admin: more days for one student
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/api.h"
#include "server/auth.h"
#include "server/html.h"
#include "server/lateday.h"
#include "server/page.h"
#include "server/pageview.h"
#include "server/views.h"

static int view_api_error(struct page_view *v, const struct api_error *e)
{
    const char *what = e->status == 404   ? "Not found"
                       : e->status == 403 ? "Not allowed"
                       : e->status >= 500 ? "Something broke on our side"
                                          : "That did not work";
    return page_view_error(v, e->status ? e->status : 500, what, e->message);
}

static void csrf_input(struct page_view *v)
{
    html_fmt(v->b, "<input type=\"hidden\" name=\"csrf\" value=\"%s\">", v->user->csrf);
}

static int page_mine(struct page_view *v)
{
    struct api_error e;
    json_t *o = NULL, *g;
    const char *user = http_request_query(v->req, "user");
    const char *lab;
    json_t *days;
    size_t i;
    if (lateday_user_json(v->app, v->user, user, &o, &e))
        return view_api_error(v, &e);
    snprintf(v->title, sizeof(v->title), "Late days");
    html_fmt(v->b, "<h1>Late days%R%s</h1>\n", user && *user ? " of " : "",
             user && *user ? json_string_value(json_object_get(o, "user")) : "");
    html_fmt(v->b,
             "<p class=\"lateday-summary\" id=\"late-days\"><strong>%d</strong> left of "
             "<strong>%d</strong> (%d used).</p>\n",
             (int)json_integer_value(json_object_get(o, "remaining")),
             (int)json_integer_value(json_object_get(o, "budget")),
             (int)json_integer_value(json_object_get(o, "used")));
    html_raw(v->b, "<p class=\"small\">A late submission spends whole days (rounded up, counted "
                   "from your own deadline, an extension included) before any late penalty "
                   "applies. Each lab is charged once: the most days any of your submissions "
                   "to it needed. The lab page tells you the cost before you submit.</p>\n");
    days = json_object_get(o, "labs");
    if (json_object_size(days)) {
        html_raw(v->b, "<table class=\"lateday-labs\"><thead><tr><th>Lab</th>"
                       "<th class=\"num\">Late days used</th></tr></thead><tbody>\n");
        json_t *d;
        json_object_foreach(days, lab, d) html_fmt(
            v->b, "<tr><td><a href=\"/labs/%u\">%s</a></td><td class=\"num\">%d</td></tr>\n", lab,
            lab, (int)json_integer_value(d));
        html_raw(v->b, "</tbody></table>\n");
    }
    if (json_array_size(json_object_get(o, "grants"))) {
        html_raw(v->b, "<h2>Extra days granted</h2>\n<ul>\n");
        json_array_foreach(json_object_get(o, "grants"), i, g)
            html_fmt(v->b, "<li>%d day(s) on %s: %s</li>\n",
                     (int)json_integer_value(json_object_get(g, "days")),
                     json_string_value(json_object_get(g, "at")),
                     json_string_value(json_object_get(g, "reason")));
        html_raw(v->b, "</ul>\n");
    }
    json_decref(o);
    return PAGE_VIEW_RENDERED;
}

/* The staff page; problem (NULL: none) is why the last form failed: it is
 * shown above the forms, which keep what was typed. */
static int page_admin(struct page_view *v, const struct api_error *problem)
{
    struct api_error e;
    json_t *o = NULL, *s;
    size_t i;
    const char *done = http_request_query(v->req, "done");
    if (lateday_overview(v->app, v->user, &o, &e))
        return view_api_error(v, &e);
    snprintf(v->title, sizeof(v->title), "Late days");
    html_raw(v->b, "<h1>Late days</h1>\n");
    if (done && !problem)
        html_raw(v->b, "<div class=\"notice good\"><p>Saved and recorded in the audit "
                       "log.</p></div>\n");
    if (problem) {
        html_fmt(v->b, "<div class=\"notice bad\" role=\"alert\" id=\"problem\"><p>That did not "
                       "work: %s Your input is kept below.</p></div>\n", problem->message);
        v->status = problem->status ? problem->status : 500;
    }
    html_fmt(v->b,
             "<p>Every student starts with <strong id=\"default-days\">%d</strong> late "
             "day(s), spent automatically by late submissions before the late penalty "
             "(<a href=\"/help\">rules</a>).</p>\n",
             (int)json_integer_value(json_object_get(o, "default_days")));
    if (v->user->role == AUTH_ADMIN) {
        html_raw(v->b,
                 "<div class=\"grid2\"><div class=\"panel\"><h2>Course default</h2>"
                 "<form class=\"stack\" method=\"post\" action=\"/admin/late-days/default\">");
        csrf_input(v);
        html_fmt(v->b,
                 "<label for=\"ld-default\">Late days per student</label>"
                 "<input type=\"number\" id=\"ld-default\" name=\"days\" min=\"0\" "
                 "max=\"365\" value=\"%d\" required>"
                 "<p><button type=\"submit\">Save the default</button></p></form></div>\n",
                 (int)json_integer_value(json_object_get(o, "default_days")));
        html_raw(v->b, "<div class=\"panel\"><h2>Grant more days</h2><form class=\"stack\" "
                       "method=\"post\" action=\"/admin/late-days/grant\">");
        csrf_input(v);
        const char *gu = problem ? v->field(v->page, "user") : NULL;
        const char *gd = problem ? v->field(v->page, "days") : NULL;
        const char *gr = problem ? v->field(v->page, "reason") : NULL;
        html_fmt(v->b,
                 "<label for=\"ld-user\">Student (user name)</label>"
                 "<input type=\"text\" id=\"ld-user\" name=\"user\" required maxlength=\"64\" "
                 "value=\"%s\">"
                 "<label for=\"ld-days\">Days</label>"
                 "<input type=\"number\" id=\"ld-days\" name=\"days\" min=\"1\" max=\"365\" "
                 "value=\"%s\" required>"
                 "<label for=\"ld-reason\">Reason (audit log)</label>"
                 "<input type=\"text\" id=\"ld-reason\" name=\"reason\" required "
                 "maxlength=\"500\" value=\"%s\">"
                 "<p><button type=\"submit\">Grant</button></p></form></div></div>\n",
                 gu ? gu : "", gd ? gd : "1", gr ? gr : "");
    }
    html_raw(v->b, "<div class=\"scroll\"><table id=\"late-days-table\"><thead><tr><th>Student</th><th>Name</th>"
                   "<th class=\"num\">Budget</th><th class=\"num\">Used</th>"
                   "<th class=\"num\">Left</th><th>Per lab</th></tr></thead><tbody>\n");
    json_array_foreach(json_object_get(o, "students"), i, s)
    {
        const char *u = json_string_value(json_object_get(s, "user"));
        html_fmt(v->b, "<tr><td><a href=\"/me/late-days?user=%u\">%s</a></td><td>%s</td>", u, u,
                 json_string_value(json_object_get(s, "display_name")));
        html_fmt(v->b,
                 "<td class=\"num\">%d</td><td class=\"num\">%d</td><td class=\"num\">%d</td><td>",
                 (int)json_integer_value(json_object_get(s, "budget")),
                 (int)json_integer_value(json_object_get(s, "used")),
                 (int)json_integer_value(json_object_get(s, "remaining")));
        const char *lab;
        json_t *d;
        json_object_foreach(json_object_get(s, "labs"), lab, d)
            html_fmt(v->b, "%s: %d ", lab, (int)json_integer_value(d));
        html_raw(v->b, "</td></tr>\n");
    }
    html_raw(v->b, "</tbody></table></div>\n");
    json_decref(o);
    return PAGE_VIEW_RENDERED;
}

/* A whole number field; -1 when missing or not one. */
static int int_field(struct page_view *v, const char *name)
{
    const char *s = v->field(v->page, name);
    char *end;
    if (!s || !*s)
        return -1;
    long n = strtol(s, &end, 10);
    return *end || n < 0 || n > 100000 ? -1 : (int)n;
}

/* page_admin again (page_view_again) with the problem: s[0] its message. */
static int admin_again(struct page_view *v, const struct page_again *a)
{
    struct api_error e = {.status = a->status};
    snprintf(e.message, sizeof(e.message), "%s", a->s[0]);
    return page_admin(v, &e);
}

/* The grant's problem: the admin page again with it (400, 404), or the
 * error page. */
static int grant_refused(struct page_view *v, const struct api_error *e)
{
    return e->status == 400 || e->status == 404
               ? page_view_again(v, admin_again,
                                 &(struct page_again){.status = e->status, .s = {e->message}})
               : view_api_error(v, e);
}

/* The writer stored (or refused) the change (lateday.h): the 303 to the
 * admin page saying so, or the problem. */
static int written_view(struct page_view *v, const void *arg, int rc)
{
    const struct lateday_write *w = arg;
    if (rc)
        return w->grant ? grant_refused(v, &w->e) : view_api_error(v, &w->e);
    snprintf(v->location, sizeof(v->location), "/admin/late-days?done=%s",
             w->grant ? "grant" : "default");
    return PAGE_VIEW_RENDERED;
}

static int written(struct app *app, struct http_request *req, const struct lateday_write *w,
                   int rc)
{
    return page_view_written(app, req, written_view, w, rc);
}

static int post_default(struct page_view *v)
{
    struct api_error e;
    if (v->post_ok(v->page))
        return PAGE_VIEW_DONE;
    if (lateday_default_start(v->app, v->req, v->user, int_field(v, "days"), written, &e))
        return view_api_error(v, &e);
    return PAGE_VIEW_DEFERRED; /* answered by written */
}

static int post_grant(struct page_view *v)
{
    struct api_error e;
    if (v->post_ok(v->page))
        return PAGE_VIEW_DONE;
    if (lateday_grant_start(v->app, v->req, v->user, v->field(v->page, "user"),
                            int_field(v, "days"), v->field(v->page, "reason"), written, &e))
        return grant_refused(v, &e);
    return PAGE_VIEW_DEFERRED; /* answered by written */
}

int lateday_page_route(struct page_view *v, char **seg, size_t n)
{
    if (n == 2 && strcmp(seg[0], "me") == 0 && strcmp(seg[1], "late-days") == 0 && v->get)
        return page_mine(v);
    if (n < 2 || strcmp(seg[0], "admin") != 0 || strcmp(seg[1], "late-days") != 0)
        return PAGE_VIEW_NOT_MINE;
    if (!auth_role_staff(v->user->role))
        return page_view_error(v, 403, "Not allowed", "These pages are for course staff.");
    if (n == 2 && v->get)
        return page_admin(v, NULL);
    if (n == 3 && v->post && strcmp(seg[2], "default") == 0)
        return post_default(v);
    if (n == 3 && v->post && strcmp(seg[2], "grant") == 0)
        return post_grant(v);
    return PAGE_VIEW_NOT_MINE;
}

/* Every route of this file goes through lateday_page_route (pageview.h). */
static int r_lateday(struct page *p)
{
    return page_view_run(p, lateday_page_route);
}

const struct route lateday_page_routes[] = {
    PAGE_ROUTE_READ(HTTP_GET, "/me/late-days", r_lateday),
    PAGE_ROUTE_READ(HTTP_GET, "/admin/late-days", r_lateday),
    PAGE_ROUTE(HTTP_POST, "/admin/late-days/default", r_lateday),
    PAGE_ROUTE(HTTP_POST, "/admin/late-days/grant", r_lateday),
};
const size_t lateday_page_nroutes = sizeof(lateday_page_routes) / sizeof(lateday_page_routes[0]);
