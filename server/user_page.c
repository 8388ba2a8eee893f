/*
 * user_page.c - admin: users and the roster import.
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
#include "server/scoreboard.h"
#include "server/staff_write.h"
#include "server/user_admin.h"
#include "server/views.h"

/* The tokens just issued (created: {"users":[{name,role,token}]}), shown
 * this once, with a link that downloads them as a CSV file: the link
 * carries the file itself (a data: URL), so no token is kept anywhere to
 * serve it later. */
static void put_new_tokens(struct page *p, const json_t *created)
{
    struct http_buf csv = {0};
    char fname[64], iso[40];
    const json_t *users = json_object_get(created, "users");
    json_t *u;
    size_t i;

    if (json_array_size(users) == 0)
        return;
    http_buf_append(&csv, "name,role,token\r\n", 17);
    json_array_foreach(users, i, u) {
        scoreboard_csv_cell(&csv, page_jstr(u, "name"));
        http_buf_printf(&csv, ",%s,%s\r\n", page_jstr(u, "role"), page_jstr(u, "token"));
    }
    http_buf_append(&csv, "", 1);
    api_time_iso(db_now(), iso, sizeof(iso));
    snprintf(fname, sizeof(fname), "tokens-%.10s.csv", iso);
    html_raw(&p->b, "<div class=\"notice good\"><p><strong>New tokens: copy them now.</strong> "
                    "They are stored only as hashes and cannot be shown again.</p>\n");
    html_fmt(&p->b, "<p><a id=\"tokens-csv\" download=\"%s\" href=\"data:text/csv;charset=utf-8,%u\">"
                    "Download these tokens (CSV)</a></p>\n",
             fname, csv.data ? csv.data : "");
    http_buf_free(&csv);
    html_raw(&p->b, TABLE_BOX("New tokens") "<table id=\"new-tokens\"><thead><tr><th>Name</th><th>Role</th>"
                    "<th>Token</th></tr></thead><tbody>\n");
    json_array_foreach(users, i, u)
        html_fmt(&p->b, "<tr><td>%s</td><td>%s</td><td><span class=\"token\">%s</span></td></tr>\n",
                 page_jstr(u, "name"), page_jstr(u, "role"), page_jstr(u, "token"));
    html_raw(&p->b, "</tbody></table></div></div>\n");
}

/* A roster import's report, one row per roster line (user_admin_import). */
static void put_import_report(struct page *p, const json_t *created)
{
    const json_t *rows = json_object_get(created, "rows");
    json_t *r;
    size_t i;

    if (!json_is_array(rows))
        return;
    html_fmt(&p->b, "<div class=\"notice good\" id=\"import-summary\" role=\"status\"><p>Roster imported: "
                    "%.0f created, %.0f updated, %.0f unchanged.</p></div>\n",
             page_jnum(created, "created", 0), page_jnum(created, "updated", 0),
             page_jnum(created, "unchanged", 0));
    html_raw(&p->b, TABLE_BOX("Import report") "<table id=\"import-report\"><thead><tr><th>Line</th>"
                    "<th>Name</th><th>Role</th><th>Result</th><th>Detail</th></tr></thead><tbody>\n");
    json_array_foreach(rows, i, r)
        html_fmt(&p->b, "<tr class=\"%s\"><td class=\"num\">%.0f</td><td>%s</td><td>%s</td><td>%s</td>"
                        "<td>%s</td></tr>\n",
                 page_jstr(r, "result"), page_jnum(r, "line", 0), page_jstr(r, "name"),
                 page_jstr(r, "role"), page_jstr(r, "result"), page_jstr(r, "detail"));
    html_raw(&p->b, "</tbody></table></div>\n");
}

/* One user's row of the users table, with the token forms. */
static void put_user_row(struct page *p, const json_t *u)
{
    const char *name = page_jstr(u, "name");

    html_fmt(&p->b, "<tr><td><a href=\"/submissions?user=%u\">%s</a></td><td>%s</td><td>%s</td><td>%s</td>"
                    "<td>%R</td><td class=\"actions\">",
             name, name, page_jstr(u, "display_name"), page_jstr(u, "role"), page_jstr(u, "pseudonym"),
             json_is_true(json_object_get(u, "show_name")) ? "shown" : "pseudonym");
    html_fmt(&p->b, "<form class=\"inline\" method=\"post\" action=\"/admin/users/%u/token\">", name);
    page_csrf_field(p);
    /* aria-label, not a .sr-only span: an absolutely placed span escapes
     * the table's scroll box and widens the page at 375 px. */
    html_fmt(&p->b, "<button type=\"submit\" aria-label=\"New token for %s\">New token</button></form> "
                    "<form class=\"inline\" method=\"post\" action=\"/admin/users/%u/revoke\">",
             name, name);
    page_csrf_field(p);
    html_fmt(&p->b, "<button type=\"submit\" class=\"danger\" aria-label=\"Revoke every token of %s\">"
                    "Revoke</button></form></td></tr>\n",
             name);
}

/* The users page; created: what a POST did ({"users":[tokens]},
 * "rows":[import report]}) or NULL; problem (HTML-escaped here) and done
 * (a sentence, escaped) above the forms, or NULL. */
static int page_users(struct page *p, json_t *created, const char *problem, const char *done, int status)
{
    struct api_error e;
    json_t *users = NULL, *u;
    size_t i;

    if (!page_is_admin(p))
        return page_error(p, 403, "Not allowed", "Only admins manage users.");
    if (api_users_list(p->app, &p->user, &users, &e) != 0)
        return page_api_error(p, &e);
    page_begin(p, "Users");
    html_raw(&p->b, "<h1>Users</h1>\n");
    if (problem)
        html_fmt(&p->b, "<div class=\"notice bad\" id=\"problem\" role=\"alert\"><p>%s</p></div>\n", problem);
    if (done)
        html_fmt(&p->b, "<div class=\"notice good\" id=\"done\" role=\"status\"><p>%s</p></div>\n", done);
    if (created) {
        put_import_report(p, created);
        put_new_tokens(p, created);
    }
    html_raw(&p->b, "<div class=\"grid2\"><div class=\"panel\"><h2>Add one user</h2>\n"
                    "<form class=\"stack\" method=\"post\" action=\"/admin/users\">");
    page_csrf_field(p);
    html_raw(&p->b, "<label for=\"u-name\">User name</label><input type=\"text\" id=\"u-name\" name=\"name\" "
                    "required pattern=\"[A-Za-z0-9_.@\\-]{1,64}\">"
                    "<label for=\"u-display\">Display name</label><input type=\"text\" id=\"u-display\" name=\"display_name\">"
                    "<label for=\"u-role\">Role</label><select id=\"u-role\" name=\"role\">"
                    "<option>student</option><option>ta</option><option>admin</option><option>runner</option></select>"
                    "<p><button type=\"submit\">Add user</button></p></form></div>\n"
                    "<div class=\"panel\"><h2>Import a roster</h2>\n"
                    "<form class=\"stack\" method=\"post\" action=\"/admin/users\" enctype=\"multipart/form-data\">");
    page_csrf_field(p);
    html_raw(&p->b, "<label for=\"roster\">CSV: <code>name,role,display_name</code>, one user per line "
                    "(header optional). Import the same roster again at any time: names that exist keep "
                    "their tokens and role, and take the display name of their line.</label>"
                    "<textarea id=\"roster\" name=\"roster\" class=\"code\" "
                    "placeholder=\"name,role,display_name&#10;ada,student,Ada Lovelace\"></textarea>"
                    "<label for=\"roster-file\">&hellip;or upload the CSV file</label>"
                    "<input type=\"file\" id=\"roster-file\" name=\"roster_file\" accept=\".csv,text/csv\">"
                    "<p><button type=\"submit\">Import</button></p></form></div></div>\n");
    html_fmt(&p->b, "<h2>All users (%zu)</h2>\n<p>A lost or leaked token: <strong>New token</strong> revokes "
                    "every token of the user, ends their sessions and shows one new token once; "
                    "<strong>Revoke</strong> only takes every token and session away.</p>\n"
                    TABLE_BOX("All users") "<table class=\"sortable\" id=\"users\"><thead><tr><th data-sort=\"text\">Name</th>"
                    "<th data-sort=\"text\">Display name</th><th data-sort=\"text\">Role</th>"
                    "<th data-sort=\"text\">Pseudonym</th><th>Name on scoreboard</th><th>Tokens</th></tr></thead><tbody>\n",
             json_array_size(json_object_get(users, "users")));
    json_array_foreach(json_object_get(users, "users"), i, u)
        put_user_row(p, u);
    html_raw(&p->b, "</tbody></table></div>\n");
    json_decref(users);
    return page_end(p, status);
}

/* page_users again (page_again): s[0] the users created, as JSON (NULL:
 * none), s[1] the problem, s[2] what was done. */
static int users_again(struct page *p, const struct page_again *a)
{
    json_t *created = a->s[0] ? json_loads(a->s[0], 0, NULL) : NULL;
    if (a->s[0] && !created)
        return page_error(p, 500, "Out of memory", "Try again in a minute.");
    int rc = page_users(p, created, a->s[1], a->s[2], a->status);
    json_decref(created);
    return rc;
}

/* A POST's answer: the users page, rendered off the loop. */
static int users_form_again(struct page *p, json_t *created, const char *problem, const char *done,
                            int status)
{
    char *c = created ? json_dumps(created, JSON_COMPACT) : NULL;
    if (created && !c)
        return page_error(p, 500, "Out of memory", "Try again in a minute.");
    struct page_again a = {.status = status, .s = {c, problem, done}};
    int rc = page_again(p, users_again, &a);
    free(c);
    return rc;
}

/* The writer stored (or refused) the form's users (course_users_add_start):
 * the users page again, with the tokens made or what went wrong. */
static int users_done(struct app *app, struct http_request *req, json_t *out, int rc,
                      const struct api_error *e)
{
    struct page p;
    page_open(&p, app, req);
    int r = rc ? users_form_again(&p, NULL, e->message, NULL, e->status ? e->status : 400)
               : users_form_again(&p, out, NULL, NULL, 201);
    page_free(&p);
    return r;
}

/* The form's users as the API takes them: a roster CSV (*csv = 1), or
 * {"users":[one]}. A malloc'd body in *body (NULL: nothing filled in). */
static int users_body(struct page *p, char **body, size_t *len, int *csv)
{
    const struct form_field *roster = page_field_get(p, "roster");
    const struct multipart_part *file = multipart_find(p->parts, p->nparts, "roster_file");
    const char *name = page_field(p, "name"), *src = NULL;
    *body = NULL;
    *csv = 1;
    if (roster && roster->len > 0) {
        src = roster->value;
        *len = roster->len;
    } else if (file && file->has_filename && file->len > 0) {
        src = file->data;
        *len = file->len;
    } else if (name && *name) {
        const char *dn = page_field(p, "display_name"), *role = page_field(p, "role");
        json_t *one = json_pack("{s:[{s:s,s:s,s:s}]}", "users", "name", name, "role",
                                role ? role : "student", "display_name", dn && *dn ? dn : name);
        *body = one ? json_dumps(one, JSON_COMPACT) : NULL;
        json_decref(one);
        *len = *body ? strlen(*body) : 0;
        *csv = 0;
        return *body ? 0 : -ENOMEM;
    } else {
        return 0;
    }
    if ((*body = malloc(*len ? *len : 1)) == NULL)
        return -ENOMEM;
    memcpy(*body, src, *len);
    return 0;
}

static int post_users(struct page *p)
{
    struct api_error e;
    char *body;
    size_t len = 0;
    int csv;

    if (!page_is_admin(p))
        return page_error(p, 403, "Not allowed", "Only admins manage users.");
    if (page_post_check(p) != 0)
        return HTTP_DONE;
    if (users_body(p, &body, &len, &csv) != 0)
        return page_error(p, 500, "Out of memory", "Try again in a minute.");
    if (!body)
        return users_form_again(p, NULL, "Fill in a user name, or paste or upload a roster.", NULL,
                                400);
    /* Parsed, checked and stored by the writer (body taken over). */
    if (course_users_add_start(p->app, p->req, &p->user, csv, body, len, users_done, &e) != 0)
        return users_form_again(p, NULL, e.message, NULL, e.status ? e.status : 400);
    return HTTP_DEFERRED; /* answered by users_done */
}

static int r_users(struct page *p)
{
    return page_users(p, NULL, NULL, NULL, 200);
}

/* POST /admin/users/{name}/token: every old token revoked, one new token
 * shown once (on the writer, staff_write.c; audit-logged). */
static int token_done(struct app *app, struct http_request *req, const struct staff_write *w,
                      int rc)
{
    struct page p;
    char done[200];
    json_t *created = NULL;
    page_open(&p, app, req);
    snprintf(done, sizeof(done),
             "A new token for %s: %d old token(s) revoked, %d session(s) ended.", w->user,
             w->tokens, w->sessions);
    if (!rc)
        created = json_pack("{s:[{s:s,s:s,s:s}]}", "users", "name", w->user, "role",
                            auth_role_name(w->role), "token", w->token);
    int r = rc        ? users_form_again(&p, NULL, w->e.message, NULL,
                                         w->e.status ? w->e.status : 400)
            : created ? users_form_again(&p, created, NULL, done, 200)
                      : users_form_again(&p, NULL, "Out of memory: try again.", NULL, 500);
    json_decref(created);
    page_free(&p);
    return r;
}

static int post_token(struct page *p)
{
    struct api_error e;

    if (!page_is_admin(p))
        return page_error(p, 403, "Not allowed", "Only admins manage users.");
    if (page_post_check(p) != 0)
        return HTTP_DONE;
    struct staff_write w = {.kind = STAFF_TOKEN, .viewer = p->user};
    snprintf(w.user, sizeof(w.user), "%s", http_request_param(p->req, "name"));
    if (staff_write_start(p->app, p->req, &w, token_done, &e) != 0)
        return users_form_again(p, NULL, e.message, NULL, e.status ? e.status : 400);
    return HTTP_DEFERRED; /* answered by token_done */
}

/* POST /admin/users/{name}/revoke: every token and session of the user
 * ends (on the writer, staff_write.c; audit-logged). */
static int revoke_done(struct app *app, struct http_request *req, const struct staff_write *w,
                       int rc)
{
    struct page p;
    char done[200];
    page_open(&p, app, req);
    snprintf(done, sizeof(done),
             "Every token of %s is revoked (%d) and their %d session(s) ended. "
             "They cannot sign in until they get a new token.",
             w->user, w->tokens, w->sessions);
    int r = rc ? users_form_again(&p, NULL, w->e.message, NULL, w->e.status ? w->e.status : 400)
               : users_form_again(&p, NULL, NULL, done, 200);
    page_free(&p);
    return r;
}

static int post_revoke(struct page *p)
{
    struct api_error e;

    if (!page_is_admin(p))
        return page_error(p, 403, "Not allowed", "Only admins manage users.");
    if (page_post_check(p) != 0)
        return HTTP_DONE;
    struct staff_write w = {.kind = STAFF_REVOKE, .viewer = p->user};
    snprintf(w.user, sizeof(w.user), "%s", http_request_param(p->req, "name"));
    if (staff_write_start(p->app, p->req, &w, revoke_done, &e) != 0)
        return users_form_again(p, NULL, e.message, NULL, e.status ? e.status : 400);
    return HTTP_DEFERRED; /* answered by revoke_done */
}

const struct route user_page_routes[] = {
    PAGE_ROUTE_READ(HTTP_GET, "/admin/users", r_users),
    PAGE_ROUTE(HTTP_POST, "/admin/users", post_users),
    PAGE_ROUTE(HTTP_POST, "/admin/users/{name}/token", post_token),
    PAGE_ROUTE(HTTP_POST, "/admin/users/{name}/revoke", post_revoke),
};
const size_t user_page_nroutes = sizeof(user_page_routes) / sizeof(user_page_routes[0]);
