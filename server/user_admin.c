/*
 * user_admin.c - a roster import that may run again, and a user's new
 * token. See user_admin.h.
 */
#include "server/user_admin.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

/* Counters of an import, in the order of the results' names. */
enum { IMPORT_CREATED, IMPORT_UPDATED, IMPORT_UNCHANGED };
static const char *const import_result[] = {"created", "updated", "unchanged"};

/* An existing user u named by roster row r: its display name follows the
 * row's when the row has one; its role stays. The result's index, or
 * -errno. detail receives the sentence the report shows. */
static int import_existing(struct db *db, const struct auth_user *viewer, const struct auth_user *u,
                           const struct roster_row *r, char *detail, size_t dlen)
{
    int result = IMPORT_UNCHANGED;
    const char *role = auth_role_name(u->role);
    detail[0] = '\0';
    if (r->display_name[0] && strcmp(r->display_name, u->display_name) != 0) {
        sqlite3_stmt *st = db_stmt(db, "UPDATE users SET display_name = ?1 WHERE id = ?2");
        if (!st)
            return -EIO;
        sqlite3_bind_text(st, 1, r->display_name, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, u->id);
        int rc = db_step_done(st);
        if (rc)
            return rc;
        db_audit(db, viewer->id, "user_update", u->name, "display name from the roster");
        snprintf(detail, dlen, "display name changed to %s", r->display_name);
        result = IMPORT_UPDATED;
    } else {
        snprintf(detail, dlen, "already a user; nothing changed");
    }
    if (strcmp(r->role, role) != 0) {
        size_t k = strlen(detail);
        snprintf(detail + k, dlen - k,
                 "; stays %s (the roster says %s: an import never changes "
                 "a role)",
                 role, r->role);
    }
    return result;
}

/* One roster row: created (with its token appended to users) or the
 * existing user's result; its report row appended to report. The result's
 * index, or -errno with e. */
static int import_row(struct db *db, const struct auth_user *viewer, const struct roster_row *r,
                      json_t *users, json_t *report, struct api_error *e)
{
    struct auth_user u;
    char detail[300] = "";
    enum auth_role role;
    int rc = auth_user_get(db, r->name, &u), result;

    if (rc == 0) {
        result = import_existing(db, viewer, &u, r, detail, sizeof(detail));
        if (result < 0)
            return api_internal(e, result);
    } else if (rc == -ENOENT) {
        char token[AUTH_TOKEN_LEN + 1];
        if (auth_role_parse(r->role, &role)) /* roster_parse checked it */
            return api_fail(e, 400, "bad_request", "line %d: role '%.32s' is not known.", r->line,
                            r->role);
        rc = auth_user_add(db, r->name, role, r->display_name[0] ? r->display_name : NULL, token);
        if (rc)
            return api_internal(e, rc);
        db_audit(db, viewer->id, "user_add", r->name, r->role);
        json_array_append_new(
            users, json_pack("{s:s,s:s,s:s}", "name", r->name, "role", r->role, "token", token));
        u.role = role;
        snprintf(detail, sizeof(detail), "new user; token below");
        result = IMPORT_CREATED;
    } else {
        return api_internal(e, rc);
    }
    json_array_append_new(report, json_pack("{s:i,s:s,s:s,s:s,s:s}", "line", r->line, "name",
                                            r->name, "role", auth_role_name(u.role), "result",
                                            import_result[result], "detail", detail));
    return result;
}

int user_admin_import(struct db *db, const struct auth_user *viewer, const struct roster_row *rows,
                      size_t n, json_t **out, struct api_error *e)
{
    int count[3] = {0, 0, 0};
    if (viewer->role != AUTH_ADMIN)
        return api_fail(e, 403, "forbidden", "Only admins may add users.");
    json_t *users = json_array(), *report = json_array();
    if (!users || !report) {
        json_decref(users);
        json_decref(report);
        return api_internal(e, -ENOMEM);
    }
    for (size_t i = 0; i < n; i++) {
        int rc = import_row(db, viewer, &rows[i], users, report, e);
        if (rc < 0) {
            json_decref(users);
            json_decref(report);
            return rc;
        }
        assert(rc <= IMPORT_UNCHANGED);
        count[rc]++;
    }
    if (count[IMPORT_UPDATED])
        auth_cache_clear(); /* cached lookups carry the display name */
    *out = json_pack("{s:o,s:o,s:i,s:i,s:i}", "users", users, "rows", report, "created",
                     count[IMPORT_CREATED], "updated", count[IMPORT_UPDATED], "unchanged",
                     count[IMPORT_UNCHANGED]);
    return *out ? 0 : api_internal(e, -ENOMEM);
}
