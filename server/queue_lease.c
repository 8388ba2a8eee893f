/*
 * queue_lease.c - a leased job's rows: the lease checked, progress that
 * renews it, the result and a later profile that must name it. Each runs
 * on the caller's connection, inside the caller's transaction (the
 * writer's). See queue.h.
 */
#include "server/queue.h"

#include "status.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Is the lease of id held by this runner? 0 yes, -ENOENT, -ESTALE. */
static int lease_check(struct db *db, long long id, long long runner_user, const char *runner,
                       int attempt, int *attempts, int *max_attempts)
{
    sqlite3_stmt *st = db_stmt(db, "SELECT status, lease_user, lease_runner, attempts, "
                                      "max_attempts FROM submissions WHERE id = ?1");
    if (!st)
        return -EIO;
    sqlite3_bind_int64(st, 1, id);
    int rc = sqlite3_step(st);
    if (rc != SQLITE_ROW) {
        sqlite3_reset(st);
        return rc == SQLITE_DONE ? -ENOENT : db_errno(rc);
    }
    int held = status_in_progress(db_col_text(st, 0)) &&
               sqlite3_column_int64(st, 1) == runner_user &&
               (!runner || !*runner || strcmp(runner, db_col_text(st, 2)) == 0) &&
               (attempt <= 0 || attempt == sqlite3_column_int(st, 3));
    *attempts = sqlite3_column_int(st, 3);
    *max_attempts = sqlite3_column_int(st, 4);
    sqlite3_reset(st);
    return held ? 0 : -ESTALE;
}


int queue_progress_in(struct db *db, long long id, long long runner_user, const char *runner,
                      int attempt, const char *phase, const char *detail, double lease_s)
{
    int attempts, max_attempts;
    int rc = lease_check(db, id, runner_user, runner, attempt, &attempts, &max_attempts);
    if (rc)
        return rc;
    double now = db_now();
    sqlite3_stmt *st = db_stmt(
        db, "UPDATE submissions SET status = ?1, phase = ?1, detail = ?2, lease_expires = ?3,"
               " updated_at = ?4 WHERE id = ?5 AND status IN " QUEUE_IN_PROGRESS " AND lease_user = ?6");
    if (!st)
        return -EIO;
    sqlite3_bind_text(st, 1, phase, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, detail ? detail : "", -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 3, now + lease_s);
    sqlite3_bind_double(st, 4, now);
    sqlite3_bind_int64(st, 5, id);
    sqlite3_bind_int64(st, 6, runner_user);
    rc = db_step_done(st);
    if (!rc && db_changes(db) == 0)
        rc = -ESTALE;
    return rc;
}

int queue_result_in(struct db *db, long long id, long long runner_user, const char *runner,
                    int attempt, const struct queue_result *res, const char **final_status)
{
    int attempts, max_attempts;
    int rc = lease_check(db, id, runner_user, runner, attempt, &attempts, &max_attempts);
    if (rc)
        return rc;
    double now = db_now();
    sqlite3_stmt *st;
    if (strcmp(res->status, "system_error") == 0 && attempts < max_attempts) {
        /* Our fault, not the student's: try again on another claim. */
        st = db_stmt(db,
                     "UPDATE submissions SET status = 'queued', phase = '', detail = ?1, "
                     "lease_runner = NULL, profile_key = NULL,"
                     " lease_user = NULL, lease_expires = NULL, updated_at = ?2 WHERE id = ?3");
        if (!st)
            return -EIO;
        sqlite3_bind_text(st, 1, "system error; retrying", -1, SQLITE_STATIC);
        sqlite3_bind_double(st, 2, now);
        sqlite3_bind_int64(st, 3, id);
        *final_status = "queued";
    } else {
        st = db_stmt(
            db,
            "UPDATE submissions SET status = ?1, phase = '', detail = '', result = ?2, score = ?3,"
            " max_score = ?4, speedup = ?5, graded_at = ?6, updated_at = ?6, lease_runner = NULL,"
            " lease_user = NULL, lease_expires = NULL, profile_key = ?8 WHERE id = ?7");
        if (!st)
            return -EIO;
        /* The lease and the runner's key name the one profile that may
         * follow this verdict (queue_profile_in); a later result, a retry
         * or a regrade replaces or clears it. */
        char key[256];
        if (res->profile_key && *res->profile_key) {
            snprintf(key, sizeof key, "%lld:%s:%d:%s", runner_user, runner ? runner : "", attempt,
                     res->profile_key);
            sqlite3_bind_text(st, 8, key, -1, SQLITE_TRANSIENT);
        }
        sqlite3_bind_text(st, 1, res->status, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, res->result_json, -1, SQLITE_STATIC);
        if (res->has_score) {
            sqlite3_bind_double(st, 3, res->score);
            sqlite3_bind_double(st, 4, res->max_score);
        }
        if (res->has_speedup)
            sqlite3_bind_double(st, 5, res->speedup);
        sqlite3_bind_double(st, 6, now);
        sqlite3_bind_int64(st, 7, id);
        *final_status = res->status;
    }
    return db_step_done(st);
}

/* The update's keys that may change in a stored result: the profile and
 * the hints that come from it. Never the score. */
static const char *const profile_update_keys[] = {"profile", "hints", "hint_details"};

/* result (the stored text) with cugrade's profile_update_keys from update.
 * Returns a new string (caller frees) or NULL. */
static char *profile_merge(const char *result, const json_t *update)
{
    json_t *doc = json_loads(result ? result : "", 0, NULL);
    json_t *cg = json_object_get(doc, "cugrade");
    char *text = NULL;
    if (!json_is_object(cg))
        goto out;
    for (size_t i = 0; i < sizeof profile_update_keys / sizeof profile_update_keys[0]; i++) {
        json_t *v = json_object_get(update, profile_update_keys[i]);
        if (v && json_object_set(cg, profile_update_keys[i], v) < 0)
            goto out;
    }
    text = json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(15));
out:
    json_decref(doc);
    return text;
}

int queue_profile_in(struct db *db, long long id, long long runner_user, const char *runner,
                     int attempt, const char *key, const json_t *update)
{
    char want[256];
    assert(json_is_object(update));
    snprintf(want, sizeof want, "%lld:%s:%d:%s", runner_user, runner ? runner : "", attempt,
             key ? key : "");
    sqlite3_stmt *st =
        db_stmt(db, "SELECT status, profile_key, result FROM submissions WHERE id = ?1");
    if (!st)
        return -EIO;
    sqlite3_bind_int64(st, 1, id);
    int rc = sqlite3_step(st);
    if (rc != SQLITE_ROW) {
        sqlite3_reset(st);
        return rc == SQLITE_DONE ? -ENOENT : db_errno(rc);
    }
    /* Only the verdict this runner posted with this key: a regrade, a
     * retry or a newer result cleared or replaced the key. */
    int ours = status_verdict(db_col_text(st, 0)) && sqlite3_column_type(st, 1) == SQLITE_TEXT &&
               strcmp(db_col_text(st, 1), want) == 0;
    char *text = ours ? profile_merge(db_col_text(st, 2), update) : NULL;
    sqlite3_reset(st);
    if (!ours)
        return -ESTALE;
    if (!text)
        return -ENOMEM;
    st = db_stmt(db, "UPDATE submissions SET result = ?1, updated_at = ?2 WHERE id = ?3");
    if (!st) {
        free(text);
        return -EIO;
    }
    sqlite3_bind_text(st, 1, text, -1, SQLITE_TRANSIENT);
    sqlite3_bind_double(st, 2, db_now());
    sqlite3_bind_int64(st, 3, id);
    rc = db_step_done(st);
    free(text);
    return rc;
}

int queue_release_in(struct db *db, long long id, long long runner_user, const char *runner,
                     int attempt, int handed_back)
{
    assert(id > 0 && attempt > 0 && runner);
    /* A claim the runner never saw: only the row as the claim left it
     * ('compiling' with that lease). A job handed back: any phase short of
     * a verdict, with that lease. */
    sqlite3_stmt *st =
        db_stmt(db, "UPDATE submissions SET status = 'queued', phase = '', detail = ?6,"
                    " attempts = attempts - 1, lease_runner = NULL, lease_user = NULL,"
                    " lease_expires = NULL, updated_at = ?1 WHERE id = ?2"
                    " AND (status = 'compiling' OR (?7 AND status IN " QUEUE_IN_PROGRESS "))"
                    " AND lease_user = ?3 AND lease_runner = ?4 AND attempts = ?5");
    if (!st)
        return -EIO;
    sqlite3_bind_double(st, 1, db_now());
    sqlite3_bind_int64(st, 2, id);
    sqlite3_bind_int64(st, 3, runner_user);
    sqlite3_bind_text(st, 4, runner, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 5, attempt);
    sqlite3_bind_text(st, 6, handed_back ? "moved to a GPU with room" : "", -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 7, handed_back != 0);
    int rc = db_step_done(st);
    return rc ? rc : db_changes(db) == 0 ? -ESTALE : 0;
}
