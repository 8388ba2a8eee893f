/*
 * similarity_page.c - the similarity pages (pageview.h), staff only:
 *   GET  /labs/{lab}/similarity          the latest run: most similar pairs
 *   POST /labs/{lab}/similarity          start a run
 *   GET  /labs/{lab}/similarity/{pair}   both sources side by side, the
 *                                        matching regions marked
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/api.h"
#include "server/auth.h"
#include "server/html.h"
#include "server/page.h"
#include "server/pageview.h"
#include "server/views.h"
#include "server/similarity.h"
#include "server/submission.h"

#define REGION_COLORS 6

static const char *js(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

static int api_err(struct page_view *v, const struct api_error *e)
{
    return page_view_error(v, e->status ? e->status : 500,
                           e->status == 409 ? "Already running" : "That did not work", e->message);
}

/* "alice (#12, 80% of it in the other)"; sim reports one direction of a
 * pair, so a side without a figure shows none. */
static void person(struct page_view *v, const json_t *who)
{
    double pct = json_number_value(json_object_get(who, "percent"));
    html_fmt(v->b, "%s (<a href=\"/submissions/%lld\">#%lld</a>", js(who, "user"),
             (long long)json_integer_value(json_object_get(who, "submission")),
             (long long)json_integer_value(json_object_get(who, "submission")));
    if (pct > 0)
        html_fmt(v->b, ", %.0f%% of it found in the other", pct);
    html_raw(v->b, ")");
}

static int page_report(struct page_view *v, const char *lab)
{
    struct api_error e;
    json_t *o = NULL, *p;
    size_t i;
    if (similarity_report(v->app, v->user, lab, &o, &e))
        return api_err(v, &e);
    json_t *run = json_object_get(o, "run");
    snprintf(v->title, sizeof(v->title), "Similarity: %s", lab);
    html_fmt(v->b,
             "<h1>Similarity <span class=\"muted\">&middot; <a href=\"/labs/%u\">%s</a>"
             "</span></h1>\n",
             lab, lab);
    html_raw(v->b, "<p class=\"small\">Compares each student's best submission with every other "
                   "one using Debian's <code>similarity-tester</code> (sim_c for CUDA C, sim_text "
                   "for Python). Code that matches the lab's starter file is left out first. A "
                   "high percentage is a reason to look, not a verdict: read both sources.</p>\n");
    if (json_is_object(run) && strcmp(js(run, "status"), "running") == 0)
        v->status = 200;
    html_fmt(v->b, "<form method=\"post\" action=\"/labs/%u/similarity\">", lab);
    html_fmt(v->b, "<input type=\"hidden\" name=\"csrf\" value=\"%s\">", v->user->csrf);
    html_raw(v->b, "<button type=\"submit\">Run the check now</button></form>\n");
    if (!json_is_object(run)) {
        html_raw(v->b, "<p class=\"muted\" id=\"sim-none\">No check has run for this lab "
                       "yet.</p>\n");
        json_decref(o);
        return PAGE_VIEW_RENDERED;
    }
    html_fmt(v->b,
             "<p class=\"meta\" id=\"sim-run\">Run #%lld &middot; <span class=\"badge "
             "%R\">%s</span> &middot; %s over %d file(s)%R &middot; started ",
             (long long)json_integer_value(json_object_get(run, "id")),
             strcmp(js(run, "status"), "done") == 0 ? "good" : "warn", js(run, "status"),
             js(run, "tool"), (int)json_integer_value(json_object_get(run, "files")),
             json_is_true(json_object_get(run, "starter_excluded")) ? ", starter excluded" : "");
    put_when_iso(v->b, js(run, "started_at"));
    html_fmt(v->b, " by %s", *js(run, "by") ? js(run, "by") : "the scheduler (after the deadline)");
    if (*js(run, "detail"))
        html_fmt(v->b, " &middot; %s", js(run, "detail"));
    html_raw(v->b, "</p>\n");
    json_t *pairs = json_object_get(o, "pairs");
    if (json_array_size(pairs) == 0) {
        /* "No similar pairs" only once the check is done. */
        html_raw(v->b, strcmp(js(run, "status"), "running") == 0
                           ? "<p class=\"muted\" id=\"sim-running\">The check is still running: "
                             "reload this page in a minute for its pairs.</p>\n"
                       : strcmp(js(run, "status"), "failed") == 0
                           ? "<p class=\"muted\" id=\"sim-failed\">The check failed (the reason is "
                             "above); run it again.</p>\n"
                           : "<p class=\"muted\">No similar pairs.</p>\n");
        json_decref(o);
        return PAGE_VIEW_RENDERED;
    }
    html_raw(v->b, "<div class=\"scroll\"><table id=\"sim-pairs\" class=\"sim-pairs\"><thead><tr>"
                   "<th class=\"num\">Similarity</th><th>Student A</th><th>Student B</th>"
                   "<th><span class=\"sr-only\">Compare</span></th></tr></thead><tbody>\n");
    json_array_foreach(pairs, i, p)
    {
        json_t *a = json_object_get(p, "a"), *b = json_object_get(p, "b");
        double pct = json_number_value(json_object_get(p, "percent"));
        html_fmt(v->b,
                 "<tr><td class=\"num\"><span class=\"sim-bar\"><span class=\"sim-fill "
                 "sim-w%d\"></span></span> %.0f%%</td>",
                 (int)(pct / 10 > 10 ? 10 : pct / 10), pct);
        html_raw(v->b, "<td>");
        person(v, a);
        html_raw(v->b, "</td><td>");
        person(v, b);
        html_raw(v->b, "</td>");
        html_fmt(v->b, "<td><a href=\"/labs/%u/similarity/%lld\">side by side</a></td></tr>\n", lab,
                 (long long)json_integer_value(json_object_get(p, "id")));
    }
    html_raw(v->b, "</tbody></table></div>\n");
    json_decref(o);
    return PAGE_VIEW_RENDERED;
}

/* The region (0-based) that covers line of side ("a" or "b"), or -1. */
static int region_of(const json_t *regions, const char *side, int line)
{
    size_t i;
    json_t *r;
    json_array_foreach(regions, i, r)
    {
        json_t *span = json_object_get(r, side);
        if (line >= json_integer_value(json_array_get(span, 0)) &&
            line <= json_integer_value(json_array_get(span, 1)))
            return (int)i;
    }
    return -1;
}

/* One source as a listing; lines in a region carry its color class. */
static void listing(struct page_view *v, const char *side, const char *src, size_t len,
                    const json_t *regions)
{
    html_fmt(v->b, "<table class=\"src sim-src\" id=\"src-%R\"><tbody>\n", side);
    size_t start = 0;
    for (int line = 1; start < len || (start == len && line == 1); line++) {
        const char *nl = memchr(src + start, '\n', len - start);
        size_t end = nl ? (size_t)(nl - src) : len;
        int r = region_of(regions, side, line);
        if (r >= 0)
            html_fmt(v->b, "<tr class=\"sim-match sim-r%d\" id=\"%R-L%d\">", r % REGION_COLORS,
                     side, line);
        else
            html_fmt(v->b, "<tr id=\"%R-L%d\">", side, line);
        html_fmt(v->b, "<td class=\"ln\">%d</td><td class=\"code\">", line);
        html_textn(v->b, src + start, end - start);
        html_raw(v->b, "</td></tr>\n");
        if (!nl)
            break;
        start = end + 1;
    }
    html_raw(v->b, "</tbody></table>\n");
}

static int page_pair(struct page_view *v, const char *lab, long long pid)
{
    struct api_error e;
    json_t *p = NULL, *r;
    char *src[2] = {NULL, NULL}, fname[2][72];
    size_t len[2] = {0, 0}, i;
    static const char *const sides[2] = {"a", "b"};
    if (similarity_pair(v->app, v->user, pid, &p, &e))
        return api_err(v, &e);
    if (strcmp(js(p, "lab"), lab) != 0) {
        json_decref(p);
        return page_view_error(v, 404, "Not found", "This pair belongs to another lab.");
    }
    for (int s = 0; s < 2; s++) {
        long long sub =
            json_integer_value(json_object_get(json_object_get(p, sides[s]), "submission"));
        if (api_submission_source(v->app, v->user, sub, &src[s], &len[s], fname[s], &e)) {
            free(src[0]);
            json_decref(p);
            return api_err(v, &e);
        }
    }
    json_t *a = json_object_get(p, "a"), *b = json_object_get(p, "b");
    json_t *regions = json_object_get(p, "regions");
    snprintf(v->title, sizeof(v->title), "Similarity: %s and %s", js(a, "user"), js(b, "user"));
    html_fmt(v->b, "<h1>%s and %s <span class=\"muted\">&middot; %.0f%% similar</span></h1>\n",
             js(a, "user"), js(b, "user"), json_number_value(json_object_get(p, "percent")));
    html_fmt(v->b, "<p><a href=\"/labs/%u/similarity\">All pairs of %s</a></p>\n", lab, lab);
    html_raw(v->b, "<p class=\"small\">Each colour is one region that sim found in both "
                   "files. Lines that match the lab's starter file were left out before the "
                   "comparison, so they are never marked.</p>\n");
    html_raw(v->b, "<div class=\"scroll\"><table id=\"sim-regions\"><thead><tr><th>Region</th>"
                   "<th>Lines in A</th><th>Lines in B</th><th class=\"num\">Tokens</th></tr>"
                   "</thead><tbody>\n");
    json_array_foreach(regions, i, r)
    {
        json_t *ra = json_object_get(r, "a"), *rb = json_object_get(r, "b");
        int a0 = (int)json_integer_value(json_array_get(ra, 0));
        int b0 = (int)json_integer_value(json_array_get(rb, 0));
        html_fmt(v->b,
                 "<tr><td><span class=\"sim-swatch sim-r%d\"></span> %d</td>"
                 "<td><a href=\"#a-L%d\">%d&ndash;%d</a></td>"
                 "<td><a href=\"#b-L%d\">%d&ndash;%d</a></td><td class=\"num\">%d</td></tr>\n",
                 (int)(i % REGION_COLORS), (int)i + 1, a0, a0,
                 (int)json_integer_value(json_array_get(ra, 1)), b0, b0,
                 (int)json_integer_value(json_array_get(rb, 1)),
                 (int)json_integer_value(json_object_get(r, "tokens")));
    }
    html_raw(v->b, "</tbody></table></div>\n<div class=\"sim-side\">\n");
    for (int s = 0; s < 2; s++) {
        json_t *who = json_object_get(p, sides[s]);
        long long sub = json_integer_value(json_object_get(who, "submission"));
        html_fmt(v->b,
                 "<section class=\"sim-col\" aria-label=\"%s\"><h2>%s: %s</h2>"
                 "<p class=\"small\"><a href=\"/submissions/%lld\">submission #%lld</a> "
                 "&middot; <code>%s</code></p>\n",
                 js(who, "user"), s ? "B" : "A", js(who, "user"), sub, sub, fname[s]);
        html_raw(v->b, "<div class=\"scroll\">");
        listing(v, sides[s], src[s], len[s], regions);
        html_raw(v->b, "</div></section>\n");
    }
    html_raw(v->b, "</div>\n");
    free(src[0]);
    free(src[1]);
    json_decref(p);
    return PAGE_VIEW_RENDERED;
}

/* How a start ended, for started_view. */
struct sim_started {
    const char *lab;
    long long id;             /* the run, when it started */
    const struct api_error *e; /* why not, else NULL */
};

static int started_view(struct page_view *v, const void *arg, int rc)
{
    const struct sim_started *s = arg;
    if (rc)
        return api_err(v, s->e);
    snprintf(v->location, sizeof(v->location), "/labs/%.64s/similarity?run=%lld", s->lab, s->id);
    return PAGE_VIEW_RENDERED;
}

/* The start is over (similarity.h): the 303 to the lab's report, or the
 * problem's page. */
static int started(struct app *app, struct http_request *req, const char *lab, long long id,
                   const struct api_error *e)
{
    struct sim_started s = {lab, id, e};
    return page_view_written(app, req, started_view, &s, e ? -EINVAL : 0);
}

static int post_start(struct page_view *v, const char *lab)
{
    struct api_error e;
    if (v->post_ok(v->page))
        return PAGE_VIEW_DONE;
    if (similarity_start(v->app, v->req, v->user, lab, started, &e))
        return api_err(v, &e);
    return PAGE_VIEW_DEFERRED; /* answered by started */
}

int similarity_page_route(struct page_view *v, char **seg, size_t n)
{
    if (n < 3 || strcmp(seg[0], "labs") != 0 || strcmp(seg[2], "similarity") != 0)
        return PAGE_VIEW_NOT_MINE;
    if (!auth_role_staff(v->user->role))
        return page_view_error(v, 403, "Not allowed",
                               "Similarity checks are for the course staff.");
    if (n == 3 && v->get)
        return page_report(v, seg[1]);
    if (n == 3 && v->post)
        return post_start(v, seg[1]);
    if (n == 4 && v->get) {
        long long pid = page_parse_id(seg[3]);
        if (pid <= 0)
            return PAGE_VIEW_NOT_MINE;
        return page_pair(v, seg[1], pid);
    }
    return PAGE_VIEW_NOT_MINE;
}

/* Every route of this file goes through similarity_page_route (pageview.h). */
static int r_similarity(struct page *p)
{
    return page_view_run(p, similarity_page_route);
}

const struct route similarity_page_routes[] = {
    PAGE_ROUTE_READ(HTTP_GET, "/labs/{lab}/similarity", r_similarity),
    PAGE_ROUTE(HTTP_POST, "/labs/{lab}/similarity", r_similarity),
    PAGE_ROUTE_READ(HTTP_GET, "/labs/{lab}/similarity/{pair}", r_similarity),
};
const size_t similarity_page_nroutes = sizeof(similarity_page_routes) / sizeof(similarity_page_routes[0]);
