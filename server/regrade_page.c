/*
 * regrade_page.c - the regrade pages (pageview.h):
 *   GET  /regrades                          staff: the inbox (open first;
 *                                           filters status, lab, user);
 *                                           a student: their own requests
 *   GET  /regrades/{id}                     one request; staff answer it
 *   POST /regrades/{id}/answer              staff: answer (+ regrade or
 *                                           override)
 *   POST /submissions/{id}/regrade-request  a student asks
 * and the section of a submission's page (regrade_page_section).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/api.h"
#include "server/auth.h"
#include "server/html.h"
#include "server/page.h"
#include "server/pageview.h"
#include "server/views.h"
#include "server/regrade.h"
#include "server/submission.h"

static const char *js(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

static long long ji(const json_t *o, const char *k)
{
    return (long long)json_integer_value(json_object_get(o, k));
}

static int api_err(struct page_view *v, const struct api_error *e)
{
    const char *what = e->status == 404   ? "Not found"
                       : e->status == 403 ? "Not allowed"
                       : e->status == 409 ? "Already done"
                       : e->status >= 500 ? "Something broke on our side"
                                          : "That did not work";
    return page_view_error(v, e->status ? e->status : 500, what, e->message);
}

static void csrf_input(struct page_view *v)
{
    html_fmt(v->b, "<input type=\"hidden\" name=\"csrf\" value=\"%s\">", v->user->csrf);
}

static void status_badge(struct page_view *v, const char *status)
{
    html_fmt(v->b, "<span class=\"badge %R\">%s</span>",
             strcmp(status, "open") == 0 ? "warn" : "good", status);
}

/* The answer block of a request (nothing while open). */
static void answer_block(struct page_view *v, const json_t *r)
{
    if (strcmp(js(r, "status"), "answered") != 0)
        return;
    const char *action = js(r, "action");
    html_fmt(v->b, "<div class=\"regrade-answer\"><p class=\"small\">Answered by %s ",
             js(r, "answered_by"));
    put_when_iso(v->b, js(r, "answered_at"));
    if (strcmp(action, "regrade") == 0)
        html_raw(v->b, " &middot; the submission was put back in the queue for regrading");
    else if (strcmp(action, "override") == 0)
    {
        html_raw(v->b, " &middot; the score was changed to ");
        put_score(v->b, json_object_get(r, "new_score"), NULL);
    }
    html_fmt(v->b, "</p><blockquote class=\"regrade-text\">%s</blockquote></div>\n",
             js(r, "answer"));
}

void regrade_page_section(struct page_view *v, json_t *sub)
{
    json_t *reqs = json_object_get(sub, "regrade_requests"), *r;
    long long id = ji(sub, "id");
    int open = 0, mine = v->user->role == AUTH_STUDENT;
    size_t i;
    if (!mine && json_array_size(reqs) == 0)
        return;
    html_raw(v->b, "<section class=\"regrade\" id=\"regrade\" aria-label=\"regrade requests\">"
                   "<h2>Regrade requests</h2>\n");
    json_array_foreach(reqs, i, r)
    {
        open |= strcmp(js(r, "status"), "open") == 0;
        html_fmt(v->b, "<article class=\"regrade-item\"><p class=\"small\">");
        status_badge(v, js(r, "status"));
        html_raw(v->b, " asked ");
        put_when_iso(v->b, js(r, "created_at"));
        if (!mine)
            html_fmt(v->b, " &middot; <a href=\"/regrades/%lld\">%R</a>", ji(r, "id"),
                     strcmp(js(r, "status"), "open") == 0 ? "answer it" : "open");
        html_fmt(v->b, "</p><blockquote class=\"regrade-text\">%s</blockquote>\n", js(r, "reason"));
        answer_block(v, r);
        html_raw(v->b, "</article>\n");
    }
    if (mine && open)
        html_raw(v->b, "<p class=\"muted\">Your request is open: the course staff will answer "
                       "here.</p>\n");
    else if (mine && strcmp(js(sub, "status"), "graded") == 0) {
        html_fmt(v->b,
                 "<form class=\"stack\" method=\"post\" "
                 "action=\"/submissions/%lld/regrade-request\">",
                 id);
        csrf_input(v);
        html_fmt(v->b,
                 "<label for=\"rr-reason\">Think something was graded wrongly? Say what "
                 "and why (at most %d characters).</label>"
                 "<textarea id=\"rr-reason\" name=\"reason\" maxlength=\"%d\" required "
                 "rows=\"4\"></textarea><p><button type=\"submit\">Ask for a "
                 "regrade</button></p></form>\n",
                 REGRADE_REASON_MAX, REGRADE_REASON_MAX);
    } else if (mine)
        html_raw(v->b, "<p class=\"muted small\">Regrade requests are for graded submissions; "
                       "for a compile or runtime error, fix it and submit again.</p>\n");
    html_raw(v->b, "</section>\n");
}

static void filter_option(struct page_view *v, const char *value, const char *label,
                          const char *current)
{
    html_fmt(v->b, "<option value=\"%s\"%R>%s</option>", value,
             strcmp(value, current) == 0 ? " selected" : "", label);
}

static int page_inbox(struct page_view *v)
{
    struct api_error e;
    json_t *o = NULL, *r;
    size_t i;
    const char *status = http_request_query(v->req, "status");
    const char *lab = http_request_query(v->req, "lab");
    const char *user = http_request_query(v->req, "user");
    int staff = auth_role_staff(v->user->role);
    if (!status)
        status = staff ? "open" : "all";
    if (regrade_request_list(v->app, v->user, status, lab, user, 0, &o, &e))
        return api_err(v, &e);
    snprintf(v->title, sizeof(v->title), "Regrade requests");
    html_fmt(v->b, "<h1>Regrade requests</h1>\n<p class=\"muted\">%R</p>\n",
             staff ? "Students ask about a graded submission; answer each one (the student "
                     "reads the answer on their submission's page), and regrade or override "
                     "the score in the same step. Open requests come first."
                   : "Your requests and the staff's answers. Ask from a graded submission's "
                     "page.");
    html_raw(v->b,
             "<form class=\"filters\" method=\"get\" action=\"/regrades\">"
             "<label for=\"rr-status\">Status</label><select id=\"rr-status\" name=\"status\">");
    filter_option(v, "open", "open", status);
    filter_option(v, "answered", "answered", status);
    filter_option(v, "all", "all", status);
    html_raw(v->b, "</select><label for=\"rr-lab\">Lab</label><select id=\"rr-lab\" name=\"lab\">");
    filter_option(v, "", "any", lab ? lab : "");
    for (size_t k = 0; k < v->app->nlabs; k++)
        filter_option(v, v->app->labs[k].lab.name, v->app->labs[k].lab.name, lab ? lab : "");
    html_raw(v->b, "</select>");
    if (staff)
        html_fmt(v->b,
                 "<label for=\"rr-user\">Student</label><input type=\"text\" id=\"rr-user\" "
                 "name=\"user\" value=\"%s\" maxlength=\"64\">",
                 user ? user : "");
    html_raw(v->b, "<button type=\"submit\">Filter</button></form>\n");
    json_t *arr = json_object_get(o, "requests");
    if (json_array_size(arr) == 0) {
        html_raw(v->b, "<p class=\"muted\" id=\"regrades-empty\">No requests match.</p>\n");
        json_decref(o);
        return PAGE_VIEW_RENDERED;
    }
    html_raw(v->b, "<div class=\"scroll\"><table id=\"regrades\" class=\"regrades\"><thead><tr>"
                   "<th>#</th><th>Status</th><th>Submission</th><th>Lab</th><th>Student</th>"
                   "<th>Asked</th><th>Reason</th></tr></thead><tbody>\n");
    json_array_foreach(arr, i, r)
    {
        const char *reason = js(r, "reason");
        html_fmt(v->b, "<tr class=\"%R\"><td><a href=\"/regrades/%lld\">%lld</a></td><td>",
                 strcmp(js(r, "status"), "open") == 0 ? "open" : "answered", ji(r, "id"),
                 ji(r, "id"));
        status_badge(v, js(r, "status"));
        html_fmt(v->b,
                 "</td><td><a href=\"/submissions/%lld\">#%lld</a></td><td>%s</td><td>%s</td><td>",
                 ji(r, "submission"), ji(r, "submission"), js(r, "lab"), js(r, "user"));
        put_when_iso(v->b, js(r, "created_at"));
        html_raw(v->b, "</td><td class=\"regrade-reason\">");
        /* An excerpt: at most 160 bytes, cut at a character boundary. */
        size_t len = strlen(reason), cut = len > 160 ? 160 : len;
        while (cut < len && ((unsigned char)reason[cut] & 0xc0) == 0x80)
            cut--;
        html_textn(v->b, reason, cut);
        if (cut < len)
            html_raw(v->b, "&hellip;");
        html_raw(v->b, "</td></tr>\n");
    }
    html_raw(v->b, "</tbody></table></div>\n");
    json_decref(o);
    return PAGE_VIEW_RENDERED;
}

/* One request; problem (NULL: none) is why the answer form failed: shown
 * above it, with what was typed kept. */
/* The staff's answer form of request rid (sub: its submission); after a
 * failed try (problem not NULL) the problem first and the typed values. */
static void answer_form(struct page_view *v, long long rid, json_t *sub,
                        const struct api_error *problem)
{
    const char *ans = problem ? v->field(v->page, "answer") : NULL;
    const char *act = problem ? v->field(v->page, "action") : NULL;
    const char *sc = problem ? v->field(v->page, "score") : NULL;
    char max[32];
    if (!act)
        act = "none";
    snprintf(max, sizeof(max), "%g", json_number_value(json_object_get(sub, "max_score")));
    html_raw(v->b, "<h2>Answer</h2>");
    if (problem) {
        html_fmt(v->b, "<div class=\"notice bad\" role=\"alert\" id=\"problem\"><p>That did not "
                       "work: %s Your answer is kept below.</p></div>\n", problem->message);
        v->status = problem->status ? problem->status : 500;
    }
    html_fmt(v->b, "<form class=\"stack regrade-form\" method=\"post\" action=\"/regrades/%lld/answer\">",
             rid);
    csrf_input(v);
    html_fmt(v->b,
             "<label for=\"rr-answer\">Answer (the student reads it)</label>"
             "<textarea id=\"rr-answer\" name=\"answer\" maxlength=\"%d\" required "
             "rows=\"4\">%s</textarea><fieldset><legend>And</legend>"
             "<label><input type=\"radio\" name=\"action\" value=\"none\"%R> keep the "
             "score</label>"
             "<label><input type=\"radio\" name=\"action\" value=\"regrade\"%R> regrade (put it "
             "back in the queue)</label>"
             "<label><input type=\"radio\" name=\"action\" value=\"override\"%R> override the "
             "score</label></fieldset>"
             "<label for=\"rr-score\">New score (for an override, out of %s)</label>"
             "<input type=\"number\" id=\"rr-score\" name=\"score\" step=\"any\" min=\"0\" value=\"%s\">"
             "<p><button type=\"submit\">Send the answer</button></p></form>\n",
             REGRADE_ANSWER_MAX, ans ? ans : "", strcmp(act, "regrade") && strcmp(act, "override") ? " checked" : "",
             strcmp(act, "regrade") == 0 ? " checked" : "", strcmp(act, "override") == 0 ? " checked" : "",
             max, sc ? sc : "");
}

static int page_request(struct page_view *v, long long rid, const struct api_error *problem)
{
    struct api_error e;
    json_t *r = NULL, *sub = NULL;
    if (regrade_request_get(v->app, v->user, rid, &r, &e))
        return api_err(v, &e);
    long long sid = ji(r, "submission");
    snprintf(v->title, sizeof(v->title), "Regrade request #%lld", rid);
    html_fmt(v->b, "<h1>Regrade request #%lld</h1>\n", rid);
    if (http_request_query(v->req, "done"))
        html_raw(v->b, "<div class=\"notice good\"><p>The answer is saved, recorded in the audit "
                       "log, and shown to the student.</p></div>\n");
    html_raw(v->b, "<p class=\"meta\">");
    status_badge(v, js(r, "status"));
    html_fmt(v->b,
             " &middot; <a href=\"/submissions/%lld\">submission #%lld</a> (lab %s) by "
             "<strong>%s</strong> &middot; asked ",
             sid, sid, js(r, "lab"), js(r, "user"));
    put_when_iso(v->b, js(r, "created_at"));
    if (api_submission_get(v->app, v->user, sid, &sub, &e) == 0) {
        json_t *sc = json_object_get(sub, "score");
        html_raw(v->b, " &middot; score ");
        put_score(v->b, sc, json_object_get(sub, "max_score"));
    }
    html_fmt(v->b, " &middot; <a href=\"/submissions/%lld/source\">source</a></p>\n", sid);
    html_fmt(v->b,
             "<h2>The student's reason</h2><blockquote class=\"regrade-text\" "
             "id=\"regrade-reason\">%s</blockquote>\n",
             js(r, "reason"));
    answer_block(v, r);
    if (auth_role_staff(v->user->role) && strcmp(js(r, "status"), "open") == 0)
        answer_form(v, rid, sub, problem);
    html_raw(v->b, "<p><a href=\"/regrades\">All regrade requests</a></p>\n");
    json_decref(sub);
    json_decref(r);
    return PAGE_VIEW_RENDERED;
}

/* page_request again (page_view_again) with the problem: n the request,
 * s[0] the problem's message. */
static int request_again(struct page_view *v, const struct page_again *a)
{
    struct api_error e = {.status = a->status};
    snprintf(e.message, sizeof(e.message), "%s", a->s[0]);
    return page_request(v, a->n, &e);
}

/* The writer stored (or refused) the request or the answer (regrade.h):
 * the 303 to where it shows, or the page saying what went wrong. */
static int written_view(struct page_view *v, const void *arg, int rc)
{
    const struct regrade_write *w = arg;
    if (rc)
        return api_err(v, &w->e);
    if (w->answering)
        snprintf(v->location, sizeof(v->location), "/regrades/%lld?done=1", w->rid);
    else
        snprintf(v->location, sizeof(v->location), "/submissions/%lld#regrade", w->sid);
    return PAGE_VIEW_RENDERED;
}

static int written(struct app *app, struct http_request *req, const struct regrade_write *w, int rc)
{
    return page_view_written(app, req, written_view, w, rc);
}

static int post_answer(struct page_view *v, long long rid)
{
    struct api_error e;
    if (v->post_ok(v->page))
        return PAGE_VIEW_DONE;
    const char *score_s = v->field(v->page, "score");
    char *end = NULL;
    double score = score_s && *score_s ? strtod(score_s, &end) : NAN;
    if (end && *end)
        score = NAN;
    if (regrade_answer_start(v->app, v->req, v->user, rid, v->field(v->page, "answer"),
                             v->field(v->page, "action"), score, written, &e))
        return e.status == 400 ? page_view_again(v, request_again,
                                                 &(struct page_again){
                                                     .status = 400, .n = rid, .s = {e.message}})
                               : api_err(v, &e);
    return PAGE_VIEW_DEFERRED; /* answered by written */
}

static int post_open(struct page_view *v, long long sid)
{
    struct api_error e;
    if (v->post_ok(v->page))
        return PAGE_VIEW_DONE;
    if (regrade_open_start(v->app, v->req, v->user, sid, v->field(v->page, "reason"), written,
                           &e))
        return api_err(v, &e);
    return PAGE_VIEW_DEFERRED; /* answered by written */
}

static long long seg_id(const char *s)
{
    return page_parse_id(s);
}

int regrade_page_route(struct page_view *v, char **seg, size_t n)
{
    long long id;
    if (n == 3 && v->post && strcmp(seg[0], "submissions") == 0 &&
        strcmp(seg[2], "regrade-request") == 0 && (id = seg_id(seg[1])) != 0)
        return post_open(v, id);
    if (n == 0 || strcmp(seg[0], "regrades") != 0)
        return PAGE_VIEW_NOT_MINE;
    if (n == 1 && v->get)
        return page_inbox(v);
    if ((id = seg_id(n >= 2 ? seg[1] : NULL)) == 0)
        return PAGE_VIEW_NOT_MINE;
    if (n == 2 && v->get)
        return page_request(v, id, NULL);
    if (n == 3 && v->post && strcmp(seg[2], "answer") == 0) {
        if (!auth_role_staff(v->user->role))
            return page_view_error(v, 403, "Not allowed",
                                   "Only the course staff answer regrade requests.");
        return post_answer(v, id);
    }
    return PAGE_VIEW_NOT_MINE;
}

/* Every route of this file goes through regrade_page_route (pageview.h). */
static int r_regrade(struct page *p)
{
    return page_view_run(p, regrade_page_route);
}

const struct route regrade_page_routes[] = {
    PAGE_ROUTE(HTTP_POST, "/submissions/{id}/regrade-request", r_regrade),
    PAGE_ROUTE_READ(HTTP_GET, "/regrades", r_regrade),
    PAGE_ROUTE_READ(HTTP_GET, "/regrades/{id}", r_regrade),
    PAGE_ROUTE(HTTP_POST, "/regrades/{id}/answer", r_regrade),
};
const size_t regrade_page_nroutes = sizeof(regrade_page_routes) / sizeof(regrade_page_routes[0]);
