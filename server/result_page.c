/*
 * result_page.c - the result of a graded submission on its page, built to
 * teach (docs/web.md "The result page"): a box that says what to fix first,
 * the tests (each message once; not-run rows of a file that never ran
 * folded into one; partial credit as "partial"; hidden tests as one
 * placeholder row so the rows add up), the correctness numbers, sanitizer
 * findings grouped by line with each hint once, the speed on a log scale
 * against each reference with the next tier, then the other hints and the
 * student's standing (rank, latest submissions). The
 * profile and the footer stay submission_page.c's.
 */
#include "server/result_page.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "status.h"
#include "server/hidden.h"
#include "server/markdown.h"
#include "server/scoreboard.h"
#include "server/submission.h"

/* What the page already said, so nothing is said twice. */
struct said {
    const char *hint;     /* the hint in the top box (NULL: none) */
    const char *message;  /* the failing case's message in the top box */
};

/* Text with runs of hex digits after "0x" (device addresses, which differ
 * in every finding and teach nothing) shortened to "0x...". */
static void put_noaddr(struct html_buf *b, const char *s)
{
    const char *p = s;
    while (*p) {
        const char *x = strstr(p, "0x");
        if (!x) {
            html_text(b, p);
            return;
        }
        size_t n = strspn(x + 2, "0123456789abcdefABCDEF");
        html_textn(b, p, (size_t)(x - p));
        html_raw(b, n >= 4 ? "0x&hellip;" : "0x");
        if (n < 4)
            html_textn(b, x + 2, n);
        p = x + 2 + n;
    }
}

/* A compiler log with each "file(LINE): ..." turned into a link to that
 * line of the source listing. Everything else is escaped text. */
static void put_compile_log(struct html_buf *b, const char *log, long long id)
{
    const char *s = log, *nl;

    html_raw(b, "<pre class=\"log\" tabindex=\"0\" aria-label=\"Compiler output\">");
    while (*s) {
        size_t n;
        const char *paren, *close;
        long line = 0;

        nl = strchr(s, '\n');
        n = nl ? (size_t)(nl - s) : strlen(s);
        paren = memchr(s, '(', n);
        close = paren ? memchr(paren, ')', n - (size_t)(paren - s)) : NULL;
        if (paren && close && close > paren + 1 && close - paren < 9) {
            char *endp;
            line = strtol(paren + 1, &endp, 10);
            if (endp != close || line <= 0)
                line = 0;
        }
        html_fmt(b, "<span class=\"%R\">",
                 memmem(s, n, "error", 5) ? "err" : memmem(s, n, "warning", 7) ? "warn" : "");
        if (line > 0) {
            html_textn(b, s, (size_t)(paren - s));
            html_fmt(b, "(<a href=\"/submissions/%lld/source#L%ld\">%ld</a>)", id, line, line);
            html_textn(b, close + 1, n - (size_t)(close + 1 - s));
        } else {
            html_textn(b, s, n);
        }
        html_raw(b, "</span>\n");
        s = nl ? nl + 1 : s + n;
    }
    html_raw(b, "</pre>\n");
}

/* A test's feedback line without its " Hint: ..." tail (the hint is shown
 * once, in the top box or the hints list). */
static void put_output(struct html_buf *b, const char *out)
{
    const char *h = strstr(out, " Hint: ");
    if (!h)
        h = strstr(out, "; Hint: ");
    html_textn(b, out, h ? (size_t)(h - out) : strlen(out));
}

/* The hint the catalogue gave about case name, else NULL. */
static const char *case_hint(json_t *cg, const char *name)
{
    json_t *d;
    size_t i;
    json_array_foreach(json_object_get(cg, "hint_details"), i, d)
        if (strcmp(page_jstr(d, "case"), name) == 0 && page_jstr(d, "text")[0])
            return page_jstr(d, "text");
    return NULL;
}

/* The first line of a compiler log that is an error, its length in *n and
 * its line number in *line (0 when it names none). */
static const char *first_error(const char *log, size_t *n, long *line)
{
    for (const char *s = log; *s;) {
        const char *nl = strchr(s, '\n');
        size_t len = nl ? (size_t)(nl - s) : strlen(s);
        if (memmem(s, len, "error", 5)) {
            const char *paren = memchr(s, '(', len);
            *line = paren ? strtol(paren + 1, NULL, 10) : 0;
            *n = len;
            return s;
        }
        s = nl ? nl + 1 : s + len;
    }
    return NULL;
}

/* 0 for a case the program never reached (the runner's "not run: ..."
 * message: it stopped before, or ran past its time limit). */
static int case_ran(json_t *c)
{
    return strncmp(page_jstr(c, "message"), "not run", 7) != 0;
}

/* The first sanitizer finding (its tool entry's finding object), or NULL. */
static json_t *first_finding(json_t *cg)
{
    json_t *t;
    size_t i;
    json_array_foreach(json_object_get(cg, "sanitizer"), i, t)
        if (json_array_size(json_object_get(t, "findings")) > 0)
            return json_array_get(json_object_get(t, "findings"), 0);
    return NULL;
}

/* 1 when a sanitizer of result r reported a finding (the Sanitizers
 * section lists them; the tests table points there). */
static int any_finding(json_t *r)
{
    return first_finding(json_object_get(r, "cugrade")) != NULL;
}

/* The top box's line link: "line N of your source". */
static void put_line_link(struct html_buf *b, long long id, long line)
{
    if (line > 0)
        html_fmt(b, "<p><a href=\"/submissions/%lld/source#L%ld\">Go to line %ld of your source</a></p>\n",
                 id, line, line);
}

/* The box at the top: the one thing to fix first, its message once, the
 * hint, a link to the line. Nothing when there is nothing to fix. */
static void put_fix_first(struct html_buf *b, json_t *sub, json_t *cg, struct said *said)
{
    const char *log = page_jstr(cg, "compile_log");
    long long id = (long long)page_jnum(sub, "id", 0);
    json_t *rej = json_object_get(cg, "rejection"), *c, *f = first_finding(cg);
    const char *hint = NULL;
    size_t i, n;
    long line = 0;

    if (json_is_object(rej)) {
        html_fmt(b, "<section class=\"fix-first\" id=\"fix-first\" aria-label=\"What to fix first\">"
                    "<h2>What to fix first</h2>\n<p>Your code uses <code>%s</code>: %s</p>\n",
                 page_jstr(rej, "symbol"), page_jstr(rej, "reason"));
        html_raw(b, "</section>\n");
        return;
    }
    const char *err = *log ? first_error(log, &n, &line) : NULL;
    if (err) {
        html_raw(b, "<section class=\"fix-first\" id=\"fix-first\" aria-label=\"What to fix first\">"
                    "<h2>What to fix first</h2>\n<p>The first compiler error:</p>\n<pre class=\"first-error\"><span class=\"err\">");
        html_textn(b, err, n);
        html_raw(b, "</span></pre>\n");
        put_line_link(b, id, line);
        html_raw(b, "<p class=\"small muted\">Later errors often follow from the first one: fix it, "
                    "then compile again.</p></section>\n");
        return;
    }
    c = NULL;
    for (i = 0; !c && i < json_array_size(json_object_get(cg, "cases")); i++)
        if (!json_is_true(json_object_get(json_array_get(json_object_get(cg, "cases"), i), "passed")) &&
            case_ran(json_array_get(json_object_get(cg, "cases"), i)))
            c = json_array_get(json_object_get(cg, "cases"), i);
    if (!c && !f)
        return; /* a timeout alone: the status notice says it */
    html_raw(b, "<section class=\"fix-first\" id=\"fix-first\" aria-label=\"What to fix first\">"
                "<h2>What to fix first</h2>\n");
    if (c) {
        said->message = page_jstr(c, "message");
        hint = case_hint(cg, page_jstr(c, "name"));
        html_fmt(b, "<p>Case <strong>%s</strong> is wrong", page_jstr(c, "name"));
        if (json_is_number(json_object_get(c, "first_bad_index")))
            html_fmt(b, " from element %lld on", (long long)page_jnum(c, "first_bad_index", 0));
        html_raw(b, said->message[0] ? ": " : ".");
        put_noaddr(b, said->message);
        html_raw(b, "</p>\n");
    } else {
        html_raw(b, "<p>The sanitizer found a problem: ");
        put_noaddr(b, page_jstr(f, "message"));
        html_raw(b, "</p>\n");
    }
    if (!hint && f && page_jstr(f, "hint")[0])
        hint = page_jstr(f, "hint");
    if (!hint && json_array_size(json_object_get(cg, "hints")) > 0)
        hint = json_string_value(json_array_get(json_object_get(cg, "hints"), 0));
    if (hint) {
        html_raw(b, "<p class=\"hint\"><strong>Hint:</strong> ");
        markdown_render_inline(b, hint);
        html_raw(b, "</p>\n");
        said->hint = hint;
    }
    if (f && c && page_jnum(f, "line", 0) > 0)
        html_fmt(b, "<p>The sanitizer found a problem on <a href=\"/submissions/%lld/source#L%ld\">line %ld of "
                    "your source</a>.</p>\n",
                 id, (long)page_jnum(f, "line", 0), (long)page_jnum(f, "line", 0));
    else if (f)
        put_line_link(b, id, (long)page_jnum(f, "line", 0));
    html_raw(b, "</section>\n");
}

/* A test's outcome: passed (all points), partial (some), not run, failed. */
static void put_outcome(struct html_buf *b, json_t *t)
{
    double s = page_jnum(t, "score", 0), m = page_jnum(t, "max_score", 0);
    const char *out = page_jstr(t, "output");
    if (strncmp(out, "not run", 7) == 0 || strncmp(out, "not timed", 9) == 0)
        html_raw(b, "<span class=\"badge neutral\">not run</span>");
    else if (m > 0 && s >= m)
        html_raw(b, "<span class=\"badge good\">passed</span>");
    else if (s > 0)
        html_raw(b, "<span class=\"badge warn\">partial</span>");
    else if (m <= 0 && strcmp(page_jstr(t, "status"), "passed") == 0)
        html_raw(b, "<span class=\"badge good\">passed</span>");
    else
        html_raw(b, "<span class=\"badge bad\">failed</span>");
}

/* Hidden tests of this result for the viewer: the rubric's correctness
 * lines the student may not see yet; *after: 1 when they all show after
 * the due date. */
static int hidden_count(struct page *p, json_t *sub, int *after)
{
    struct app_lab *l = app_lab_find(p->app, page_jstr(sub, "lab"));
    double due = 0, hard = 0;
    int n = 0;
    *after = 1;
    if (!l || page_is_staff(p))
        return 0;
    api_deadlines(p->app, l, p->user.id, &due, &hard);
    for (size_t i = 0; i < l->rubric.ncorrectness; i++) {
        const char *vis = l->rubric.correctness[i].visibility;
        if (!hidden_visible_to_student(vis, due, db_now())) {
            n++;
            *after &= vis && strcmp(vis, "after_due_date") == 0;
        }
    }
    return n;
}

/* The placeholder row of the hidden tests, so the rows add up to the
 * result's score: their points are the result's less the visible rows'. */
static void put_hidden_row(struct page *p, json_t *sub, json_t *r, double vis_score, double vis_max)
{
    int after, n = hidden_count(p, sub, &after);
    double hmax = page_jnum(r, "max_score", 0) - vis_max, hscore = page_jnum(r, "score", 0) - vis_score;
    char pts[64], max[32];
    if (n == 0 || hmax <= 0)
        return;
    if (hscore < 0)
        hscore = 0;
    snprintf(pts, sizeof(pts), "%g / %g", round(hscore * 100) / 100, hmax);
    snprintf(max, sizeof(max), "%g", hmax);
    html_fmt(&p->b, "<tr class=\"hidden-tests\"><td>%d hidden test%R</td><td><span class=\"badge neutral\">"
                    "hidden</span></td><td class=\"num\">%s</td><td>%s points, %R</td></tr>\n",
             n, n == 1 ? "" : "s", pts, max,
             after ? "shown after the due date" : "not shown to students");
}

static void put_tests(struct page *p, json_t *sub, json_t *r, const struct said *said)
{
    json_t *tests = json_object_get(r, "tests"), *t;
    const char *st = page_jstr(sub, "status");
    int fold = strcmp(st, "compile_error") == 0 || strcmp(st, "rejected") == 0;
    double vs = 0, vm = 0, ns = 0, nm = 0;
    size_t i, notrun = 0;

    html_raw(&p->b, "<h2>Tests</h2>\n" TABLE_BOX("Tests") "<table class=\"tests\"><thead><tr><th>Test</th>"
                    "<th>Result</th><th class=\"num\">Points</th><th>Details</th></tr></thead><tbody>\n");
    json_array_foreach(tests, i, t) {
        const char *out = page_jstr(t, "output");
        vs += page_jnum(t, "score", 0);
        vm += page_jnum(t, "max_score", 0);
        if (fold && (strncmp(out, "not run", 7) == 0 || strncmp(out, "not timed", 9) == 0)) {
            notrun++;
            ns += page_jnum(t, "score", 0);
            nm += page_jnum(t, "max_score", 0);
            continue;
        }
        html_fmt(&p->b, "<tr><td>%s</td><td>", page_jstr(t, "name"));
        put_outcome(&p->b, t);
        html_raw(&p->b, "</td><td class=\"num\">");
        put_score(&p->b, json_object_get(t, "score"), json_object_get(t, "max_score"));
        html_raw(&p->b, "</td><td class=\"small\">");
        if (said->message && said->message[0] && strstr(out, said->message))
            html_raw(&p->b, "<span class=\"muted\">see above</span>");
        else if (strncmp(out, "not run: ", 9) == 0 && out[9] && strstr(page_jstr(r, "output"), out + 9))
            html_raw(&p->b, "not run: your program stopped before this case (see above)");
        else if (strncmp(page_jstr(t, "name"), "sanitizer", 9) == 0 && any_finding(r))
            html_raw(&p->b, "<span class=\"muted\">the findings are under <a href=\"#sanitizers\">"
                            "Sanitizers</a> below</span>");
        else
            put_output(&p->b, out);
        html_raw(&p->b, "</td></tr>\n");
    }
    char pts[64];
    snprintf(pts, sizeof(pts), "%g / %g", ns, nm);
    if (notrun > 0)
        html_fmt(&p->b, "<tr class=\"not-run\"><td>%zu test%R</td><td><span class=\"badge neutral\">not run"
                        "</span></td><td class=\"num\">%s</td><td>not run: your file %R</td></tr>\n",
                 notrun, notrun == 1 ? "" : "s", pts,
                 strcmp(st, "rejected") == 0 ? "was rejected" : "did not compile");
    put_hidden_row(p, sub, r, vs, vm);
    html_raw(&p->b, "</tbody></table></div>\n");
}

/* The correctness cases' numbers (their messages are in the tests). */
static void put_cases(struct html_buf *b, json_t *cases)
{
    json_t *t;
    size_t i;
    html_raw(b, "<h2>Correctness cases</h2>\n" TABLE_BOX("Correctness cases") "<table class=\"cases\"><thead><tr>"
                "<th>Case</th><th>Result</th><th class=\"num\">Max abs error</th><th class=\"num\">Max rel error</th>"
                "<th>First wrong element</th></tr></thead><tbody>\n");
    json_array_foreach(cases, i, t) {
        int passed = json_is_true(json_object_get(t, "passed")), ran = case_ran(t);
        char ae[32] = "-", re[32] = "-", bad[40] = "-";
        if (json_is_number(json_object_get(t, "max_abs_err")))
            snprintf(ae, sizeof(ae), "%.3g", page_jnum(t, "max_abs_err", 0));
        if (json_is_number(json_object_get(t, "max_rel_err")))
            snprintf(re, sizeof(re), "%.3g", page_jnum(t, "max_rel_err", 0));
        if (json_is_number(json_object_get(t, "first_bad_index")))
            snprintf(bad, sizeof(bad), "index %.0f", page_jnum(t, "first_bad_index", 0));
        html_fmt(b, "<tr><td>%s</td><td><span class=\"badge %R\">%R</span></td><td class=\"num\">%s</td>"
                    "<td class=\"num\">%s</td><td>%s</td></tr>\n",
                 page_jstr(t, "name"), passed ? "good" : ran ? "bad" : "neutral",
                 passed ? "passed" : ran ? "failed" : "not run", ae, re, bad);
    }
    html_raw(b, "</tbody></table></div>\n");
}

/* One tool's findings, one line per source line (the first message and
 * how many times), then each distinct hint once. */
static void put_findings(struct html_buf *b, json_t *finds, long long id, const struct said *said)
{
    json_t *f, *g;
    size_t i, j, n = json_array_size(finds);
    html_raw(b, "<ul class=\"findings\">\n");
    json_array_foreach(finds, i, f) {
        long line = (long)page_jnum(f, "line", 0);
        size_t count = 0, first = i;
        json_array_foreach(finds, j, g)
            if ((long)page_jnum(g, "line", 0) == line &&
                strcmp(page_jstr(g, "file"), page_jstr(f, "file")) == 0 && (count++, j < first))
                first = j;
        if (first != i)
            continue; /* shown with the first finding of its line */
        html_raw(b, "<li>");
        if (line > 0)
            html_fmt(b, "<a href=\"/submissions/%lld/source#L%ld\">%s line %ld</a>: ", id, line,
                     page_jstr(f, "file"), line);
        put_noaddr(b, page_jstr(f, "message"));
        if (count > 1)
            html_fmt(b, " <span class=\"muted\">(%zu times)</span>", count);
        html_raw(b, "</li>\n");
    }
    html_raw(b, "</ul>\n");
    for (i = 0; i < n; i++) {
        const char *h = page_jstr(json_array_get(finds, i), "hint");
        int seen = !h[0] || (said->hint && strcmp(said->hint, h) == 0);
        for (j = 0; j < i && !seen; j++)
            seen = strcmp(page_jstr(json_array_get(finds, j), "hint"), h) == 0;
        if (seen)
            continue;
        html_raw(b, "<p class=\"hint\"><strong>Hint:</strong> ");
        markdown_render_inline(b, h);
        html_raw(b, "</p>\n");
    }
}

static void put_sanitizers(struct html_buf *b, json_t *san, long long id, const struct said *said)
{
    json_t *t;
    size_t i;
    html_raw(b, "<h2 id=\"sanitizers\">Sanitizers</h2>\n<ul class=\"sanitizer\">\n");
    json_array_foreach(san, i, t) {
        json_t *finds = json_object_get(t, "findings");
        int clean = json_is_true(json_object_get(t, "clean"));
        int ours = json_is_true(json_object_get(t, "runner_problem"));
        int notrun = ours || json_is_false(json_object_get(t, "ran"));
        html_fmt(b, "<li><strong>%s</strong>: <span class=\"badge %R\">%R</span>", page_jstr(t, "tool"),
                 notrun ? "neutral" : clean ? "good" : "bad",
                 ours ? "not run (ours)" : notrun ? "not run" : clean ? "clean" : "problems found");
        if (notrun && page_jstr(t, "note")[0])
            html_fmt(b, " <span class=\"muted small\">%s</span>", page_jstr(t, "note"));
        if (ours)
            html_raw(b, " <span class=\"muted small\">(our problem, not yours: not charged)</span>");
        if (json_array_size(finds) > 0)
            put_findings(b, finds, id, said);
        html_raw(b, "</li>\n");
    }
    html_raw(b, "</ul>\n");
}

/* "x times faster/slower than" one reference, a list item. */
static void put_versus(struct html_buf *b, const char *label, double mine, double other)
{
    char r[32];
    if (!(isfinite(mine) && mine > 0 && isfinite(other) && other > 0))
        return;
    double x = other / mine;
    snprintf(r, sizeof(r), "%.3g", x >= 1 ? x : 1 / x);
    html_fmt(b, "<li>%s times %R than %s</li>\n", r, x >= 1 ? "faster" : "slower", label);
}

/* The next speed tier of each speed line the student has not reached. */
static void put_next_tiers(struct page *p, json_t *sub, json_t *cg)
{
    struct app_lab *l = app_lab_find(p->app, page_jstr(sub, "lab"));
    json_t *e;
    size_t i;
    json_array_foreach(json_object_get(cg, "speed"), i, e) {
        const struct rubric_speed *sp = NULL;
        const struct rubric_tier *next = NULL;
        double pts = page_jnum(e, "points", 0);
        for (size_t k = 0; l && k < l->rubric.nspeed; k++)
            if (strcmp(l->rubric.speed[k].name, page_jstr(e, "name")) == 0)
                sp = &l->rubric.speed[k];
        for (size_t k = 0; sp && k < sp->ntiers; k++)
            if (sp->tiers[k].points > pts && (!next || sp->tiers[k].points < next->points))
                next = &sp->tiers[k];
        if (!next)
            continue;
        char thr[32], val[32], pts_s[32];
        snprintf(thr, sizeof(thr), "%g%s", next->threshold, sp->metric->unit);
        snprintf(pts_s, sizeof(pts_s), "%g", next->points);
        metric_format(sp->metric, page_jnum(e, "value", NAN), val, sizeof(val));
        html_fmt(&p->b, "<p class=\"next-tier\">Next: <strong>%s</strong> for %s points "
                        "(<code title=\"%s\">%s</code> %R %s; yours is %s).</p>\n",
                 next->name, pts_s, sp->metric->label, sp->metric->name,
                 sp->metric->lower_is_better ? "&le;" : "&ge;", thr,
                 json_is_number(json_object_get(e, "value")) ? val : "not measured");
    }
}

static void put_speed(struct page *p, json_t *sub, json_t *cg)
{
    json_t *t = json_object_get(cg, "timing"), *ref = json_object_get(t, "reference_ms"), *v;
    double mine = page_jnum(t, "student_ms", NAN);
    struct html_bar bars[6];
    static char labels[3][40];
    const char *key;
    size_t n = 0;

    bars[n++] = (struct html_bar){"your kernel", mine, 1};
    json_object_foreach(ref, key, v) {
        if (n >= 4 || !json_is_number(v))
            continue;
        snprintf(labels[n - 1], sizeof(labels[0]), "%.24s", key);
        bars[n] = (struct html_bar){labels[n - 1], json_number_value(v), 0};
        n++;
    }
    if (json_is_number(json_object_get(t, "cublas_ms")))
        bars[n++] = (struct html_bar){"cuBLAS", page_jnum(t, "cublas_ms", NAN), 0};
    if (json_is_number(json_object_get(t, "cpu_ms")))
        bars[n++] = (struct html_bar){"CPU", page_jnum(t, "cpu_ms", NAN), 0};
    html_raw(&p->b, "<h2>Speed</h2>\n<ul class=\"versus\">\n");
    for (size_t i = 1; i < n; i++)
        put_versus(&p->b, bars[i].label, mine, bars[i].value);
    html_raw(&p->b, "</ul>\n");
    put_next_tiers(p, sub, cg);
    html_svg_bars_log(&p->b, "Kernel time in milliseconds, log scale: yours and each reference", bars, n,
                      "ms");
    html_raw(&p->b, "<p class=\"small\">");
    if (json_is_number(json_object_get(t, "speedup")))
        html_fmt(&p->b, "Speedup used for ranking: <strong>%.2f</strong>. ", page_jnum(t, "speedup", 0));
    if (json_is_number(json_object_get(t, "gflops")))
        html_fmt(&p->b, "%.1f GFLOP/s. ", page_jnum(t, "gflops", 0));
    if (json_is_number(json_object_get(t, "bandwidth_gbs")))
        html_fmt(&p->b, "%.1f GB/s. ", page_jnum(t, "bandwidth_gbs", 0));
    if (json_is_number(json_object_get(t, "samples")))
        html_fmt(&p->b, "Median of %d samples (relative error %.2f%%).", (int)page_jnum(t, "samples", 0),
                 100 * page_jnum(t, "rel_err", 0));
    html_raw(&p->b, "</p>\n");
    if (json_is_true(json_object_get(t, "flagged")))
        html_fmt(&p->b, "<div class=\"notice warn\"><p>This timing was flagged and earns no speed "
                        "points: %s</p></div>\n",
                 page_jstr(t, "flag_reason")[0] ? page_jstr(t, "flag_reason")
                                               : "it is faster than the hardware allows.");
}

/* The hints not shown yet. */
static void put_hints(struct html_buf *b, json_t *hints, const struct said *said)
{
    json_t *t;
    size_t i, shown = 0;
    json_array_foreach(hints, i, t) {
        const char *h = json_string_value(t);
        if (!h || (said->hint && strcmp(h, said->hint) == 0))
            continue;
        html_raw(b, shown++ ? "<li>" : "<h2>More hints</h2>\n<ul class=\"hints\">\n<li>");
        markdown_render_inline(b, h);
        html_raw(b, "</li>\n");
    }
    if (shown)
        html_raw(b, "</ul>\n");
}

/* The student's standing in the lab: their rank on the scoreboard and
 * their latest submissions to it, this one marked. */
static void put_history(struct page *p, json_t *sub)
{
    struct api_error e;
    json_t *subs = NULL, *s;
    long long id = (long long)page_jnum(sub, "id", 0), best = 0;
    const char *lab = page_jstr(sub, "lab");
    int rank = 0;
    size_t i;

    if (p->user.role != AUTH_STUDENT)
        return;
    html_raw(&p->b, "<h2>Your standing in this lab</h2>\n<p id=\"standing\">");
    if (api_scoreboard_mine(p->app, &p->user, lab, &rank, &best) == 0 && rank > 0)
        html_fmt(&p->b, "<a href=\"/labs/%u/scoreboard\">#%d on the scoreboard</a> with "
                        "<a href=\"/submissions/%lld\">submission #%lld</a>. ",
                 lab, rank, best, best);
    if (api_submissions_list(p->app, &p->user, lab, p->user.name, NULL, 5, 0, &subs, &e) == 0) {
        html_raw(&p->b, "Latest: ");
        json_array_foreach(json_object_get(subs, "submissions"), i, s) {
            long long sid = (long long)page_jnum(s, "id", 0);
            html_fmt(&p->b, "%R<a href=\"/submissions/%lld\"%R>#%lld</a> ", i ? "&middot; " : "", sid,
                     sid == id ? " aria-current=\"page\"" : "", sid);
            html_raw(&p->b, "<span class=\"nowrap\">");
            if (json_is_number(json_object_get(s, "score")) && page_jnum(s, "max_score", 0) > 0)
                put_score(&p->b, json_object_get(s, "score"), json_object_get(s, "max_score"));
            else
                html_text(&p->b, page_status_words(page_jstr(s, "status")));
            html_raw(&p->b, "</span> ");
        }
    }
    json_decref(subs);
    html_raw(&p->b, "</p>\n");
}

/* The runner's summary. A program that stopped (timeout, runtime error)
 * has it as the page's notice: it says what stopped it and where to look,
 * so submission_page.c's general notice is left out (said once). */
static void put_summary(struct html_buf *b, json_t *sub, json_t *r)
{
    const char *st = page_jstr(sub, "status"), *out = page_jstr(r, "output");
    int crash = strcmp(st, "runtime_error") == 0, stopped = crash || strcmp(st, "timeout") == 0;
    if (!out[0])
        return;
    html_fmt(b, "%R<p class=\"summary\">%s%R</p>\n%R", stopped ? "<div class=\"notice bad\">" : "", out,
             crash ? " The cases and sanitizer findings below say where." : "", stopped ? "</div>" : "");
}

int result_has_summary(json_t *sub)
{
    return page_jstr(json_object_get(sub, "result"), "output")[0] != '\0';
}

void result_put(struct page *p, json_t *sub)
{
    json_t *r = json_object_get(sub, "result"), *cg = json_object_get(r, "cugrade");
    long long id = (long long)page_jnum(sub, "id", 0);
    struct said said = {NULL, NULL};

    assert(p && sub);
    if (!json_is_object(r))
        return;
    put_summary(&p->b, sub, r);
    put_fix_first(&p->b, sub, cg, &said);
    if (page_jstr(cg, "compile_log")[0]) {
        html_raw(&p->b, "<h2>Compiler output</h2>\n");
        put_compile_log(&p->b, page_jstr(cg, "compile_log"), id);
    }
    if (json_array_size(json_object_get(r, "tests")) > 0)
        put_tests(p, sub, r, &said);
    if (json_array_size(json_object_get(cg, "cases")) > 0)
        put_cases(&p->b, json_object_get(cg, "cases"));
    if (json_array_size(json_object_get(cg, "sanitizer")) > 0)
        put_sanitizers(&p->b, json_object_get(cg, "sanitizer"), id, &said);
    if (json_is_object(json_object_get(cg, "timing")))
        put_speed(p, sub, cg);
    put_hints(&p->b, json_object_get(cg, "hints"), &said);
}

void result_put_standing(struct page *p, json_t *sub)
{
    assert(p && sub);
    if (json_is_object(json_object_get(sub, "result")))
        put_history(p, sub);
}
