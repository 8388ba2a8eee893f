/*
 * course.c - labs, rubric versions, users and extensions. See course.h.
 */
#include "server/course.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/appview.h"
#include "server/roster.h"
#include "server/scoreboard.h"
#include "server/staff_write.h"
#include "server/submission.h"
#include "server/user_admin.h"

int api_labs_list(struct app *app, const struct auth_user *viewer, json_t **out,
                  struct api_error *e)
{
    json_t *arr = json_array();
    double now = db_now();
    if (!arr)
        return api_internal(e, -ENOMEM);
    for (size_t i = 0; i < app->nlabs; i++) {
        struct app_lab *l = &app->labs[i];
        double due, hard;
        api_deadlines(app, l, viewer ? viewer->id : 0, &due, &hard);
        json_array_append_new(arr, json_pack("{s:s,s:s,s:o,s:o,s:b}", "lab", l->lab.name, "title",
                                             l->lab.title ? l->lab.title : l->lab.name, "due",
                                             app_json_time(due), "hard_deadline", app_json_time(hard),
                                             "open", app_lab_open_now(l, due, hard, now)));
    }
    *out = json_pack("{s:o}", "labs", arr);
    return *out ? 0 : api_internal(e, -ENOMEM);
}

int api_lab_get(struct app *app, const struct auth_user *viewer, const char *lab, json_t **out,
                struct api_error *e)
{
    struct app_lab *l = app_lab_find(app, lab);
    if (!l)
        return api_fail(e, 404, "not_found", "There is no lab called '%.64s'.", lab);
    double due, hard;
    api_deadlines(app, l, viewer ? viewer->id : 0, &due, &hard);
    /* the speed tiers the handout names are the rubric's now (rubric.h) */
    char *handout = rubric_handout(l->has_rubric ? &l->rubric : NULL, l->lab.handout);
    if (l->lab.handout && !handout)
        return api_internal(e, -ENOMEM);
    *out = json_pack(
        "{s:s,s:s,s:o,s:o,s:s,s:s?,s:b,s:o,s:i,s:o}", "lab", l->lab.name, "title",
        l->lab.title ? l->lab.title : l->lab.name, "due", app_json_time(due), "hard_deadline",
        app_json_time(hard), "interface", l->lab.interface ? l->lab.interface : "", "handout",
        handout, "open", app_lab_open_now(l, due, hard, db_now()), "opens",
        app_json_time(l->has_rubric ? l->rubric.opens : 0), "rubric_version", l->rubric_version,
        "max_score", l->has_rubric ? json_real(l->rubric.max_score) : json_null());
    free(handout);
    return *out ? 0 : api_internal(e, -ENOMEM);
}

int api_rubric_get(struct app *app, const struct auth_user *viewer, const char *lab, json_t **out,
                   struct api_error *e)
{
    if (viewer->role != AUTH_ADMIN)
        return api_fail(e, 403, "forbidden", "Only admins may read rubrics here.");
    struct app_lab *l = app_lab_find(app, lab);
    if (!l)
        return api_fail(e, 404, "not_found", "There is no lab called '%.64s'.", lab);
    if (!l->has_rubric)
        return api_fail(e, 404, "not_found", "Lab %s has no rubric yet; PUT one.", lab);
    *out = json_pack("{s:i,s:O}", "version", l->rubric_version, "rubric", l->rubric_doc);
    return *out ? 0 : api_internal(e, -ENOMEM);
}

/* The checks of a new rubric for lab; on success *lp, *r (free with
 * rubric_free), *text (free) and *copy (a new reference) are set. 0 or
 * -errno with e. */
int course_rubric_prepare(struct app *app, const struct auth_user *viewer, const char *lab,
                          const json_t *doc, struct app_lab **lp, struct rubric *r, char **text,
                          json_t **copy, struct api_error *e)
{
    if (viewer->role != AUTH_ADMIN)
        return api_fail(e, 403, "forbidden", "Only admins may change rubrics.");
    struct app_lab *l = *lp = app_lab_find(app, lab);
    if (!l)
        return api_fail(e, 404, "not_found", "There is no lab called '%.64s'.", lab);
    if (!json_is_object(doc))
        return api_fail(e, 400, "bad_request", "A rubric is a JSON object.");
    const char *dl = json_string_value(json_object_get(doc, "lab"));
    if (dl && strcmp(dl, lab) != 0)
        return api_fail(e, 400, "bad_request", "lab: the rubric says '%.64s' but this is lab %s.",
                        dl, lab);
    char perr[300];
    if (rubric_parse(doc, &l->lab, r, perr, sizeof(perr)) != 0)
        return api_fail(e, 400, "bad_request", "%s", perr);
    *text = json_dumps(doc, JSON_COMPACT);
    *copy = json_deep_copy(doc);
    if (!*text || !*copy) {
        free(*text);
        json_decref(*copy);
        rubric_free(r);
        return api_internal(e, -ENOMEM);
    }
    return 0;
}

/* The rows of a new rubric version on db, inside the caller's transaction;
 * *version is set. 0 or -errno. */
int course_rubric_store(struct db *db, long long actor, const char *lab, const char *text,
                        int *version)
{
    int v = 1;
    sqlite3_stmt *st =
        db_stmt(db, "SELECT COALESCE(MAX(version), 0) + 1 FROM rubrics WHERE lab = ?1");
    if (!st)
        return -EIO;
    sqlite3_bind_text(st, 1, lab, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int(st, 0);
    sqlite3_reset(st);
    st = db_stmt(db, "INSERT INTO rubrics(lab, version, doc, created_at, created_by)"
                     " VALUES(?1, ?2, ?3, ?4, ?5)");
    if (!st)
        return -EIO;
    sqlite3_bind_text(st, 1, lab, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 2, v);
    sqlite3_bind_text(st, 3, text, -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 4, db_now());
    sqlite3_bind_int64(st, 5, actor);
    int rc = db_step_done(st);
    if (!rc) {
        char detail[32];
        snprintf(detail, sizeof(detail), "version %d", v);
        rc = db_audit(db, actor, "rubric_change", lab, detail);
    }
    *version = v;
    return rc;
}

/* Loop thread, once version v is stored: it becomes l's rubric (r and copy
 * are taken over). */
void course_rubric_install(struct app *app, struct app_lab *l, struct rubric *r, json_t *copy,
                           int v, const char *by)
{
    app_rubric_drop(app, l->has_rubric ? &l->rubric : NULL, l->rubric_doc);
    l->rubric = *r;
    l->rubric_doc = copy;
    app_log("lab %s: rubric version %d stored by %s", l->lab.name, v, by);
    l->rubric_version = v;
    l->has_rubric = 1;
    scoreboard_invalidate(app, l->lab.name);
    api_cache_invalidate(app, 0);
}

/* The rows, on db inside the caller's transaction (the loop's connection
 * for the pages, the writer's for the API). 0 or -errno with e. */
static int users_add_rows(struct db *db, const struct auth_user *viewer, size_t n,
                          const char *const *names, const char *const *roles,
                          const char *const *displays, const int *lines, json_t **out,
                          struct api_error *e)
{
    if (viewer->role != AUTH_ADMIN)
        return api_fail(e, 403, "forbidden", "Only admins may add users.");
    json_t *arr = json_array();
    int rc;
    if (!arr)
        return api_internal(e, -ENOMEM);
    for (size_t i = 0; i < n; i++) {
        enum auth_role role;
        char where[32];
        if (lines)
            snprintf(where, sizeof(where), "line %d", lines[i]);
        else
            snprintf(where, sizeof(where), "users[%zu]", i);
        if (auth_role_parse(roles[i], &role)) {
            rc = api_fail(e, 400, "bad_request",
                          "%s: role '%.32s' is not one of student, ta, admin, runner.", where,
                          roles[i] ? roles[i] : "");
            goto fail;
        }
        if (!names[i] || !auth_name_valid(names[i])) {
            rc = api_fail(e, 400, "bad_request",
                          "%s: name must be 1-64 letters, digits, '_', '.', '@' or '-'.", where);
            goto fail;
        }
        if (displays[i] && strlen(displays[i]) > 128) {
            rc = api_fail(e, 400, "bad_request", "%s: display_name is longer than 128 characters.",
                          where);
            goto fail;
        }
        char token[AUTH_TOKEN_LEN + 1];
        rc = auth_user_add(db, names[i], role, displays[i], token);
        if (rc == -EEXIST) {
            rc = api_fail(e, 409, "conflict", "%s: a user called '%s' already exists.", where,
                          names[i]);
            goto fail;
        }
        if (rc == -EINVAL) {
            rc = api_fail(e, 400, "bad_request", "%s: display_name must be UTF-8 text.", where);
            goto fail;
        }
        if (rc) {
            rc = api_internal(e, rc);
            goto fail;
        }
        json_array_append_new(arr, json_pack("{s:s,s:s,s:s}", "name", names[i], "role",
                                             auth_role_name(role), "token", token));
        db_audit(db, viewer->id, "user_add", names[i], auth_role_name(role));
    }
    *out = json_pack("{s:o}", "users", arr);
    return *out ? 0 : api_internal(e, -ENOMEM);
fail:
    json_decref(arr);
    return rc;
}

int course_users_add_json(struct db *db, const struct auth_user *viewer, const json_t *users,
                          json_t **out, struct api_error *e)
{
    if (!json_is_array(users) || json_array_size(users) == 0)
        return api_fail(
            e, 400, "bad_request",
            "users: expected a non-empty array of {\"name\",\"role\",\"display_name\"}.");
    size_t n = json_array_size(users);
    if (n > ROSTER_MAX_ROWS)
        return api_fail(e, 400, "bad_request", "users: at most %d at a time.", ROSTER_MAX_ROWS);
    const char **names = calloc(n, sizeof(char *)), **roles = calloc(n, sizeof(char *)),
               **disp = calloc(n, sizeof(char *));
    int rc;
    if (!names || !roles || !disp) {
        rc = api_internal(e, -ENOMEM);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *u = json_array_get(users, i);
        if (!json_is_object(u)) {
            rc = api_fail(e, 400, "bad_request", "users[%zu]: expected an object.", i);
            goto out;
        }
        names[i] = json_string_value(json_object_get(u, "name"));
        roles[i] = json_string_value(json_object_get(u, "role"));
        disp[i] = json_string_value(json_object_get(u, "display_name"));
        if (!names[i]) {
            rc = api_fail(e, 400, "bad_request", "users[%zu].name: missing or not a string.", i);
            goto out;
        }
        if (!roles[i]) {
            rc = api_fail(e, 400, "bad_request", "users[%zu].role: missing or not a string.", i);
            goto out;
        }
        json_t *dn = json_object_get(u, "display_name");
        if (dn && !json_is_string(dn) && !json_is_null(dn)) {
            rc = api_fail(e, 400, "bad_request", "users[%zu].display_name: must be a string.", i);
            goto out;
        }
    }
    rc = users_add_rows(db, viewer, n, names, roles, disp, NULL, out, e);
out:
    free(names);
    free(roles);
    free(disp);
    return rc;
}

int course_users_add_csv(struct db *db, const struct auth_user *viewer, const char *csv,
                         size_t len, json_t **out, struct api_error *e)
{
    struct roster_row *rows;
    size_t n;
    char err[256];
    if (viewer->role != AUTH_ADMIN)
        return api_fail(e, 403, "forbidden", "Only admins may add users.");
    int rc = roster_parse(csv, len, &rows, &n, err, sizeof(err));
    if (rc == -ENOMEM)
        return api_internal(e, rc);
    if (rc)
        return api_fail(e, 400, "bad_request", "Roster: %s", err);
    /* Run again, a roster updates or keeps the users it names: it never
     * fails on them (user_admin_import). */
    rc = user_admin_import(db, viewer, rows, n, out, e);
    free(rows);
    return rc;
}

int api_users_list(struct app *app, const struct auth_user *viewer, json_t **out,
                   struct api_error *e)
{
    if (!auth_role_staff(viewer->role))
        return api_fail(e, 403, "forbidden", "Only the course staff may list users.");
    sqlite3_stmt *st = db_stmt(app->db, "SELECT id, name, role, display_name, pseudonym, show_name,"
                                        " created_at FROM users ORDER BY id");
    if (!st)
        return api_internal(e, -EIO);
    json_t *arr = json_array();
    while (sqlite3_step(st) == SQLITE_ROW)
        json_array_append_new(
            arr, json_pack("{s:I,s:s,s:s,s:s,s:s,s:b,s:o}", "id",
                           (json_int_t)sqlite3_column_int64(st, 0), "name", db_col_text(st, 1),
                           "role", db_col_text(st, 2), "display_name", db_col_text(st, 3),
                           "pseudonym", db_col_text(st, 4), "show_name", sqlite3_column_int(st, 5),
                           "created_at", app_json_time(sqlite3_column_double(st, 6))));
    sqlite3_reset(st);
    *out = json_pack("{s:o}", "users", arr);
    return *out ? 0 : api_internal(e, -ENOMEM);
}

int api_show_name_set(struct app *app, const struct auth_user *viewer, int show,
                      struct api_error *e)
{
    struct staff_write w = {.kind = STAFF_SHOW_NAME, .viewer = *viewer, .show = show};
    return staff_write_now(app, &w, e);
}

static json_t *rubric_version_row(sqlite3_stmt *st)
{
    return json_pack("{s:i,s:f,s:o}", "version", sqlite3_column_int(st, 0), "created_at",
                     sqlite3_column_double(st, 1), "by", db_col_json_text(st, 2));
}

int course_rubric_versions(struct app *app, const char *lab, json_t **out)
{
    sqlite3_stmt *st = db_stmt(app->db, "SELECT r.version, r.created_at, u.name FROM rubrics r "
                                        "LEFT JOIN users u ON u.id = r.created_by WHERE r.lab = ?1 "
                                        "ORDER BY r.version DESC LIMIT 50");
    *out = NULL;
    if (!st)
        return -EIO;
    sqlite3_bind_text(st, 1, lab, -1, SQLITE_TRANSIENT);
    return db_rows_json(st, rubric_version_row, out);
}

static json_t *extension_row(sqlite3_stmt *st)
{
    return json_pack("{s:s,s:s,s:f,s:f}", "user", db_col_text(st, 0), "lab", db_col_text(st, 1),
                     "due", sqlite3_column_double(st, 2), "hard_deadline",
                     sqlite3_column_double(st, 3));
}

int course_extensions_list(struct app *app, json_t **out)
{
    sqlite3_stmt *st = db_stmt(app->db, "SELECT u.name, e.lab, e.due, e.hard_deadline FROM extensions e "
                                        "JOIN users u ON u.id = e.user_id ORDER BY e.lab, u.name");
    *out = NULL;
    if (!st)
        return -EIO;
    return db_rows_json(st, extension_row, out);
}
