/*
 * submission_page.c - a submission (live progress, result, compiler log, timing,
 * overrides), its source, staff actions on it, and the submissions list.
 */
#include "server/page.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "status.h"
#include "server/markdown.h"
#include "server/pageview.h"
#include "server/regrade.h"
#include "server/result_page.h"
#include "server/runner.h"
#include "server/staff_write.h"
#include "server/submission.h"
#include "server/views.h"

/* A small table of submissions (history, lab page, TA list). */
void put_submissions_table(struct page *p, json_t *subs, int show_user, int show_lab)
{
    json_t *s;
    size_t i;

    html_raw(&p->b, TABLE_BOX("Submissions") "<table class=\"subs sortable\"><thead><tr><th data-sort=\"num\">#</th>");
    if (show_lab)
        html_raw(&p->b, "<th data-sort=\"text\">Lab</th>");
    if (show_user)
        html_raw(&p->b, "<th data-sort=\"text\">Student</th>");
    html_raw(&p->b, "<th data-sort=\"text\">File</th><th data-sort=\"text\">Status</th>"
                    "<th class=\"num\" data-sort=\"num\">Score</th><th data-sort=\"num\">Submitted</th>"
                    "</tr></thead><tbody>\n");
    json_array_foreach(subs, i, s) {
        long long id = (long long)page_jnum(s, "id", 0);
        double created = page_iso_to_time(page_jstr(s, "created_at"));

        html_fmt(&p->b, "<tr><td data-value=\"%lld\"><a href=\"/submissions/%lld\">#%lld</a></td>",
                 id, id, id);
        if (show_lab)
            html_fmt(&p->b, "<td><a href=\"/labs/%u\">%s</a></td>", page_jstr(s, "lab"), page_jstr(s, "lab"));
        if (show_user)
            html_fmt(&p->b, "<td>%s</td>", page_jstr(s, "user"));
        html_fmt(&p->b, "<td><code>%s</code>%R</td><td>", page_jstr(s, "filename"),
                 json_is_true(json_object_get(s, "late")) ? " <span class=\"badge warn\">late</span>" : "");
        put_status(&p->b, page_jstr(s, "status"));
        html_fmt(&p->b, "</td><td class=\"num\" data-value=\"%f\">", page_jnum(s, "score", -1));
        put_score(&p->b, json_object_get(s, "score"), json_object_get(s, "max_score"));
        html_fmt(&p->b, "</td><td data-value=\"%.0f\">", created);
        put_when(&p->b, created);
        html_raw(&p->b, "</td></tr>\n");
    }
    html_raw(&p->b, "</tbody></table></div>\n");
}

/* The phases of grading in order (STATUS_QUEUED ... STATUS_TIMING); the
 * live section marks where a job is: its index, 5 past them all. */
static int phase_index(const char *st)
{
    int s = status_parse(st);
    return s >= STATUS_QUEUED && s <= STATUS_TIMING ? s : 5;
}

/* Minutes since the last runner claimed or reported, or -1 if none ever. */
static double runner_idle_s(struct page *p)
{
    double t = runner_last_seen(p->app);
    return t > 0 ? db_now() - t : -1;
}

/* One cell of the profile table: a metric (times scale, with decimals
 * places), or "-". */
static void put_metric_cell(struct page *p, json_t *m, const char *name, double scale,
                            int decimals)
{
    json_t *v = json_object_get(m, name);
    char buf[32] = "-";
    if (json_is_number(v))
        snprintf(buf, sizeof(buf), "%.*f", decimals, json_number_value(v) * scale);
    html_fmt(&p->b, "<td class=\"num\">%s</td>", buf);
}

/* Sectors per global load request: sectors / requests, or "-". */
static void put_ratio_cell(struct page *p, json_t *m, const char *num, const char *den)
{
    json_t *a = json_object_get(m, num), *b = json_object_get(m, den);
    char buf[32] = "-";
    if (json_is_number(a) && json_is_number(b) && json_number_value(b) > 0)
        snprintf(buf, sizeof(buf), "%.1f", json_number_value(a) / json_number_value(b));
    html_fmt(&p->b, "<td class=\"num\">%s</td>", buf);
}

/* The Nsight Compute profile of the timed case (docs/runner.md "Profiling
 * hints"): its hints, then a small table of the numbers behind them. Feedback
 * only; "unavailable" is ours and says so. */
static void put_profile(struct page *p, json_t *pf)
{
    json_t *hints = json_object_get(pf, "hints"), *kernels = json_object_get(pf, "kernels"), *t;
    size_t i;

    if (!json_is_object(pf))
        return;
    html_raw(&p->b, "<h2>Profile</h2>\n");
    if (strcmp(page_jstr(pf, "status"), "pending") == 0) {
        /* The score came first; the profile follows as an update of this
         * submission when the GPU has room (docs/runner.md). */
        html_raw(&p->b, "<p id=\"profile-pending\" class=\"muted\">Profile pending: your score "
                        "is final; Nsight Compute's hints come when the GPU has room (usually "
                        "within a minute). Reload the page to see them.</p>\n");
        return;
    }
    if (strcmp(page_jstr(pf, "status"), "skipped") == 0) {
        html_fmt(&p->b, "<p class=\"muted\">%s (it never changes the grade)</p>\n",
                 page_jstr(pf, "message"));
        return;
    }
    if (strcmp(page_jstr(pf, "status"), "ok") != 0) {
        html_fmt(&p->b, "<p class=\"muted\">Profiling was unavailable for this submission (our "
                        "problem, not yours; it never changes the grade): %s</p>\n",
                 page_jstr(pf, "message"));
        return;
    }
    html_raw(&p->b, "<p class=\"small\">Nsight Compute on the timed case, once. Feedback only: "
                    "it does not change your score.</p>\n");
    if (json_array_size(hints) > 0) {
        html_raw(&p->b, "<ul class=\"hints profile-hints\">\n");
        json_array_foreach(hints, i, t) {
            html_raw(&p->b, "<li>");
            markdown_render_inline(&p->b, page_jstr(t, "text"));
            html_raw(&p->b, "</li>\n");
        }
        html_raw(&p->b, "</ul>\n");
    } else {
        html_raw(&p->b, "<p>No problem found in the profile.</p>\n");
    }
    if (json_array_size(kernels) == 0)
        return;
    html_raw(&p->b, TABLE_BOX("Profile metrics") "<table class=\"profile\"><thead><tr>"
                    "<th>Kernel</th><th class=\"num\">Time (ms)</th><th class=\"num\">DRAM %</th>"
                    "<th class=\"num\">SM %</th><th class=\"num\">Occupancy %</th>"
                    "<th class=\"num\">Sectors / load</th><th class=\"num\">Threads / warp</th>"
                    "<th class=\"num\">Blocks</th></tr></thead><tbody>\n");
    json_array_foreach(kernels, i, t) {
        json_t *m = json_object_get(t, "metrics");
        if (i >= 6)
            break; /* keep it small: the hints name what matters */
        html_fmt(&p->b, "<tr><td><code>%s</code></td>", page_jstr(t, "name"));
        put_metric_cell(p, m, "gpu__time_duration.sum", 1e-6, 3);
        put_metric_cell(p, m, "dram__throughput.avg.pct_of_peak_sustained_elapsed", 1, 0);
        put_metric_cell(p, m, "sm__throughput.avg.pct_of_peak_sustained_elapsed", 1, 0);
        put_metric_cell(p, m, "sm__warps_active.avg.pct_of_peak_sustained_active", 1, 0);
        put_ratio_cell(p, m, "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
                       "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum");
        put_metric_cell(p, m, "smsp__thread_inst_executed_per_inst_executed.ratio", 1, 1);
        put_metric_cell(p, m, "launch__grid_size", 1, 0);
        html_raw(&p->b, "</tr>\n");
    }
    html_raw(&p->b, "</tbody></table></div>\n");
}

/* The result (result_page.c), then the profile (right after the speed and
 * the hints it deepens), the student's standing, and where it was graded. */
static void put_result(struct page *p, json_t *sub)
{
    json_t *r = json_object_get(sub, "result"), *cg = json_object_get(r, "cugrade");

    if (!json_is_object(r))
        return;
    result_put(p, sub);
    put_profile(p, json_object_get(cg, "profile"));
    result_put_standing(p, sub);
    if (page_jstr(cg, "gpu")[0])
        html_fmt(&p->b, "<p class=\"muted small\">Graded on %s with rubric version %d.</p>\n",
                 page_jstr(cg, "gpu"), (int)page_jnum(sub, "rubric_version", 0));
}

/* "Status: <badge> · <score>", an override marked beside its score. */
static void put_status_line(struct page *p, json_t *sub, const char *st)
{
    html_raw(&p->b, "<p>Status: ");
    put_status(&p->b, st);
    /* A system error has no score to show (never "0 / 0": it is ours). */
    if (json_is_number(json_object_get(sub, "score")) && strcmp(st, "system_error") != 0 &&
        page_jnum(sub, "max_score", 0) > 0) {
        html_raw(&p->b, " &middot; <span class=\"score-big\" id=\"score\">");
        put_score(&p->b, json_object_get(sub, "score"), json_object_get(sub, "max_score"));
        html_raw(&p->b, "</span>");
        json_t *r = json_object_get(sub, "result");
        /* The tests below add up to the graded score, not to the override. */
        if (json_is_true(json_object_get(sub, "overridden")) && json_is_number(json_object_get(r, "score"))) {
            html_raw(&p->b, " <span class=\"badge warn\">overridden</span> <span class=\"muted\">(graded ");
            put_score(&p->b, json_object_get(r, "score"), json_object_get(r, "max_score"));
            html_raw(&p->b, ")</span>");
        }
    }
    html_raw(&p->b, "</p>\n");
}

/* The live part of a submission page: the part app.js swaps in place. */
static void put_live(struct page *p, json_t *sub)
{
    const char *st = page_jstr(sub, "status");
    long long id = (long long)page_jnum(sub, "id", 0);
    int final = status_final(st);
    int pi = phase_index(st);
    char title[96];

    snprintf(title, sizeof(title), "#%lld %s - cugrade", id, page_status_words(st));
    html_fmt(&p->b, "<section id=\"live\" data-final=\"%d\" data-src=\"/submissions/%lld?part=live\" "
                    "data-title=\"%s\" aria-live=\"polite\">\n",
             final, id, title);
    put_status_line(p, sub, st);
    long long newer = 0;
    if (strcmp(st, "superseded") == 0 &&
        sscanf(page_jstr(sub, "detail"), "replaced by submission %lld", &newer) == 1)
        html_fmt(&p->b, "<div class=\"notice\" id=\"superseded\"><p>You submitted again to this lab "
                        "while this one was still waiting, so <a href=\"/submissions/%lld\">submission "
                        "%lld</a> took its place in the queue. This one was never graded and does "
                        "not count against your hourly limit.</p></div>\n",
                 newer, newer);
    if (!final) {
        double idle = runner_idle_s(p);
        long long eta = (long long)page_jnum(sub, "eta_seconds", 0);
        long long pos = (long long)page_jnum(sub, "queue_position", 0);

        html_fmt(&p->b, "<div class=\"progress p%d\" role=\"progressbar\" aria-valuemin=\"0\" "
                        "aria-valuemax=\"5\" aria-valuenow=\"%d\"><div></div></div>\n", pi, pi);
        html_raw(&p->b, "<ol class=\"phases\">");
        for (int i = 0; i < 5; i++)
            html_fmt(&p->b, "<li class=\"%R\">%s</li>", i < pi ? "done" : i == pi ? "now" : "",
                     page_status_words(status_name(i)));
        html_raw(&p->b, "</ol>\n");
        if (strcmp(st, "queued") == 0) {
            if (pos > 1)
                html_fmt(&p->b, "<p id=\"queue-position\">Position in the queue: <strong>%lld</strong> "
                                "(%lld job%R ahead of yours).</p>\n",
                         pos, pos - 1, pos - 1 == 1 ? "" : "s");
            else
                html_raw(&p->b, "<p id=\"queue-position\">Position in the queue: <strong>1</strong> "
                                "(yours is next).</p>\n");
            if (eta > 0)
                html_fmt(&p->b, "<p id=\"queue-eta\">Expected to start in about <strong>%lld "
                                "%s</strong> (at the rate submissions were graded in the last "
                                "minutes).</p>\n",
                         eta < 90 ? eta : (eta + 59) / 60, eta < 90 ? "s" : "min");
            if (idle < 0 || idle > 120)
                html_raw(&p->b, "<div class=\"notice warn\"><p>No GPU runner is connected right now. "
                                "Your submission is saved and keeps its place; it will be graded as "
                                "soon as a runner comes back. You do not need to submit again.</p></div>\n");
        } else {
            html_fmt(&p->b, "<p>Now: <strong>%s</strong>%R%s%R</p>\n", page_status_words(st),
                     page_jstr(sub, "detail")[0] ? " (" : "", page_jstr(sub, "detail"),
                     page_jstr(sub, "detail")[0] ? ")" : "");
        }
        if ((int)page_jnum(sub, "attempts", 0) > 1)
            html_fmt(&p->b, "<p class=\"muted small\">Attempt %d: an earlier attempt failed on our "
                            "side and does not count against you.</p>\n",
                     (int)page_jnum(sub, "attempts", 0));
        html_fmt(&p->b, "<p class=\"small muted\"><span id=\"live-status\">This page updates by itself.</span> "
                        "<noscript>It reloads every few seconds.</noscript> "
                        "<a href=\"/submissions/%lld\">Reload now</a></p>\n", id);
    } else {
        if (strcmp(st, "system_error") == 0)
            html_raw(&p->b, "<div class=\"notice warn\"><p>Grading failed on our side several times. "
                            "This does not count against you; the staff can see it and will regrade "
                            "it. You may also submit again.</p></div>\n");
        if (strcmp(st, "system_error") == 0 && !page_is_staff(p)) {
            /* What failed is ours and names our hosts' paths: staff only. */
            html_raw(&p->b, "</section>\n");
            return;
        }
        else if (strcmp(st, "compile_error") == 0)
            html_raw(&p->b, "<div class=\"notice bad\"><p>Your file did not compile. The compiler "
                            "output below links each error to its line in your source.</p></div>\n");
        else if (strcmp(st, "timeout") == 0 && !result_has_summary(sub))
            html_raw(&p->b, "<div class=\"notice bad\"><p>Your program ran past the time limit. Look "
                            "for a loop that never ends or a kernel launched with far too many "
                            "threads.</p></div>\n");
        else if (strcmp(st, "runtime_error") == 0 && !result_has_summary(sub))
            html_raw(&p->b, "<div class=\"notice bad\"><p>Your program crashed or a kernel failed to "
                            "launch. The cases and sanitizer findings below say where.</p></div>\n");
        put_result(p, sub);
    }
    html_raw(&p->b, "</section>\n");
}

/* Staff: overrides of a submission, newest first. */
static void put_overrides(struct page *p, long long id)
{
    json_t *ovs = NULL, *o;
    size_t i;
    int any = 0;

    if (submission_overrides(p->app, id, &ovs) != 0)
        return;
    json_array_foreach(ovs, i, o) {
        if (!any)
            html_raw(&p->b, TABLE_BOX("Score overrides") "<table class=\"overrides\"><thead><tr><th class=\"num\">Score</th>"
                            "<th>Reason</th><th>By</th><th>When</th></tr></thead><tbody>\n");
        any = 1;
        html_raw(&p->b, "<tr><td class=\"num\">");
        put_score(&p->b, json_object_get(o, "score"), NULL);
        html_fmt(&p->b, "</td><td>%s</td><td>%s</td><td>", page_jstr(o, "reason"), page_jstr(o, "by"));
        put_when(&p->b, page_jnum(o, "created_at", 0));
        html_raw(&p->b, "</td></tr>\n");
    }
    json_decref(ovs);
    if (any)
        html_raw(&p->b, "</tbody></table></div>\n");
    else
        html_raw(&p->b, "<p class=\"muted\">No overrides.</p>\n");
}

/* A failed override form: why, and what was typed (kept in the form). */
struct override_form {
    const char *problem, *score, *reason;
};

/* The submission page; of (NULL: none) is a failed override to show. */
static int page_submission(struct page *p, long long id, const struct override_form *of)
{
    struct api_error e;
    json_t *sub = NULL;
    const char *part = http_request_query(p->req, "part");
    const char *done = http_request_query(p->req, "done");
    char title[48];

    if (api_submission_get(p->app, &p->user, id, &sub, &e) != 0)
        return page_api_error(p, &e);
    if (part && strcmp(part, "live") == 0) {
        /* Just the live section, for app.js: same escaping, same headers. */
        html_raw(&p->b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>live</title></head><body>\n");
        put_live(p, sub);
        html_raw(&p->b, "</body></html>\n");
        json_decref(sub);
        return page_send(p, 200);
    }
    if (!status_final(page_jstr(sub, "status")))
        p->refresh = 3;
    else if (strcmp(page_jstr(json_object_get(json_object_get(json_object_get(sub, "result"),
                                                              "cugrade"),
                                              "profile"),
                              "status"),
                    "pending") == 0)
        p->refresh = 10; /* the profile's update comes later */
    snprintf(title, sizeof(title), "Submission #%lld", id);
    page_begin(p, title);
    html_fmt(&p->b, "<h1>Submission #%lld <span class=\"muted\">&middot; <a href=\"/labs/%u\">%s</a></span></h1>\n",
             id, page_jstr(sub, "lab"), page_jstr(sub, "lab"));
    if (done && strcmp(done, "override") == 0)
        html_raw(&p->b, "<div class=\"notice good\"><p>The override is saved and recorded in the audit log.</p></div>\n");
    else if (done && strcmp(done, "regrade") == 0)
        html_raw(&p->b, "<div class=\"notice good\"><p>The submission is back in the queue for regrading.</p></div>\n");
    html_fmt(&p->b, "<p class=\"meta\">File <code id=\"filename\">%s</code> (%d bytes) &middot; submitted ",
             page_jstr(sub, "filename"), (int)page_jnum(sub, "size", 0));
    put_when_iso(&p->b, page_jstr(sub, "created_at"));
    if (page_is_staff(p))
        html_fmt(&p->b, " by <strong>%s</strong>", page_jstr(sub, "user"));
    if (json_is_true(json_object_get(sub, "late")))
        html_raw(&p->b, " &middot; <span class=\"badge warn\">late</span>");
    html_fmt(&p->b, " &middot; <a href=\"/submissions/%lld/source\">View source</a></p>\n", id);
    put_live(p, sub);
    {
        struct page_view v;
        page_view_open(p, &v, &p->b);
        regrade_page_section(&v, sub);
    }

    if (page_is_staff(p)) {
        html_raw(&p->b, "<h2>Staff</h2>\n<div class=\"grid2\"><div class=\"panel\"><h3>Override the score</h3>\n");
        if (of)
            html_fmt(&p->b, "<div class=\"notice bad\" role=\"alert\" id=\"override-problem\"><p>%s "
                            "Your input is kept below.</p></div>\n", of->problem);
        html_fmt(&p->b, "<form class=\"stack\" method=\"post\" action=\"/submissions/%lld/override\">", id);
        page_csrf_field(p);
        html_fmt(&p->b, "<label for=\"ov-score\">New score (out of %.0f)</label>"
                        "<input type=\"number\" id=\"ov-score\" name=\"score\" step=\"any\" min=\"0\" required "
                        "value=\"%s\">"
                        "<label for=\"ov-reason\">Reason (students see the new score; staff see the reason)</label>"
                        "<input type=\"text\" id=\"ov-reason\" name=\"reason\" required maxlength=\"500\" "
                        "value=\"%s\">"
                        "<p><button type=\"submit\">Save override</button></p></form>\n",
                 page_jnum(sub, "max_score", 100), of && of->score ? of->score : "",
                 of && of->reason ? of->reason : "");
        put_overrides(p, id);
        html_raw(&p->b, "</div><div class=\"panel\"><h3>Regrade</h3>\n<p class=\"small\">Puts the "
                        "submission back in the queue with the current rubric. The old result stays "
                        "until the new one arrives.</p>\n");
        html_fmt(&p->b, "<form method=\"post\" action=\"/submissions/%lld/regrade\">", id);
        page_csrf_field(p);
        html_raw(&p->b, "<button type=\"submit\" class=\"secondary\">Regrade</button></form></div></div>\n");
    }
    json_decref(sub);
    return page_end(p, of ? 400 : 200);
}

/* Line numbers to mark in a source listing: compile errors and sanitizer
 * findings of the submission's result. */
static size_t collect_marks(json_t *sub, int *marks, size_t max)
{
    json_t *cg = json_object_get(json_object_get(sub, "result"), "cugrade"), *t, *f;
    const char *log = page_jstr(cg, "compile_log");
    size_t n = 0, i, j;

    for (const char *s = log; *s && n < max; s++) {
        if (*s == '(' && s[1] >= '1' && s[1] <= '9') {
            char *endp;
            long line = strtol(s + 1, &endp, 10);
            if (*endp == ')' && line > 0 && line < 1000000 && strstr(endp, "error") &&
                (strchr(endp, '\n') == NULL || strstr(endp, "error") < strchr(endp, '\n')))
                marks[n++] = (int)line;
        }
    }
    json_array_foreach(json_object_get(cg, "sanitizer"), i, t)
        json_array_foreach(json_object_get(t, "findings"), j, f)
            if (n < max && page_jnum(f, "line", 0) > 0)
                marks[n++] = (int)page_jnum(f, "line", 0);
    return n;
}

static int page_source(struct page *p, long long id)
{
    struct api_error e;
    char *src = NULL, filename[72];
    size_t len = 0, nmarks = 0;
    json_t *sub = NULL;
    int marks[256];

    if (api_submission_source(p->app, &p->user, id, &src, &len, filename, &e) != 0)
        return page_api_error(p, &e);
    if (api_submission_get(p->app, &p->user, id, &sub, &e) == 0)
        nmarks = collect_marks(sub, marks, 256);
    page_begin(p, "Source");
    html_fmt(&p->b, "<h1>Source of <a href=\"/submissions/%lld\">submission #%lld</a></h1>\n"
                    "<p class=\"meta\"><code>%s</code> &middot; %zu bytes &middot; lab %s%R%s</p>\n",
             id, id, filename, len, page_jstr(sub, "lab"), page_is_staff(p) ? " &middot; by " : "",
             page_is_staff(p) ? page_jstr(sub, "user") : "");
    if (nmarks)
        html_raw(&p->b, "<p class=\"small\">Highlighted lines have a compiler error or a sanitizer finding.</p>\n");
    html_source(&p->b, src, marks, nmarks);
    free(src);
    json_decref(sub);
    return page_end(p, 200);
}

/* page_submission again with a failed override (page_again): n the id,
 * s[0..2] the problem, the score and the reason typed. */
static int submission_again(struct page *p, const struct page_again *a)
{
    struct override_form of = {a->s[0], a->s[1], a->s[2]};
    return page_submission(p, a->n, &of);
}

/* The writer stored (or refused) a form's override or regrade
 * (staff_write.h): to the submission's page, or the page again with why. */
static int staff_done(struct app *app, struct http_request *req, const struct staff_write *w,
                      int rc)
{
    struct page p;
    char loc[80];
    int r;
    page_open(&p, app, req);
    if (rc && (w->kind != STAFF_OVERRIDE || w->e.status != 400)) {
        r = page_api_error(&p, &w->e);
    } else if (rc) { /* 400, with what was typed, rendered off the loop */
        page_form_parse(&p);
        struct page_again a = {
            .n = w->id, .s = {w->e.message, page_field(&p, "score"), page_field(&p, "reason")}};
        r = page_again(&p, submission_again, &a);
    } else {
        snprintf(loc, sizeof(loc), "/submissions/%lld?done=%s", w->id,
                 w->kind == STAFF_OVERRIDE ? "override" : "regrade");
        r = page_redirect(&p, loc);
    }
    page_free(&p);
    return r;
}

static int post_override(struct page *p, long long id)
{
    struct api_error e;
    const char *score_s, *reason;
    char *endp;
    double score;

    if (page_post_check(p) != 0)
        return HTTP_DONE;
    score_s = page_field(p, "score");
    reason = page_field(p, "reason");
    score = score_s ? strtod(score_s, &endp) : NAN;
    struct override_form of = {NULL, score_s, reason};
    struct staff_write w = {
        .kind = STAFF_OVERRIDE, .viewer = p->user, .id = id, .score = score, .reason = reason};
    if (score_s == NULL || endp == score_s || *endp != '\0' || !isfinite(score) || score < 0)
        of.problem = "The override needs a score: enter it as a number (for example 85 or 92.5), "
                     "then save again.";
    else if (reason == NULL || reason[strspn(reason, " \t\r\n")] == '\0')
        of.problem = "The override needs a reason: write why the score changes (it goes into the "
                     "audit log), then save again.";
    else if (staff_write_start(p->app, p->req, &w, staff_done, &e) != 0) {
        if (e.status != 400)
            return page_api_error(p, &e);
        of.problem = e.message;
    } else {
        return HTTP_DEFERRED; /* answered by staff_done */
    }
    /* 400, with what was typed, rendered off the loop */
    struct page_again a = {.n = id, .s = {of.problem, of.score, of.reason}};
    return page_again(p, submission_again, &a);
}

static int post_regrade(struct page *p, long long id)
{
    struct api_error e;

    if (page_post_check(p) != 0)
        return HTTP_DONE;
    struct staff_write w = {.kind = STAFF_REGRADE, .viewer = p->user, .id = id};
    if (staff_write_start(p->app, p->req, &w, staff_done, &e) != 0)
        return page_api_error(p, &e);
    return HTTP_DEFERRED; /* answered by staff_done */
}

static int page_submissions(struct page *p)
{
    struct api_error e;
    json_t *subs = NULL;
    const char *lab = http_request_query(p->req, "lab");
    const char *user = http_request_query(p->req, "user");
    const char *status = http_request_query(p->req, "status");
    const char *off_s = http_request_query(p->req, "offset");
    int offset = off_s ? atoi(off_s) : 0, limit = 100;

    if (lab && !*lab) lab = NULL;
    if (user && !*user) user = NULL;
    if (status && !*status) status = NULL;
    if (offset < 0) offset = 0;
    if (!page_is_staff(p))
        user = p->user.name;
    if (api_submissions_list(p->app, &p->user, lab, user, status, limit, offset, &subs, &e) != 0)
        return page_api_error(p, &e);
    page_begin(p, page_is_staff(p) ? "Submissions" : "My submissions");
    html_fmt(&p->b, "<h1>%R</h1>\n", page_is_staff(p) ? "All submissions" : "My submissions");
    html_raw(&p->b, "<form class=\"filters\" method=\"get\" action=\"/submissions\">");
    html_raw(&p->b, "<label>Lab<select name=\"lab\"><option value=\"\">all labs</option>");
    for (size_t i = 0; i < p->app->nlabs; i++) {
        const char *n = p->app->labs[i].lab.name;
        html_fmt(&p->b, "<option value=\"%s\"%R>%s</option>", n, lab && strcmp(lab, n) == 0 ? " selected" : "", n);
    }
    html_raw(&p->b, "</select></label>");
    if (page_is_staff(p))
        html_fmt(&p->b, "<label>Student<input type=\"text\" name=\"user\" value=\"%s\" placeholder=\"user name\"></label>",
                 user);
    html_raw(&p->b, "<label>Status<select name=\"status\"><option value=\"\">any status</option>");
    for (int i = 0; i < STATUS_COUNT; i++)
        html_fmt(&p->b, "<option value=\"%s\"%R>%s</option>", status_name(i),
                 status && strcmp(status, status_name(i)) == 0 ? " selected" : "",
                 page_status_words(status_name(i)));
    html_raw(&p->b, "</select></label><button type=\"submit\">Filter</button></form>\n");
    if (json_array_size(json_object_get(subs, "submissions")) == 0)
        html_raw(&p->b, "<p class=\"muted\">No submissions match.</p>\n");
    else
        put_submissions_table(p, json_object_get(subs, "submissions"), page_is_staff(p), 1);
    if (json_array_size(json_object_get(subs, "submissions")) == (size_t)limit) {
        html_raw(&p->b, "<p><a href=\"/submissions?");
        if (lab) html_fmt(&p->b, "lab=%u&amp;", lab);
        if (user && page_is_staff(p)) html_fmt(&p->b, "user=%u&amp;", user);
        if (status) html_fmt(&p->b, "status=%u&amp;", status);
        html_fmt(&p->b, "offset=%d\">Older submissions</a></p>\n", offset + limit);
    }
    json_decref(subs);
    return page_end(p, 200);
}

static int r_submission(struct page *p)
{
    long long id = page_parse_id(http_request_param(p->req, "id"));
    return id ? page_submission(p, id, NULL) : -1;
}

static int r_source(struct page *p)
{
    long long id = page_parse_id(http_request_param(p->req, "id"));
    return id ? page_source(p, id) : -1;
}

static int r_override(struct page *p)
{
    long long id = page_parse_id(http_request_param(p->req, "id"));
    if (!id)
        return -1;
    return page_is_staff(p) ? post_override(p, id)
                            : page_error(p, 403, "Not allowed", "Only course staff override scores.");
}

static int r_regrade(struct page *p)
{
    long long id = page_parse_id(http_request_param(p->req, "id"));
    if (!id)
        return -1;
    return page_is_staff(p)
               ? post_regrade(p, id)
               : page_error(p, 403, "Not allowed", "Only course staff regrade; submit again instead.");
}

const struct route submission_page_routes[] = {
    PAGE_ROUTE_READ(HTTP_GET, "/submissions", page_submissions),
    PAGE_ROUTE_READ(HTTP_GET, "/submissions/{id}", r_submission),
    PAGE_ROUTE_READ(HTTP_GET, "/submissions/{id}/source", r_source),
    PAGE_ROUTE(HTTP_POST, "/submissions/{id}/override", r_override),
    PAGE_ROUTE(HTTP_POST, "/submissions/{id}/regrade", r_regrade),
};
const size_t submission_page_nroutes =
    sizeof(submission_page_routes) / sizeof(submission_page_routes[0]);
