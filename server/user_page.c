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
#include "server/views.h"

static int page_users(struct page *p, json_t *created, const char *problem, int status)
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
        html_fmt(&p->b, "<div class=\"notice bad\" role=\"alert\"><p>%s</p></div>\n", problem);
    if (created) {
        html_raw(&p->b, "<div class=\"notice good\"><p><strong>New tokens: copy them now.</strong> "
                        "They are stored only as hashes and cannot be shown again.</p>\n"
                        TABLE_BOX("New tokens") "<table id=\"new-tokens\"><thead><tr><th>Name</th><th>Role</th><th>Token</th></tr></thead><tbody>\n");
        json_array_foreach(json_object_get(created, "users"), i, u)
            html_fmt(&p->b, "<tr><td>%s</td><td>%s</td><td><span class=\"token\">%s</span></td></tr>\n",
                     page_jstr(u, "name"), page_jstr(u, "role"), page_jstr(u, "token"));
        html_raw(&p->b, "</tbody></table></div></div>\n");
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
                    "(header optional)</label><textarea id=\"roster\" name=\"roster\" class=\"code\" "
                    "placeholder=\"name,role,display_name&#10;ada,student,Ada Lovelace\"></textarea>"
                    "<label for=\"roster-file\">&hellip;or upload the CSV file</label>"
                    "<input type=\"file\" id=\"roster-file\" name=\"roster_file\" accept=\".csv,text/csv\">"
                    "<p><button type=\"submit\">Import</button></p></form></div></div>\n");
    html_fmt(&p->b, "<h2>All users (%zu)</h2>\n" TABLE_BOX("All users") "<table class=\"sortable\"><thead><tr><th data-sort=\"text\">Name</th>"
                    "<th data-sort=\"text\">Display name</th><th data-sort=\"text\">Role</th>"
                    "<th data-sort=\"text\">Pseudonym</th><th>Name on scoreboard</th></tr></thead><tbody>\n",
             json_array_size(json_object_get(users, "users")));
    json_array_foreach(json_object_get(users, "users"), i, u)
        html_fmt(&p->b, "<tr><td><a href=\"/submissions?user=%u\">%s</a></td><td>%s</td><td>%s</td><td>%s</td><td>%R</td></tr>\n",
                 page_jstr(u, "name"), page_jstr(u, "name"), page_jstr(u, "display_name"), page_jstr(u, "role"),
                 page_jstr(u, "pseudonym"), json_is_true(json_object_get(u, "show_name")) ? "shown" : "pseudonym");
    html_raw(&p->b, "</tbody></table></div>\n");
    json_decref(users);
    return page_end(p, status);
}

static int post_users(struct page *p)
{
    struct api_error e;
    const struct form_field *roster;
    const struct multipart_part *file;
    const char *name;
    json_t *out = NULL, *list;
    int rc;

    if (!page_is_admin(p))
        return page_error(p, 403, "Not allowed", "Only admins manage users.");
    if (page_post_check(p) != 0)
        return HTTP_DONE;
    roster = page_field_get(p, "roster");
    name = page_field(p, "name");
    file = multipart_find(p->parts, p->nparts, "roster_file");
    if (roster && roster->len > 0) {
        rc = api_users_add_csv(p->app, &p->user, roster->value, roster->len, &out, &e);
    } else if (file && file->has_filename && file->len > 0) {
        rc = api_users_add_csv(p->app, &p->user, file->data, file->len, &out, &e);
    } else if (name && *name) {
        const char *dn = page_field(p, "display_name");
        list = json_pack("[{s:s,s:s,s:s}]", "name", name, "role", page_field(p, "role") ? page_field(p, "role") : "student",
                         "display_name", dn && *dn ? dn : name);
        if (list == NULL)
            return page_error(p, 500, "Out of memory", "Try again in a minute.");
        rc = api_users_add(p->app, &p->user, list, &out, &e);
        json_decref(list);
    } else {
        return page_users(p, NULL, "Fill in a user name, or paste or upload a roster.", 400);
    }
    if (rc != 0)
        return page_users(p, NULL, e.message, e.status ? e.status : 400);
    rc = page_users(p, out, NULL, 201);
    json_decref(out);
    return rc;
}

static int r_users(struct page *p)
{
    return page_users(p, NULL, NULL, 200);
}

const struct route user_page_routes[] = {
    PAGE_ROUTE(HTTP_GET, "/admin/users", r_users),
    PAGE_ROUTE(HTTP_POST, "/admin/users", post_users),
};
const size_t user_page_nroutes = sizeof(user_page_routes) / sizeof(user_page_routes[0]);
