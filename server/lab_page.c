/*
 * lab_page.c - the labs list, a lab's page with its submit form, and the submit.
 */
#include "server/page.h"
#include "server/bundle.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "server/course.h"
#include "server/lateday.h"
#include "server/markdown.h"
#include "server/regrade.h"
#include "server/scoreboard.h"
#include "server/submission.h"
#include "server/views.h"

/* The best score per lab among the viewer's own submissions. */
static json_t *best_scores(struct page *p)
{
    struct api_error e;
    json_t *list = NULL, *best = json_object(), *s;
    size_t i;

    if (best == NULL)
        return NULL;
    if (api_submissions_list(p->app, &p->user, NULL, p->user.name, NULL, 500, 0, &list, &e) != 0)
        return best;
    json_array_foreach(json_object_get(list, "submissions"), i, s) {
        const char *lab = page_jstr(s, "lab");
        json_t *sc = json_object_get(s, "score");
        json_t *cur = json_object_get(best, lab);
        if (!json_is_number(sc))
            continue;
        if (cur == NULL || json_number_value(sc) > page_jnum(cur, "score", -1))
            json_object_set(best, lab, s);
    }
    json_decref(list);
    return best;
}

/* A student's notice of their regrade requests answered in the last week
 * (lab NULL: any lab), each linking to the answer. */
static void put_regrade_answered(struct page *p, const char *lab)
{
    struct api_error e;
    json_t *out = NULL, *r;
    size_t i, shown = 0;

    if (p->user.role != AUTH_STUDENT ||
        regrade_request_list(p->app, &p->user, "answered", lab, p->user.name, 0, &out, &e) != 0)
        return;
    json_array_foreach(json_object_get(out, "requests"), i, r) {
        double at = page_iso_to_time(page_jstr(r, "answered_at"));
        long long rid = (long long)page_jnum(r, "id", 0), sid = (long long)page_jnum(r, "submission", 0);
        if (at <= 0 || db_now() - at > 7 * 86400 || shown >= 3)
            continue;
        html_fmt(&p->b, "%R<p>Your regrade request about <a href=\"/submissions/%lld\">submission #%lld</a> "
                        "(%s) was answered ",
                 shown++ ? "" : "<div class=\"notice good\" id=\"regrade-answered\">", sid, sid,
                 page_jstr(r, "lab"));
        put_when(&p->b, at);
        html_fmt(&p->b, ": <a href=\"/regrades/%lld\">read the answer</a>.</p>\n", rid);
    }
    if (shown)
        html_raw(&p->b, "</div>\n");
    json_decref(out);
}

static int page_labs(struct page *p)
{
    struct api_error e;
    json_t *labs = NULL, *best = NULL, *l;
    size_t i;
    double now = db_now();

    if (api_labs_list(p->app, &p->user, &labs, &e) != 0)
        return page_api_error(p, &e);
    best = best_scores(p);
    page_begin(p, "Labs");
    html_raw(&p->b, "<h1>Labs</h1>\n");
    put_regrade_answered(p, NULL);
    if (json_array_size(json_object_get(labs, "labs")) == 0)
        html_raw(&p->b, "<p class=\"muted\">No labs are set up yet.</p>\n");
    else
        html_fmt(&p->b, TABLE_BOX("Labs") "<table class=\"labs\"><thead><tr><th>Lab</th><th>Due</th>"
                        "<th>Hard deadline</th><th>Status</th><th class=\"num\">%R</th>"
                        "</tr></thead><tbody>\n",
                 page_is_staff(p) ? "Students with a score" : "Your best score");
    json_array_foreach(json_object_get(labs, "labs"), i, l) {
        const char *lab = page_jstr(l, "lab");
        struct app_lab *al = app_lab_find(p->app, lab);
        double due = page_iso_to_time(page_jstr(l, "due")), hard = page_iso_to_time(page_jstr(l, "hard_deadline"));
        json_t *mine = json_object_get(best, lab);

        if (al && p->user.role == AUTH_STUDENT) /* with the student's extension */
            api_deadlines(p->app, al, p->user.id, &due, &hard);
        html_fmt(&p->b, "<tr><td><a href=\"/labs/%u\">%s</a><div class=\"muted small\">%s</div></td><td>",
                 lab, page_jstr(l, "title"), lab);
        put_when(&p->b, due);
        html_raw(&p->b, "</td><td>");
        put_when(&p->b, hard);
        html_raw(&p->b, "</td><td>");
        enum app_lab_state state = al ? app_lab_state(al, due, hard, now) : APP_LAB_NO_RUBRIC;
        if (state == APP_LAB_LATE)
            html_raw(&p->b, "<span class=\"badge warn\">late submissions only</span>");
        else if (state == APP_LAB_OPEN)
            html_raw(&p->b, "<span class=\"badge good\">open</span>");
        else
            html_raw(&p->b, "<span class=\"badge\">closed</span>");
        html_raw(&p->b, "</td><td class=\"num\">");
        if (page_is_staff(p)) {
            json_t *sb = NULL;
            struct api_error e2;
            if (api_scoreboard(p->app, &p->user, lab, &sb, &e2) == 0)
                html_fmt(&p->b, "<a href=\"/labs/%u/scoreboard\">%zu</a> &middot; "
                                "<a href=\"/labs/%u/stats\">charts</a>",
                         lab, json_array_size(json_object_get(sb, "rows")), lab);
            if (page_is_admin(p))
                html_fmt(&p->b, " &middot; <a href=\"/admin/labs/%u/rubric\">rubric</a>", lab);
            json_decref(sb);
            html_raw(&p->b, "</td></tr>\n");
            continue;
        }
        if (mine)
            html_fmt(&p->b, "<a href=\"/submissions/%lld\">", (long long)page_jnum(mine, "id", 0));
        put_score(&p->b, json_object_get(mine, "score"), json_object_get(mine, "max_score"));
        if (mine)
            html_raw(&p->b, "</a>");
        html_raw(&p->b, "</td></tr>\n");
    }
    if (json_array_size(json_object_get(labs, "labs")) > 0)
        html_raw(&p->b, "</tbody></table></div>\n");
    if (p->user.role == AUTH_STUDENT)
        put_show_name(p, "");
    json_decref(labs);
    json_decref(best);
    return page_end(p, 200);
}

/* Read labs/<lab>/<name> (a starter: at most 64 KiB); caller frees; NULL if none. */
static char *read_starter(const struct app_lab *l, const char *name)
{
    char path[512];
    FILE *f;
    char *buf;
    size_t n;

    snprintf(path, sizeof(path), "%s/%s", l->lab.dir, name);
    f = fopen(path, "re");
    if (f == NULL)
        return NULL;
    buf = malloc(65536 + 1);
    if (buf) {
        n = fread(buf, 1, 65536, f);
        buf[n] = '\0';
    }
    fclose(f);
    return buf;
}

/* The starter files, one block each. */
static void put_starters(struct page *p, const struct app_lab *al, int cuda, int python)
{
    static const char *const names[2] = {"starter.cu", "starter.py"};
    for (int i = 0; i < 2 && al; i++) {
        if (!(i ? python : cuda))
            continue;
        char *starter = read_starter(al, names[i]);
        if (!starter)
            continue;
        html_fmt(&p->b, "<p class=\"starter\"><a class=\"button secondary\" href=\"/labs/%u/starter/%s\" "
                        "download=\"%s\">Download %s</a></p>\n",
                 al->lab.name, names[i], names[i], names[i]);
        html_fmt(&p->b, "<details><summary>Starter file (<code>%s</code>)</summary>\n<pre><code>",
                 names[i]);
        html_text(&p->b, starter);
        html_raw(&p->b, "</code></pre></details>\n");
        free(starter);
    }
}

/* The id of the viewer's submission to lab still waiting in the queue
 * (a new one would supersede it), or 0. */
static long long queued_id(struct page *p, const char *lab)
{
    struct api_error e;
    json_t *subs = NULL;
    long long id = 0;
    if (api_submissions_list(p->app, &p->user, lab, p->user.name, "queued", 1, 0, &subs, &e) == 0)
        id = (long long)page_jnum(json_array_get(json_object_get(subs, "submissions"), 0), "id", 0);
    json_decref(subs);
    return id;
}

/* The status strip at the top of a lab page: the due date with the late
 * days left, the student's best score and latest status (subs: newest
 * first), and a link to the form. */
static void put_status_strip(struct page *p, const char *lab, json_t *subs, double due, double hard)
{
    struct lateday_pool pool;
    json_t *s, *best = NULL;
    size_t i;

    html_raw(&p->b, "<ul class=\"strip\" aria-label=\"Your status in this lab\">\n<li><span class=\"k\">Due</span> ");
    put_when(&p->b, due);
    if (hard > 0 && hard != due) {
        html_raw(&p->b, "<br><span class=\"small muted\">hard deadline ");
        put_when(&p->b, hard);
        html_raw(&p->b, "</span>");
    }
    if (p->user.role == AUTH_STUDENT && lateday_pool_get(p->app->db, p->user.id, &pool) == 0 &&
        pool.budget > 0)
        html_fmt(&p->b, "<br><span class=\"small muted\">%d of %d late day%R left</span>",
                 pool.remaining, pool.budget, pool.budget == 1 ? "" : "s");
    html_raw(&p->b, "</li>\n<li><span class=\"k\">Your best</span> ");
    json_array_foreach(subs, i, s)
        if (json_is_number(json_object_get(s, "score")) &&
            strcmp(page_jstr(s, "status"), "system_error") != 0 &&
            (!best || page_jnum(s, "score", 0) > page_jnum(best, "score", 0)))
            best = s;
    if (best)
        put_score(&p->b, json_object_get(best, "score"), json_object_get(best, "max_score"));
    else
        html_raw(&p->b, "<span class=\"muted\">no score yet</span>");
    html_raw(&p->b, "</li>\n<li><span class=\"k\">Latest</span> ");
    s = json_array_get(subs, 0);
    if (s) {
        long long id = (long long)page_jnum(s, "id", 0);
        html_fmt(&p->b, "<a href=\"/submissions/%lld\">#%lld</a> ", id, id);
        put_status(&p->b, page_jstr(s, "status"));
    } else {
        html_raw(&p->b, "<span class=\"muted\">nothing submitted</span>");
    }
    int rank = 0;
    long long best_id = 0;
    html_raw(&p->b, "</li>\n<li><span class=\"k\">Rank</span> ");
    if (api_scoreboard_mine(p->app, &p->user, lab, &rank, &best_id) == 0 && rank > 0)
        html_fmt(&p->b, "<a href=\"/labs/%u/scoreboard\" id=\"rank\">#%d on the scoreboard</a>", lab, rank);
    else
        html_fmt(&p->b, "<a href=\"/labs/%u/scoreboard\">Scoreboard</a>", lab);
    html_raw(&p->b, "</li>\n<li><a class=\"button\" href=\"#submit\">Submit</a></li>\n</ul>\n");
}

/* The submit form (with the pasted source and name to keep); queued: the
 * student's submission still waiting, which a new one replaces, so the form
 * asks to confirm that first. */
static void put_submit_form(struct page *p, const struct app_lab *al, const char *lab,
                            const char *pasted, const char *pasted_name, long long queued)
{
    int cuda, python;
    submission_lab_languages(al, &cuda, &python);
    /* The extension picks the language: .cu (CUDA C) or .py (Numba, CuPy). */
    const char *exts = cuda && python ? "<code>.cu</code> or <code>.py</code>"
                       : python       ? "<code>.py</code>"
                                      : "<code>.cu</code>";
    html_fmt(&p->b, "<form id=\"submit-form\" class=\"stack\" method=\"post\" action=\"/labs/%u/submit\" "
                    "enctype=\"multipart/form-data\">\n", lab);
    page_csrf_field(p);
    html_fmt(&p->b, "\n<label for=\"file\">Upload your %R file</label>\n"
                    "<input type=\"file\" id=\"file\" name=\"file\" accept=\"%s\">\n"
                    "<p id=\"file-note\" class=\"muted small\" aria-live=\"polite\"></p>\n"
                    "<label for=\"source\">&hellip;or paste your source here</label>\n"
                    "<textarea id=\"source\" name=\"source\" class=\"code\" spellcheck=\"false\" "
                    "placeholder=\"Paste the whole %s file here (used only when no file is chosen).\">",
             exts, cuda && python ? ".cu,.py" : python ? ".py" : ".cu",
             cuda && python ? ".cu or .py" : python ? ".py" : ".cu");
    html_text(&p->b, pasted);
    html_fmt(&p->b, "</textarea>\n<label for=\"filename\">File name for pasted source%R</label>\n"
                    "<input type=\"text\" id=\"filename\" name=\"filename\" value=\"%s\" "
                    "pattern=\"[A-Za-z0-9_.\\-]{1,61}\\.%s\">\n",
             cuda && python ? " (<code>.py</code> for Python)" : "",
             pasted_name && *pasted_name ? pasted_name : cuda ? "kernel.cu" : "kernel.py",
             cuda && python ? "(cu|py)" : python ? "py" : "cu");
    if (queued > 0)
        html_fmt(&p->b, "<div class=\"notice warn\" id=\"replace-note\"><p>Your <a href=\"/submissions/%lld\">"
                        "submission #%lld</a> is still waiting in the queue. A new one takes its "
                        "place: #%lld will not be graded.</p>\n<label class=\"check\"><input "
                        "type=\"checkbox\" id=\"replace\" name=\"replace\" value=\"%lld\" required> "
                        "Replace my queued submission #%lld</label>\n<input type=\"hidden\" "
                        "name=\"queued\" value=\"%lld\"></div>\n",
                 queued, queued, queued, queued, queued, queued);
    html_raw(&p->b, "<p><button type=\"submit\">Submit for grading</button></p>\n</form>\n");
    put_starters(p, al, cuda, python);
}

/* The notices above the form: the problem with the last try (may be NULL),
 * then what the deadlines allow now. */
static void put_submit_notices(struct page *p, const struct app_lab *al, const char *lab,
                               const char *problem, double due, double hard)
{
    if (problem)
        html_fmt(&p->b, "<div class=\"notice bad\" role=\"alert\" id=\"problem\"><p>%s</p></div>\n", problem);
    enum app_lab_state state = al ? app_lab_state(al, due, hard, db_now()) : APP_LAB_NO_RUBRIC;
    if (state == APP_LAB_CLOSED)
        html_raw(&p->b, "<div class=\"notice warn\"><p>The hard deadline has passed: the server no "
                        "longer accepts submissions for this lab. If you have an extension, ask the "
                        "staff to record it.</p></div>\n");
    else if (state == APP_LAB_LATE_REFUSED)
        html_raw(&p->b, "<div class=\"notice warn\"><p>The due date has passed and this lab accepts "
                        "no late submissions. If you have an extension, ask the staff to record "
                        "it.</p></div>\n");
    else if (state == APP_LAB_LATE && !lateday_notice_html(p->app, &p->b, &p->user, lab))
        html_raw(&p->b, "<div class=\"notice warn\"><p>The due date has passed: a submission now "
                        "is marked late and the late penalty applies.</p></div>\n");
}

/* The lab page, led by the student's status and latest submissions, then
 * the handout at full width, then the form. problem (may be NULL) is shown
 * above the form with the source the student pasted, so nothing they
 * typed is lost. */
static int page_lab(struct page *p, const char *lab, const char *problem, int status,
                    const char *pasted, const char *pasted_name)
{
    struct api_error e;
    json_t *doc = NULL, *subs = NULL, *list;
    struct app_lab *al = app_lab_find(p->app, lab);
    double due = 0, hard = 0;

    if (api_lab_get(p->app, &p->user, lab, &doc, &e) != 0)
        return page_api_error(p, &e);
    if (al)
        api_deadlines(p->app, al, p->user.id, &due, &hard);
    if (api_submissions_list(p->app, &p->user, lab, p->user.name, NULL, 50, 0, &subs, &e) != 0)
        subs = NULL;
    list = json_object_get(subs, "submissions");
    page_begin(p, page_jstr(doc, "title"));
    html_fmt(&p->b, "<h1>%s <span class=\"muted small\">lab <code>%s</code></span></h1>\n",
             page_jstr(doc, "title"), lab);
    put_status_strip(p, lab, list, due, hard);
    put_regrade_answered(p, lab);
    if (page_is_staff(p))
        html_fmt(&p->b, "<p><a href=\"/labs/%u/stats\">Score and speedup charts</a>"
                        " &middot; <a href=\"/submissions?lab=%u\">All submissions</a>"
                        " &middot; <a href=\"/labs/%u/similarity\">Similarity</a>%R</p>\n",
                 lab, lab, lab, page_is_admin(p) ? " &middot; " : "");
    if (page_is_admin(p))
        html_fmt(&p->b, "<p><a href=\"/admin/labs/%u/rubric\">Edit the rubric</a></p>\n", lab);
    if (json_array_size(list) > 0) {
        json_t *recent = json_array();
        for (size_t i = 0; i < json_array_size(list) && i < 5; i++)
            json_array_append(recent, json_array_get(list, i));
        html_raw(&p->b, "<h2>Your submissions</h2>\n");
        put_submissions_table(p, recent, 0, 0);
        json_decref(recent);
        if (json_array_size(list) > 5)
            html_fmt(&p->b, "<p class=\"small\"><a href=\"/submissions?lab=%u\">All %zu of your "
                            "submissions to this lab</a></p>\n", lab, json_array_size(list));
    }
    char *handout = bundle_handout(p->req, page_jstr(doc, "handout"));
    const char *md = handout ? handout : page_jstr(doc, "handout");
    /* A handout that opens with its title needs no "Handout" over it. */
    html_fmt(&p->b, "<section class=\"handout\" aria-label=\"handout\">%R\n",
             strncmp(md + strspn(md, " \t\r\n"), "# ", 2) == 0 ? "" : "<h2>Handout</h2>");
    markdown_render(&p->b, md);
    free(handout);
    html_raw(&p->b, "</section>\n<section aria-label=\"submit\">\n<h2>The interface you implement</h2>\n");
    html_fmt(&p->b, "<pre><code>%s</code></pre>\n", page_jstr(doc, "interface"));
    html_raw(&p->b, "<h2 id=\"submit\">Submit</h2>\n");
    put_submit_notices(p, al, lab, problem, due, hard);
    put_submit_form(p, al, lab, pasted, pasted_name, queued_id(p, lab));
    html_raw(&p->b, "</section>\n");
    json_decref(subs);
    json_decref(doc);
    return page_end(p, status);
}

/* page_lab again (page_again): s[0] the lab, s[1] the problem, s[2] the
 * source pasted, s[3] its file name. */
static int lab_again(struct page *p, const struct page_again *a)
{
    return page_lab(p, a->s[0], a->s[1], a->status, a->s[2], a->s[3]);
}

/* A POST's answer: the lab page with problem, rendered off the loop. */
static int lab_form_again(struct page *p, const char *lab, const char *problem, int status,
                          const char *pasted, const char *pasted_name)
{
    struct page_again a = {.status = status, .s = {lab, problem, pasted, pasted_name}};
    return page_again(p, lab_again, &a);
}

/* A refusal as the form shows it: the message, and when to try again. */
static void submit_refused_msg(const struct api_error *e, char *msg, size_t len)
{
    if (e->status == 429 && e->retry_after > 0)
        snprintf(msg, len, "%s (You can submit again in about %d second%s.)", e->message,
                 e->retry_after, e->retry_after == 1 ? "" : "s");
    else
        snprintf(msg, len, "%s", e->message);
}

/* The source the student pasted (not a file), shown again with a refusal
 * for a queued submission not ticked to be replaced; NULL otherwise. */
static const char *kept_paste(struct page *p, const struct api_error *e)
{
    if (e->status != 409 || !e->code || strcmp(e->code, "replace_unticked") != 0 ||
        page_form_parse(p) != 0)
        return NULL;
    const struct multipart_part *file = multipart_find(p->parts, p->nparts, "file");
    const struct form_field *src = page_field_get(p, "source");
    if (file && file->has_filename && file->filename[0] && file->len > 0)
        return NULL;
    return src && src->len > 0 ? src->value : NULL;
}

/* The writer is done with a form's submission (submission_form_done): to
 * its page when it is on disk, else back to the lab with why. */
static int submit_done(struct app *app, struct http_request *req, const char *lab,
                       const char *filename, long long id, const struct api_error *e)
{
    struct page p;
    char msg[700], loc[64];
    int rc;
    page_open(&p, app, req);
    if (e == NULL) {
        assert(id > 0);
        snprintf(loc, sizeof(loc), "/submissions/%lld", id);
        rc = page_redirect(&p, loc);
    } else {
        submit_refused_msg(e, msg, sizeof(msg));
        rc = lab_form_again(&p, lab, msg, e->status ? e->status : 500, kept_paste(&p, e),
                            filename);
    }
    page_free(&p);
    return rc == HTTP_DEFERRED ? HTTP_DEFERRED : HTTP_DONE;
}

static int post_submit(struct page *p, const char *lab)
{
    const struct multipart_part *file;
    const struct form_field *src;
    const char *filename, *source;
    size_t len;
    struct api_error e;
    char msg[700];

    if (page_post_check(p) != 0)
        return HTTP_DONE;
    if (p->nparts == 0)
        return lab_form_again(
            p, lab, "The form was not sent as a file upload. Reload the page and try again.", 400,
            NULL, NULL);
    file = multipart_find(p->parts, p->nparts, "file");
    src = page_field_get(p, "source");
    if (file && file->has_filename && file->filename[0] && file->len > 0) {
        filename = file->filename;
        source = file->data;
        len = file->len;
    } else if (src && src->len > 0) {
        filename = page_field(p, "filename");
        if (filename == NULL || *filename == '\0') {
            int cuda, python;
            submission_lab_languages(app_lab_find(p->app, lab), &cuda, &python);
            filename = cuda ? "kernel.cu" : "kernel.py";
        }
        source = src->value;
        len = src->len;
    } else if (file && file->has_filename && file->filename[0]) {
        snprintf(msg, sizeof(msg), "The file \xe2\x80\x9c%s\xe2\x80\x9d is empty. Save your work in the "
                 "editor, then choose the file again.", file->filename);
        return lab_form_again(p, lab, msg, 400, NULL, NULL);
    } else {
        return lab_form_again(p, lab,
                              "Nothing was sent: choose your .cu or .py file, or paste your source "
                              "into the box, then press Submit.",
                              400, NULL, NULL);
    }
    /* File names are checked here too so the message can name the file;
     * the name is shown escaped (it is attacker-controlled text). */
    if (!multipart_filename_valid(filename)) {
        snprintf(msg, sizeof(msg), "The file name \xe2\x80\x9c%.200s\xe2\x80\x9d cannot be used. Rename the "
                 "file to letters, digits, '_', '-' or '.', ending in .cu or .py (for example kernel.cu or kernel.py), "
                 "and submit again.", filename);
        return lab_form_again(p, lab, msg, 400, src ? src->value : NULL, NULL);
    }
    /* The page showed a queued submission and its box is not ticked: the
     * writer refuses while it is still queued (submission_start_form). */
    const char *replace = page_field(p, "replace"), *shown = page_field(p, "queued");
    long long keep = shown ? atoll(shown) : 0;
    if (keep <= 0 || (replace && atoll(replace) == keep))
        keep = 0;
    if (submission_start_form(p->app, p->req, &p->user, lab, filename, source, len, keep,
                              submit_done, &e) != 0) {
        submit_refused_msg(&e, msg, sizeof(msg));
        return lab_form_again(p, lab, msg, e.status ? e.status : 500,
                              source == (src ? src->value : NULL) ? source : NULL, filename);
    }
    return HTTP_DEFERRED; /* submit_done answers once the writer is done */
}

static int r_lab(struct page *p)
{
    return page_lab(p, http_request_param(p->req, "lab"), NULL, 200, NULL, NULL);
}

/* GET /labs/{lab}/starter/{name}: the lab's starter.cu or starter.py as a
 * download, to whoever may read the lab. */
static int r_starter(struct page *p)
{
    const char *lab = http_request_param(p->req, "lab"), *name = http_request_param(p->req, "name");
    struct app_lab *al = app_lab_find(p->app, lab);
    struct api_error e;
    json_t *doc = NULL;
    char disp[64], *src;

    if (api_lab_get(p->app, &p->user, lab, &doc, &e) != 0)
        return page_api_error(p, &e);
    json_decref(doc);
    if (!al || !name || (strcmp(name, "starter.cu") != 0 && strcmp(name, "starter.py") != 0) ||
        !(src = read_starter(al, name)))
        return page_error(p, 404, "No such starter file",
                          "This lab has no starter file by that name; its page links the ones it has.");
    snprintf(disp, sizeof(disp), "attachment; filename=\"%s\"", name);
    page_security_headers(p->req);
    http_response_header(p->req, "Content-Disposition", disp);
    http_response_body(p->req, 200, "text/plain; charset=utf-8", src, strlen(src));
    free(src);
    return HTTP_DONE;
}

static int r_submit(struct page *p)
{
    return post_submit(p, http_request_param(p->req, "lab"));
}

const struct route lab_page_routes[] = {
    PAGE_ROUTE_READ(HTTP_GET, "/labs", page_labs),
    PAGE_ROUTE_READ(HTTP_GET, "/labs/{lab}", r_lab),
    PAGE_ROUTE(HTTP_POST, "/labs/{lab}/submit", r_submit),
    PAGE_ROUTE_READ(HTTP_GET, "/labs/{lab}/starter/{name}", r_starter),
};
const size_t lab_page_nroutes = sizeof(lab_page_routes) / sizeof(lab_page_routes[0]);
