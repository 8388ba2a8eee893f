/*
 * audit.c - reading the audit log. See audit.h.
 */
#include "server/audit.h"

#include <errno.h>

static json_t *audit_row(sqlite3_stmt *st)
{
    return json_pack("{s:f,s:o,s:s,s:s,s:s}", "at", sqlite3_column_double(st, 0), "who",
                     db_col_json_text(st, 1), "action", db_col_text(st, 2), "target",
                     db_col_text(st, 3), "detail", db_col_text(st, 4));
}

int audit_list(struct app *app, const char *action, json_t **out)
{
    sqlite3_stmt *st = db_stmt(app->db, "SELECT a.at, u.name, a.action, a.target, a.detail FROM audit_log a "
                                        "LEFT JOIN users u ON u.id = a.actor_user_id "
                                        "WHERE ?1 IS NULL OR a.action = ?1 ORDER BY a.id DESC LIMIT 500");
    *out = NULL;
    if (!st)
        return -EIO;
    if (action)
        sqlite3_bind_text(st, 1, action, -1, SQLITE_TRANSIENT);
    return db_rows_json(st, audit_row, out);
}
