/*
 * lab_page.c - the labs list, a lab's page with its submit form, and the submit.
 */
#include "server/page.h"

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
        html_fmt(&p->b, "<details><summary>Starter file (<code>%s</code>)</summary>\n<pre><code>",
                 names[i]);
        html_text(&p->b, starter);
        html_raw(&p->b, "</code></pre></details>\n");
        free(starter);
    }
}

/* The lab page; problem (may be NULL) is shown above the form with the
 * source the student pasted, so nothing they typed is lost. */
static int page_lab(struct page *p, const char *lab, const char *problem, int status,
                    const char *pasted, const char *pasted_name)
{
    struct api_error e;
    json_t *doc = NULL, *subs = NULL;
    struct app_lab *al = app_lab_find(p->app, lab);
    double due = 0, hard = 0, now = db_now();

    if (api_lab_get(p->app, &p->user, lab, &doc, &e) != 0)
        return page_api_error(p, &e);
    if (al)
        api_deadlines(p->app, al, p->user.id, &due, &hard);
    page_begin(p, page_jstr(doc, "title"));
    html_fmt(&p->b, "<h1>%s</h1>\n<p class=\"muted\">Lab <code>%s</code> &middot; due ", page_jstr(doc, "title"), lab);
    put_when(&p->b, due);
    if (hard > 0 && hard != due) {
        html_raw(&p->b, " &middot; hard deadline ");
        put_when(&p->b, hard);
    }
    html_fmt(&p->b, "</p>\n<p><a href=\"/labs/%u/scoreboard\">Scoreboard</a>", lab);
    if (page_is_staff(p))
        html_fmt(&p->b, " &middot; <a href=\"/labs/%u/stats\">Score and speedup charts</a>"
                        " &middot; <a href=\"/submissions?lab=%u\">All submissions</a>"
                        " &middot; <a href=\"/labs/%u/similarity\">Similarity</a>", lab, lab, lab);
    if (page_is_admin(p))
        html_fmt(&p->b, " &middot; <a href=\"/admin/labs/%u/rubric\">Edit the rubric</a>", lab);
    html_raw(&p->b, "</p>\n");

    html_raw(&p->b, "<div class=\"grid2\"><section class=\"handout\" aria-label=\"handout\"><h2>Handout</h2>\n");
    markdown_render(&p->b, page_jstr(doc, "handout"));
    html_raw(&p->b, "</section>\n<section aria-label=\"submit\">\n<h2>The interface you implement</h2>\n");
    html_fmt(&p->b, "<pre><code>%s</code></pre>\n", page_jstr(doc, "interface"));

    html_raw(&p->b, "<h2 id=\"submit\">Submit</h2>\n");
    if (problem)
        html_fmt(&p->b, "<div class=\"notice bad\" role=\"alert\" id=\"problem\"><p>%s</p></div>\n", problem);
    enum app_lab_state state = al ? app_lab_state(al, due, hard, now) : APP_LAB_NO_RUBRIC;
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
    html_fmt(&p->b, "<form id=\"submit-form\" class=\"stack\" method=\"post\" action=\"/labs/%u/submit\" "
                    "enctype=\"multipart/form-data\">\n", lab);
    page_csrf_field(p);
    int cuda, python;
    submission_lab_languages(al, &cuda, &python);
    /* The extension picks the language: .cu (CUDA C) or .py (Numba, CuPy). */
    const char *exts = cuda && python ? "<code>.cu</code> or <code>.py</code>"
                       : python       ? "<code>.py</code>"
                                      : "<code>.cu</code>";
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
                    "pattern=\"[A-Za-z0-9_.\\-]{1,61}\\.%s\">\n"
                    "<p><button type=\"submit\">Submit for grading</button></p>\n</form>\n",
             cuda && python ? " (<code>.py</code> for Python)" : "",
             pasted_name && *pasted_name ? pasted_name : cuda ? "kernel.cu" : "kernel.py",
             cuda && python ? "(cu|py)" : python ? "py" : "cu");
    put_starters(p, al, cuda, python);
    html_raw(&p->b, "</section></div>\n");

    if (api_submissions_list(p->app, &p->user, lab, p->user.name, NULL, 50, 0, &subs, &e) == 0 &&
        json_array_size(json_object_get(subs, "submissions")) > 0) {
        html_raw(&p->b, "<h2>Your submissions</h2>\n");
        put_submissions_table(p, json_object_get(subs, "submissions"), 0, 0);
    }
    json_decref(subs);
    json_decref(doc);
    return page_end(p, status);
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

/* The writer is done with a form's submission (submission_form_done): to
 * its page when it is on disk, else back to the lab with why. */
static void submit_done(struct app *app, struct http_request *req, const char *lab,
                        const char *filename, long long id, const struct api_error *e)
{
    struct page p;
    char msg[700], loc[64];
    page_open(&p, app, req);
    if (e == NULL) {
        assert(id > 0);
        snprintf(loc, sizeof(loc), "/submissions/%lld", id);
        page_redirect(&p, loc);
    } else {
        submit_refused_msg(e, msg, sizeof(msg));
        page_lab(&p, lab, msg, e->status ? e->status : 500, NULL, filename);
    }
    page_free(&p);
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
        return page_lab(p, lab, "The form was not sent as a file upload. Reload the page and try again.",
                        400, NULL, NULL);
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
        return page_lab(p, lab, msg, 400, NULL, NULL);
    } else {
        return page_lab(p, lab, "Nothing was sent: choose your .cu or .py file, or paste your source "
                                "into the box, then press Submit.", 400, NULL, NULL);
    }
    /* File names are checked here too so the message can name the file;
     * the name is shown escaped (it is attacker-controlled text). */
    if (!multipart_filename_valid(filename)) {
        snprintf(msg, sizeof(msg), "The file name \xe2\x80\x9c%.200s\xe2\x80\x9d cannot be used. Rename the "
                 "file to letters, digits, '_', '-' or '.', ending in .cu or .py (for example kernel.cu or kernel.py), "
                 "and submit again.", filename);
        return page_lab(p, lab, msg, 400, src ? src->value : NULL, NULL);
    }
    if (submission_start_form(p->app, p->req, &p->user, lab, filename, source, len, submit_done,
                              &e) != 0) {
        submit_refused_msg(&e, msg, sizeof(msg));
        return page_lab(p, lab, msg, e.status ? e.status : 500,
                        source == (src ? src->value : NULL) ? source : NULL, filename);
    }
    return HTTP_DEFERRED; /* submit_done answers once the writer is done */
}

static int r_lab(struct page *p)
{
    return page_lab(p, http_request_param(p->req, "lab"), NULL, 200, NULL, NULL);
}

static int r_submit(struct page *p)
{
    return post_submit(p, http_request_param(p->req, "lab"));
}

const struct route lab_page_routes[] = {
    PAGE_ROUTE(HTTP_GET, "/labs", page_labs),
    PAGE_ROUTE(HTTP_GET, "/labs/{lab}", r_lab),
    PAGE_ROUTE(HTTP_POST, "/labs/{lab}/submit", r_submit),
};
const size_t lab_page_nroutes = sizeof(lab_page_routes) / sizeof(lab_page_routes[0]);
