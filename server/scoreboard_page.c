/*
 * scoreboard_page.c - a lab's scoreboard, its charts and CSV, and the student's
 * choice between pseudonym and name.
 */
#include "server/page.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "server/scoreboard.h"
#include "server/staff_write.h"
#include "server/submission.h"
#include "server/course.h"
#include "server/views.h"

struct sb_row {
    json_t *row;
    double score, speedup;
    long long submission;
};

static int sb_by_speedup(const void *a, const void *b)
{
    const struct sb_row *x = a, *y = b;
    if (x->speedup != y->speedup)
        return x->speedup < y->speedup ? 1 : -1;
    return x->score < y->score ? 1 : x->score > y->score ? -1 : 0;
}

/* The latest override of a submission (staff see its reason). 1 if any. */


/* The student's scoreboard name and the toggle between pseudonym and real
 * name; the form returns to lab's scoreboard (or to /labs when lab is ""). */
void put_show_name(struct page *p, const char *lab)
{
    char pseudo[65];

    if (p->user.show_name)
        html_fmt(&p->b, "<div class=\"notice\"><p>On scoreboards other students see you as "
                        "<strong>%s</strong> (your real name).</p>", p->user.display_name);
    else if (lab[0] && auth_pseudonym(p->app->db, p->user.id, lab, 0, pseudo) == 0)
        html_fmt(&p->b, "<div class=\"notice\"><p>On this scoreboard other students see you as "
                        "<strong>%s</strong> (a pseudonym; you have a different one in each lab).</p>",
                 pseudo);
    else
        html_raw(&p->b, "<div class=\"notice\"><p>On scoreboards other students see you under a "
                        "pseudonym, a different one in each lab.</p>");
    html_raw(&p->b, "<form class=\"inline\" method=\"post\" action=\"/me/show-name\">");
    page_csrf_field(p);
    html_fmt(&p->b, "<input type=\"hidden\" name=\"show\" value=\"%R\"><input type=\"hidden\" name=\"lab\" value=\"%s\">"
                    "<button type=\"submit\" class=\"secondary\" id=\"show-name\">%R</button></form></div>\n",
             p->user.show_name ? "0" : "1", lab,
             p->user.show_name ? "Hide my name (use my pseudonym)" : "Show my real name instead");
}

/* One row of the scoreboard table: the viewer's own row (my_rank, with
 * its submission my_sub) marked, links and override reasons for staff. */
static void put_scoreboard_row(struct page *p, const char *lab, const struct sb_row *v,
                               int my_rank, long long my_sub)
{
    json_t *row = v->row;
    const char *name = page_jstr(row, "display_name");
    int me = my_rank > 0 && (int)page_jnum(row, "rank", 0) == my_rank;
    long long sub = page_is_staff(p) ? v->submission : me ? my_sub : 0;
    char reason[520];
    int ov = sub > 0 && submission_override_reason(p->app, sub, reason, sizeof(reason));

    html_fmt(&p->b, "<tr%R><td class=\"num\" data-value=\"%d\">%d</td><td>", me ? " class=\"me\"" : "",
             (int)page_jnum(row, "rank", 0), (int)page_jnum(row, "rank", 0));
    if (page_is_staff(p))
        html_fmt(&p->b, "<a href=\"/submissions?user=%u&amp;lab=%u\">%s</a> <span class=\"muted small\">%s</span>",
                 page_jstr(row, "user"), lab, name[0] ? name : page_jstr(row, "user"), page_jstr(row, "user"));
    else
        html_fmt(&p->b, "%s%R", name[0] ? name : page_jstr(row, "user"), me ? " <span class=\"muted\">(you)</span>" : "");
    html_fmt(&p->b, "</td><td class=\"num\" data-value=\"%f\">", v->score);
    if (sub > 0)
        html_fmt(&p->b, "<a href=\"/submissions/%lld\">", sub);
    put_score(&p->b, json_object_get(row, "score"), json_object_get(row, "max_score"));
    if (sub > 0)
        html_raw(&p->b, "</a>");
    if (ov && page_is_staff(p))
        html_fmt(&p->b, " <span class=\"badge warn\" title=\"%s\">override: %s</span>", reason, reason);
    else if (ov && me) /* others' adjustments are their business */
        html_raw(&p->b, " <span class=\"badge warn\">adjusted by staff</span>");
    html_fmt(&p->b, "</td><td class=\"num\" data-value=\"%f\">", v->speedup);
    if (v->speedup >= 0)
        html_fmt(&p->b, "%.2f&times;", v->speedup);
    else
        html_raw(&p->b, "<span class=\"muted\">-</span>");
    html_raw(&p->b, "</td><td>");
    if (page_is_staff(p))
        put_when_iso(&p->b, page_jstr(row, "submitted_at"));
    else /* students see the day only */
        html_fmt(&p->b, "<time datetime=\"%s\">%s</time>", page_jstr(row, "submitted_on"),
                 page_jstr(row, "submitted_on"));
    html_raw(&p->b, "</td></tr>\n");
}

static int page_scoreboard(struct page *p, const char *lab)
{
    struct api_error e;
    json_t *sb = NULL, *rows, *r;
    const char *sort = http_request_query(p->req, "sort");
    int by_speed = sort && strcmp(sort, "speedup") == 0;
    struct sb_row *v = NULL;
    size_t n, i;
    struct app_lab *al = app_lab_find(p->app, lab);
    int my_rank = 0;
    long long my_sub = 0;

    if (api_scoreboard(p->app, &p->user, lab, &sb, &e) != 0)
        return page_api_error(p, &e);
    /* A student's rows carry no ids: their own row is found by rank. */
    if (!page_is_staff(p))
        api_scoreboard_mine(p->app, &p->user, lab, &my_rank, &my_sub);
    rows = json_object_get(sb, "rows");
    n = json_array_size(rows);
    v = calloc(n + 1, sizeof(*v));
    if (v == NULL) {
        json_decref(sb);
        return page_error(p, 500, "Out of memory", "Try again in a minute.");
    }
    json_array_foreach(rows, i, r) {
        v[i].row = r;
        v[i].score = page_jnum(r, "score", -1);
        v[i].speedup = page_jnum(r, "speedup", -1);
        v[i].submission = (long long)page_jnum(r, "submission", 0);
    }
    if (by_speed)
        qsort(v, n, sizeof(*v), sb_by_speedup);
    page_begin(p, "Scoreboard");
    html_fmt(&p->b, "<h1>Scoreboard <span class=\"muted\">&middot; <a href=\"/labs/%u\">%s</a></span></h1>\n",
             lab, al ? al->lab.title : lab);
    if (p->user.role == AUTH_STUDENT) {
        put_show_name(p, lab);
    } else {
        html_raw(&p->b, "<p class=\"muted small\">Staff view: real names. Students see pseudonyms "
                        "unless they chose to show their name.</p>\n");
    }
    html_fmt(&p->b, "<p class=\"small\">Sort by: <a href=\"/labs/%u/scoreboard\"%R>score</a> &middot; "
                    "<a href=\"/labs/%u/scoreboard?sort=speedup\"%R>speedup</a>",
             lab, by_speed ? "" : " aria-current=\"true\"", lab, by_speed ? " aria-current=\"true\"" : "");
    if (page_is_staff(p))
        html_fmt(&p->b, " &middot; <a href=\"/labs/%u/scoreboard.csv\">CSV</a> &middot; "
                        "<a href=\"/labs/%u/stats\">charts</a>", lab, lab);
    html_raw(&p->b, "</p>\n");
    if (n == 0) {
        html_raw(&p->b, "<p class=\"muted\">Nobody has a graded submission yet.</p>\n");
    } else {
        html_fmt(&p->b, TABLE_BOX("Scoreboard") "<table id=\"scoreboard\" class=\"scoreboard sortable\"><thead><tr>"
                        "<th class=\"num\" data-sort=\"num\">Rank</th><th data-sort=\"text\">%R</th>"
                        "<th class=\"num\" data-sort=\"num\"%R>Score</th>"
                        "<th class=\"num\" data-sort=\"num\"%R>Speedup</th><th>Submitted</th></tr></thead><tbody>\n",
                 page_is_staff(p) ? "Student" : "Name",
                 by_speed ? "" : " aria-sort=\"descending\"", by_speed ? " aria-sort=\"descending\"" : "");
        for (i = 0; i < n; i++)
            put_scoreboard_row(p, lab, &v[i], my_rank, my_sub);
        html_raw(&p->b, "</tbody></table></div>\n");
    }
    free(v);
    json_decref(sb);
    return page_end(p, 200);
}

/* The writer stored the opt-in (staff_write.h): back to the scoreboard
 * the form was on (w->lab, checked when the form came), or the labs. */
static int show_name_done(struct app *app, struct http_request *req, const struct staff_write *w,
                          int rc)
{
    struct page p;
    char loc[160];
    page_open(&p, app, req);
    if (w->lab[0] && app_lab_find(app, w->lab))
        snprintf(loc, sizeof(loc), "/labs/%s/scoreboard", w->lab);
    else
        snprintf(loc, sizeof(loc), "/labs");
    int r = rc ? page_api_error(&p, &w->e) : page_redirect(&p, loc);
    page_free(&p);
    return r;
}

static int post_show_name(struct page *p)
{
    struct api_error e;
    const char *show, *lab;

    if (page_post_check(p) != 0)
        return HTTP_DONE;
    show = page_field(p, "show");
    lab = page_field(p, "lab");
    struct staff_write w = {
        .kind = STAFF_SHOW_NAME, .viewer = p->user, .show = show && strcmp(show, "1") == 0};
    if (lab && app_lab_find(p->app, lab))
        snprintf(w.lab, sizeof(w.lab), "%s", lab);
    if (staff_write_start(p->app, p->req, &w, show_name_done, &e) != 0)
        return page_api_error(p, &e);
    return HTTP_DEFERRED; /* answered by show_name_done */
}

static int page_stats(struct page *p, const char *lab)
{
    struct api_error e;
    json_t *sb = NULL, *r;
    double *scores, *speedups;
    size_t n, i, ns = 0;
    double maxs = 0;

    if (!page_is_staff(p))
        return page_error(p, 403, "Not allowed", "The charts are for course staff.");
    if (api_scoreboard(p->app, &p->user, lab, &sb, &e) != 0)
        return page_api_error(p, &e);
    n = json_array_size(json_object_get(sb, "rows"));
    scores = calloc(n + 1, sizeof(double));
    speedups = calloc(n + 1, sizeof(double));
    if (!scores || !speedups) {
        free(scores);
        free(speedups);
        json_decref(sb);
        return page_error(p, 500, "Out of memory", "Try again in a minute.");
    }
    json_array_foreach(json_object_get(sb, "rows"), i, r) {
        scores[i] = page_jnum(r, "score", NAN);
        if (page_jnum(r, "max_score", 0) > maxs)
            maxs = page_jnum(r, "max_score", 0);
        if (json_is_number(json_object_get(r, "speedup")))
            speedups[ns++] = page_jnum(r, "speedup", 0);
    }
    page_begin(p, "Charts");
    html_fmt(&p->b, "<h1>Charts <span class=\"muted\">&middot; <a href=\"/labs/%u\">%s</a></span></h1>\n", lab, lab);
    html_fmt(&p->b, "<p>Each student's best submission: %zu students, %zu with a timing.</p>\n", n, ns);
    html_raw(&p->b, "<div class=\"grid2\"><div><h2>Scores</h2>\n");
    html_svg_histogram(&p->b, "Distribution of best scores", scores, n, 10, 0, maxs > 0 ? maxs : 100, "score");
    html_raw(&p->b, "</div><div><h2>Speedups</h2>\n");
    html_svg_histogram(&p->b, "Distribution of speedups", speedups, ns, 10, 0, 0, "speedup (higher is faster)");
    html_raw(&p->b, "</div></div>\n");
    free(scores);
    free(speedups);
    json_decref(sb);
    return page_end(p, 200);
}

static int page_scoreboard_csv(struct page *p, const char *lab)
{
    struct api_error e;
    struct http_buf out = {0};

    if (api_scoreboard_csv(p->app, &p->user, lab, &out, &e) != 0) {
        http_buf_free(&out);
        return page_api_error(p, &e);
    }
    page_security_headers(p->req);
    http_response_header(p->req, "Cache-Control", "no-store");
    http_response_header(p->req, "Content-Disposition", "attachment; filename=\"scoreboard.csv\"");
    http_response_body(p->req, 200, "text/csv; charset=utf-8", out.data ? out.data : "", out.len);
    http_buf_free(&out);
    return HTTP_DONE;
}

static int r_scoreboard(struct page *p)
{
    return page_scoreboard(p, http_request_param(p->req, "lab"));
}

static int r_scoreboard_csv(struct page *p)
{
    return page_scoreboard_csv(p, http_request_param(p->req, "lab"));
}

static int r_stats(struct page *p)
{
    return page_stats(p, http_request_param(p->req, "lab"));
}

const struct route scoreboard_page_routes[] = {
    PAGE_ROUTE_READ(HTTP_GET, "/labs/{lab}/scoreboard", r_scoreboard),
    PAGE_ROUTE_READ(HTTP_GET, "/labs/{lab}/scoreboard.csv", r_scoreboard_csv),
    PAGE_ROUTE_READ(HTTP_GET, "/labs/{lab}/stats", r_stats),
    PAGE_ROUTE(HTTP_POST, "/me/show-name", post_show_name),
};
const size_t scoreboard_page_nroutes =
    sizeof(scoreboard_page_routes) / sizeof(scoreboard_page_routes[0]);
