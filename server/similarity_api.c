/*
 * similarity_api.c - the similarity checks' reports (JSON) and routes; the
 * runs themselves are in similarity.c. See similarity.h.
 */
#include "server/similarity.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/api.h"
#include "server/auth.h"
#include "server/db.h"

/* ---- reports ---- */

static json_t *run_json(sqlite3_stmt *st)
{
    char started[40], finished[40] = "";
    api_time_iso(sqlite3_column_double(st, 6), started, sizeof(started));
    if (sqlite3_column_type(st, 7) != SQLITE_NULL)
        api_time_iso(sqlite3_column_double(st, 7), finished, sizeof(finished));
    return json_pack("{s:I,s:s,s:s,s:i,s:b,s:s,s:s,s:s?,s:s}", "id",
                     (json_int_t)sqlite3_column_int64(st, 0), "status", db_col_text(st, 1), "tool",
                     db_col_text(st, 2), "files", sqlite3_column_int(st, 3), "starter_excluded",
                     sqlite3_column_int(st, 4), "detail", db_col_text(st, 5), "started_at", started,
                     "finished_at", finished[0] ? finished : NULL, "by", db_col_text(st, 8));
}

#define PAIR_COLS                                                                                  \
    "p.id, p.percent, p.sub_a, ua.name, p.percent_a, p.sub_b, ub.name, p.percent_b, p.regions,"    \
    " p.run_id, r.lab"
#define PAIR_FROM                                                                                  \
    " FROM similarity_pairs p JOIN similarity_runs r ON r.id = p.run_id"                           \
    " JOIN submissions sa ON sa.id = p.sub_a JOIN users ua ON ua.id = sa.user_id"                  \
    " JOIN submissions sb ON sb.id = p.sub_b JOIN users ub ON ub.id = sb.user_id"

static json_t *pair_json(sqlite3_stmt *st, int with_regions)
{
    json_t *o = json_pack(
        "{s:I,s:f,s:{s:s,s:I,s:f},s:{s:s,s:I,s:f},s:I,s:s}", "id",
        (json_int_t)sqlite3_column_int64(st, 0), "percent", sqlite3_column_double(st, 1), "a",
        "user", db_col_text(st, 3), "submission", (json_int_t)sqlite3_column_int64(st, 2),
        "percent", sqlite3_column_double(st, 4), "b", "user", db_col_text(st, 6), "submission",
        (json_int_t)sqlite3_column_int64(st, 5), "percent", sqlite3_column_double(st, 7), "run",
        (json_int_t)sqlite3_column_int64(st, 9), "lab", db_col_text(st, 10));
    if (o && with_regions) {
        json_t *r = json_loads(db_col_text(st, 8), 0, NULL);
        json_object_set_new(o, "regions", r ? r : json_array());
    }
    return o;
}

int similarity_report(struct app *app, const struct auth_user *viewer, const char *lab,
                      json_t **out, struct api_error *e)
{
    if (!auth_role_staff(viewer->role))
        return api_fail(e, 403, "forbidden", "Only the course staff see similarity checks.");
    if (!app_lab_find(app, lab))
        return api_fail(e, 404, "not_found", "There is no lab called '%.64s'.", lab);
    sqlite3_stmt *st = db_stmt(
        app->db, "SELECT r.id, r.status, r.tool, r.files, r.starter_excluded, r.detail,"
                 " r.started_at, r.finished_at, COALESCE(u.name, '') FROM similarity_runs r"
                 " LEFT JOIN users u ON u.id = r.by_user WHERE r.lab = ?1 ORDER BY r.id DESC"
                 " LIMIT 1");
    if (!st)
        return api_internal(e, -EIO);
    sqlite3_bind_text(st, 1, lab, -1, SQLITE_STATIC);
    json_t *run = json_null();
    long long run_id = 0;
    if (sqlite3_step(st) == SQLITE_ROW) {
        run_id = sqlite3_column_int64(st, 0);
        run = run_json(st);
    }
    sqlite3_reset(st);
    json_t *pairs = json_array();
    st = db_stmt(app->db, "SELECT " PAIR_COLS PAIR_FROM " WHERE p.run_id = ?1"
                          " ORDER BY p.percent DESC, p.id LIMIT 500");
    if (st && pairs) {
        sqlite3_bind_int64(st, 1, run_id);
        while (sqlite3_step(st) == SQLITE_ROW)
            json_array_append_new(pairs, pair_json(st, 0));
        sqlite3_reset(st);
    }
    *out = json_pack("{s:s,s:o,s:o}", "lab", lab, "run", run ? run : json_null(), "pairs",
                     pairs ? pairs : json_array());
    return *out ? 0 : api_internal(e, -ENOMEM);
}

int similarity_pair(struct app *app, const struct auth_user *viewer, long long pair_id,
                    json_t **out, struct api_error *e)
{
    if (!auth_role_staff(viewer->role))
        return api_fail(e, 403, "forbidden", "Only the course staff see similarity checks.");
    sqlite3_stmt *st = db_stmt(app->db, "SELECT " PAIR_COLS PAIR_FROM " WHERE p.id = ?1");
    if (!st)
        return api_internal(e, -EIO);
    sqlite3_bind_int64(st, 1, pair_id);
    *out = sqlite3_step(st) == SQLITE_ROW ? pair_json(st, 1) : NULL;
    sqlite3_reset(st);
    if (!*out)
        return api_fail(e, 404, "not_found", "There is no similar pair %lld.", pair_id);
    return 0;
}

/* ---- routes ---- */

#define STAFF (API_ROLE(AUTH_TA) | API_ROLE(AUTH_ADMIN))

static int send_err(struct http_request *req, const struct api_error *e)
{
    api_error_send(req, e);
    return HTTP_DONE;
}

static int h_start(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    long long id = 0;
    if (api_need(app, req, &u, STAFF))
        return HTTP_DONE;
    if (similarity_start(app, &u, http_request_param(req, "lab"), &id, &e))
        return send_err(req, &e);
    char url[128];
    snprintf(url, sizeof(url), "/api/admin/labs/%s/similarity", http_request_param(req, "lab"));
    return api_send_json(
        req, 202,
        json_pack("{s:I,s:s,s:s}", "run", (json_int_t)id, "status", "running", "url", url));
}

static int h_report(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    json_t *out;
    if (api_need(app, req, &u, STAFF))
        return HTTP_DONE;
    if (similarity_report(app, &u, http_request_param(req, "lab"), &out, &e))
        return send_err(req, &e);
    return api_send_json(req, 200, out);
}

static int h_pair(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    json_t *out;
    if (api_need(app, req, &u, STAFF))
        return HTTP_DONE;
    const char *s = http_request_param(req, "id");
    char *end;
    long long id = s && *s >= '1' && *s <= '9' && strlen(s) < 19 ? strtoll(s, &end, 10) : 0;
    if (id <= 0 || *end) {
        api_fail(&e, 404, "not_found", "Pair ids are positive integers.");
        return send_err(req, &e);
    }
    if (similarity_pair(app, &u, id, &out, &e))
        return send_err(req, &e);
    return api_send_json(req, 200, out);
}

const struct route similarity_routes[] = {
    {HTTP_POST, "/api/admin/labs/{lab}/similarity", h_start, 4096, NULL},
    {HTTP_GET, "/api/admin/labs/{lab}/similarity", h_report, 0, NULL},
    {HTTP_GET, "/api/admin/similarity/pairs/{id}", h_pair, 0, NULL},
};
const size_t similarity_nroutes = sizeof(similarity_routes) / sizeof(similarity_routes[0]);
