/*
 * rubric_page.c - admin: the rubric editor (validate, diff, apply) and its versions.
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
#include "server/submission.h"
#include "server/views.h"

/* Split text into lines (pointers into a copy). Returns the count; *lines
 * and *mem are malloc'd (caller frees both). */
static size_t split_lines(const char *text, char ***lines, char **mem)
{
    size_t n = 1, i = 0;
    char *s;

    *mem = strdup(text ? text : "");
    if (*mem == NULL)
        return 0;
    for (s = *mem; *s; s++)
        n += *s == '\n';
    *lines = calloc(n + 1, sizeof(char *));
    if (*lines == NULL)
        return 0;
    s = *mem;
    while (*s) {
        char *nl = strchr(s, '\n');
        (*lines)[i++] = s;
        if (!nl)
            break;
        *nl = '\0';
        s = nl + 1;
    }
    return i;
}

/* A line diff (longest common subsequence) of two pretty-printed rubric
 * versions, as + / - / context lines. Rubrics are a few hundred lines, so
 * the O(n*m) table is small; past 1500 lines it says so instead. */
static void put_diff(struct html_buf *b, const char *old_text, const char *new_text)
{
    char **a = NULL, **c = NULL, *am = NULL, *cm = NULL;
    size_t n = split_lines(old_text, &a, &am), m = split_lines(new_text, &c, &cm);
    unsigned short *t = NULL;
    char *ops = NULL;
    size_t i, j, k = 0, changes = 0;

    if (!a || !c || n > 1500 || m > 1500 ||
        (t = calloc((n + 1) * (m + 1), sizeof(*t))) == NULL) {
        html_raw(b, "<p class=\"muted\">The rubric is too long to show a diff.</p>\n");
        goto out;
    }
#define T(x, y) t[(x) * (m + 1) + (y)]
    for (i = n; i-- > 0;)
        for (j = m; j-- > 0;)
            T(i, j) = strcmp(a[i], c[j]) == 0 ? T(i + 1, j + 1) + 1
                      : T(i + 1, j) >= T(i, j + 1) ? T(i + 1, j) : T(i, j + 1);
    /* Walk the table once into ops (' ' same, '-' old only, '+' new
     * only), deletions first as diff(1) prints them. */
    ops = malloc(n + m + 1);
    if (ops == NULL) {
        html_raw(b, "<p class=\"muted\">The rubric is too long to show a diff.</p>\n");
        goto out;
    }
    i = j = 0;
    while (i < n || j < m) {
        if (i < n && j < m && strcmp(a[i], c[j]) == 0) {
            ops[k++] = ' '; i++; j++;
        } else if (i < n && (j == m || T(i + 1, j) >= T(i, j + 1))) {
            ops[k++] = '-'; i++; changes++;
        } else {
            ops[k++] = '+'; j++; changes++;
        }
    }
    /* Print changed lines with 3 lines of context; fold the rest. */
    html_raw(b, "<div class=\"diff\" id=\"diff\">\n");
    i = j = 0;
    for (size_t x = 0, folded = 0; x < k; x++) {
        int near = 0;
        for (size_t y = x >= 3 ? x - 3 : 0; y <= x + 3 && y < k; y++)
            near |= ops[y] != ' ';
        if (ops[x] == ' ') {
            if (near) {
                html_fmt(b, "<div class=\"ctx\">  %s</div>\n", a[i]);
                folded = 0;
            } else if (!folded) {
                html_raw(b, "<div class=\"ctx\">&hellip;</div>\n");
                folded = 1;
            }
            i++; j++;
        } else if (ops[x] == '-') {
            html_fmt(b, "<div class=\"del\">- %s</div>\n", a[i++]);
            folded = 0;
        } else {
            html_fmt(b, "<div class=\"add\">+ %s</div>\n", c[j++]);
            folded = 0;
        }
    }
#undef T
    html_raw(b, "</div>\n");
    if (changes == 0)
        html_raw(b, "<p class=\"muted\">No changes: this is the same as the current version.</p>\n");
out:
    free(ops);
    free(t);
    free(a);
    free(c);
    free(am);
    free(cm);
}

static char *rubric_pretty(const json_t *doc)
{
    return json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
}

/* Submission ids a rubric change affects: each student's best and latest
 * final submission in the lab (what their grade rests on). Stores at most
 * max ids and returns how many there are in all. */

static void put_rubric_versions(struct page *p, const char *lab)
{
    json_t *vs = NULL, *v;
    size_t i;

    if (course_rubric_versions(p->app, lab, &vs) != 0)
        return;
    html_raw(&p->b, "<h2>Versions</h2>\n" TABLE_BOX("Rubric versions") "<table id=\"versions\"><thead><tr><th class=\"num\">Version</th>"
                    "<th>Created</th><th>By</th></tr></thead><tbody>\n");
    json_array_foreach(vs, i, v) {
        html_fmt(&p->b, "<tr><td class=\"num\">%d</td><td>", (int)page_jnum(v, "version", 0));
        put_when(&p->b, page_jnum(v, "created_at", 0));
        html_fmt(&p->b, "</td><td>%s</td></tr>\n",
                 json_is_string(json_object_get(v, "by")) ? page_jstr(v, "by") : "rubrics/ file");
    }
    json_decref(vs);
    html_raw(&p->b, "</tbody></table></div>\n");
}

/* The editor; text is what goes in the textarea (NULL: the current
 * version), problem an error to show, preview the diff to show. */
static int page_rubric(struct page *p, const char *lab, const char *text, const char *problem,
                       int preview, const char *done, int status)
{
    struct api_error e;
    json_t *cur = NULL;
    char *cur_text = NULL;
    long long ids[1];
    int version;

    if (!page_is_admin(p))
        return page_error(p, 403, "Not allowed", "Only admins edit rubrics.");
    if (api_rubric_get(p->app, &p->user, lab, &cur, &e) != 0)
        return page_api_error(p, &e);
    version = (int)page_jnum(cur, "version", 0);
    cur_text = rubric_pretty(json_object_get(cur, "rubric"));
    page_begin(p, "Rubric editor");
    html_fmt(&p->b, "<h1>Rubric <span class=\"muted\">&middot; <a href=\"/labs/%u\">%s</a></span></h1>\n", lab, lab);
    html_fmt(&p->b, "<p>Current version: <strong id=\"rubric-version\">%d</strong>. Changes are "
                    "validated, shown as a diff, and stored as version %d; submissions keep the version "
                    "they were graded with.</p>\n", version, version + 1);
    if (done)
        html_fmt(&p->b, "<div class=\"notice good\" role=\"status\"><p>%s</p></div>\n", done);
    if (problem)
        html_fmt(&p->b, "<div class=\"notice bad\" role=\"alert\" id=\"problem\"><p>%s</p></div>\n", problem);
    if (preview && text) {
        html_raw(&p->b, "<h2>What changes</h2>\n");
        put_diff(&p->b, cur_text, text);
    }
    html_fmt(&p->b, "<form class=\"stack wide\" method=\"post\" action=\"/admin/labs/%u/rubric\">", lab);
    page_csrf_field(p);
    html_raw(&p->b, "<label for=\"rubric\">Rubric JSON (see docs/formats.md)</label>"
                    "<textarea id=\"rubric\" name=\"rubric\" class=\"code rubric\" spellcheck=\"false\">");
    html_text(&p->b, text ? text : cur_text);
    html_fmt(&p->b, "</textarea><label class=\"check\"><input type=\"checkbox\" name=\"regrade\" value=\"1\"> "
                    "Regrade affected submissions (each student's best and latest: %zu now)</label>"
                    "<p><button type=\"submit\" name=\"action\" value=\"preview\" class=\"secondary\">Check and "
                    "show changes</button> <button type=\"submit\" name=\"action\" value=\"apply\" id=\"apply\">"
                    "Apply as version %d</button></p></form>\n",
             submission_ids_affected(p->app, lab, ids, 0), version + 1);
    put_rubric_versions(p, lab);
    free(cur_text);
    json_decref(cur);
    return page_end(p, status);
}

/* page_rubric again (page_again): s[0] the lab, s[1] the text, s[2] the
 * problem, s[3] what was done; n: a preview. */
static int rubric_again(struct page *p, const struct page_again *a)
{
    return page_rubric(p, a->s[0], a->s[1], a->s[2], (int)a->n, a->s[3], a->status);
}

/* A POST's answer: the rubric page, rendered off the loop. */
static int rubric_form_again(struct page *p, const char *lab, const char *text, const char *problem,
                             int preview, const char *done, int status)
{
    struct page_again a = {.status = status, .n = preview, .s = {lab, text, problem, done}};
    return page_again(p, rubric_again, &a);
}

/* The writer stored (or refused) the rubric, and requeued the affected
 * submissions when asked: the rubric page again, saying so. */
static int rubric_done(struct app *app, struct http_request *req, json_t *out, int rc,
                       const struct api_error *e)
{
    struct page p;
    char msg[600];
    const char *lab = json_string_value(json_object_get(out, "lab"));
    int version = (int)json_integer_value(json_object_get(out, "version"));
    page_open(&p, app, req);
    if (rc) {
        page_form_parse(&p);
        rc = rubric_form_again(&p, lab ? lab : "", page_field(&p, "rubric"), e->message, 0, NULL,
                               e->status ? e->status : 400);
        page_free(&p);
        return rc;
    }
    if (page_form_parse(&p) == 0 && page_field(&p, "regrade") &&
        strcmp(page_field(&p, "regrade"), "1") == 0)
        snprintf(msg, sizeof(msg),
                 "Saved as version %d; %lld of %lld affected submissions are back in the queue.",
                 version, (long long)json_integer_value(json_object_get(out, "regraded")),
                 (long long)json_integer_value(json_object_get(out, "affected")));
    else
        snprintf(msg, sizeof(msg),
                 "Saved as version %d. New submissions are graded with it; earlier "
                 "ones keep their version until regraded.",
                 version);
    rc = rubric_form_again(&p, lab, NULL, NULL, 0, msg, 200);
    page_free(&p);
    return rc;
}

static int post_rubric(struct page *p, const char *lab)
{
    struct api_error e;
    const char *text, *action;
    json_t *doc;
    json_error_t jerr;
    char msg[600], *pretty;
    struct app_lab *al = app_lab_find(p->app, lab);
    struct rubric r;
    int rc;

    if (!page_is_admin(p))
        return page_error(p, 403, "Not allowed", "Only admins edit rubrics.");
    if (page_post_check(p) != 0)
        return HTTP_DONE;
    if (al == NULL)
        return page_error(p, 404, "Not found", "There is no such lab.");
    text = page_field(p, "rubric");
    action = page_field(p, "action");
    if (text == NULL || *text == '\0')
        return rubric_form_again(p, lab, NULL, "The rubric box was empty; nothing changed.", 0,
                                 NULL, 400);
    doc = json_loads(text, 0, &jerr);
    if (doc == NULL) {
        snprintf(msg, sizeof(msg), "That is not valid JSON (line %d, column %d): %s. Nothing changed.",
                 jerr.line, jerr.column, jerr.text);
        return rubric_form_again(p, lab, text, msg, 0, NULL, 400);
    }
    if (rubric_parse(doc, &al->lab, &r, msg, sizeof(msg)) != 0) {
        char full[700];
        snprintf(full, sizeof(full), "The rubric is not valid: %s. Nothing changed.", msg);
        json_decref(doc);
        return rubric_form_again(p, lab, text, full, 0, NULL, 400);
    }
    rubric_free(&r);
    pretty = rubric_pretty(doc);
    if (action == NULL || strcmp(action, "apply") != 0) {
        rc = rubric_form_again(p, lab, pretty ? pretty : text, NULL, 1,
                               "The rubric is valid. Review the changes below, then apply.", 200);
        free(pretty);
        json_decref(doc);
        return rc;
    }
    free(pretty);
    int regrade = page_field(p, "regrade") && strcmp(page_field(p, "regrade"), "1") == 0;
    rc = course_rubric_put_start(p->app, &p->user, lab, doc, regrade, p->req, rubric_done, &e);
    json_decref(doc);
    if (rc != 0)
        return rubric_form_again(p, lab, text, e.message, 0, NULL, e.status ? e.status : 400);
    return HTTP_DEFERRED; /* answered by rubric_done */
}

static int r_rubric(struct page *p)
{
    return page_rubric(p, http_request_param(p->req, "lab"), NULL, NULL, 0, NULL, 200);
}

static int r_rubric_post(struct page *p)
{
    return post_rubric(p, http_request_param(p->req, "lab"));
}

const struct route rubric_page_routes[] = {
    PAGE_ROUTE_READ(HTTP_GET, "/admin/labs/{lab}/rubric", r_rubric),
    PAGE_ROUTE(HTTP_POST, "/admin/labs/{lab}/rubric", r_rubric_post),
};
const size_t rubric_page_nroutes = sizeof(rubric_page_routes) / sizeof(rubric_page_routes[0]);
