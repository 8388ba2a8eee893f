/*
 * server_scoreboard.c - unit tests (TAP) for the scoreboard: best
 * submission per student, ties broken by speedup then the earliest,
 * overrides replacing scores, staff kept off the board, pseudonyms for
 * students unless they opted in, and CSV cells safe from formula injection.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/course.h"
#include "server/scoreboard.h"
#include "server/server.h"

#include "tests/unit/tap.h"

static struct db *db;

static long long uid(const char *name)
{
    struct auth_user u;
    return auth_user_get(db, name, &u) == 0 ? u.id : -1;
}

/* A graded submission; speedup < 0 means none. Returns its id. */
static long long graded(const char *user, double score, double speedup, double created)
{
    sqlite3_stmt *st =
        db_stmt(db, "INSERT INTO submissions(user_id, lab, filename, source, sha256,"
                    " size, status, score, max_score, speedup, created_at, updated_at)"
                    " VALUES(?1, 'board', 'k.cu', 'x', 'h', 1, 'graded', ?2, 100, ?3,"
                    " ?4, ?4)");
    sqlite3_bind_int64(st, 1, uid(user));
    sqlite3_bind_double(st, 2, score);
    if (speedup >= 0)
        sqlite3_bind_double(st, 3, speedup);
    sqlite3_bind_double(st, 4, created);
    db_step_done(st);
    return db_last_id(db);
}

static const char *row_user(json_t *sb, size_t i)
{
    return json_string_value(
        json_object_get(json_array_get(json_object_get(sb, "rows"), i), "user"));
}

static double row_score(json_t *sb, size_t i)
{
    return json_number_value(
        json_object_get(json_array_get(json_object_get(sb, "rows"), i), "score"));
}

static long long row_sub(json_t *sb, size_t i)
{
    return json_integer_value(
        json_object_get(json_array_get(json_object_get(sb, "rows"), i), "submission"));
}

int main(void)
{
    char dir[] = "/tmp/cugrade-sb-XXXXXX", path[300];
    if (!mkdtemp(dir)) {
        printf("not ok - mkdtemp\n");
        return 1;
    }
    snprintf(path, sizeof(path), "%s/t.db", dir);
    if (db_open(path, 1, &db)) {
        printf("not ok - db_open\n");
        return 1;
    }
    const char *students[] = {"ann", "bob", "cyd", "dee", "@cmd"};
    for (int i = 0; i < 5; i++)
        auth_user_add(db, students[i], AUTH_STUDENT, i == 4 ? "=HYPERLINK(\"x\")" : NULL, NULL);
    auth_user_add(db, "tim", AUTH_TA, "Tim TA", NULL);

    /* ann: best 90 (two tries); bob: 90 with a higher speedup; cyd: 90 with
     * the same speedup as ann but later; dee: 95 only by an override of 10;
     * tim (ta): 100, never shown; @cmd: a name and a display name that a
     * spreadsheet would run as formulas. */
    graded("ann", 50, 1.0, 1000);
    long long ann90 = graded("ann", 90, 1.0, 1100);
    long long bob90 = graded("bob", 90, 2.0, 1200);
    long long cyd90 = graded("cyd", 90, 1.0, 1300);
    long long dee10 = graded("dee", 10, -1, 1050);
    graded("dee", 20, -1, 1060);
    graded("tim", 100, 5.0, 1000);
    graded("@cmd", 1, -1, 1000);
    sqlite3_stmt *st = db_stmt(db, "INSERT INTO overrides(submission_id, score, reason, created_at)"
                                   " VALUES(?1, ?2, 'regrade by hand', ?3)");
    sqlite3_bind_int64(st, 1, dee10);
    sqlite3_bind_double(st, 2, 40);
    sqlite3_bind_double(st, 3, 1);
    db_step_done(st);
    st = db_stmt(db, "INSERT INTO overrides(submission_id, score, reason, created_at)"
                     " VALUES(?1, ?2, 'second look', ?3)");
    sqlite3_bind_int64(st, 1, dee10);
    sqlite3_bind_double(st, 2, 95);
    sqlite3_bind_double(st, 3, 2);
    db_step_done(st);

    struct app app;
    memset(&app, 0, sizeof(app));
    app.db = db;
    uv_loop_t loop;
    uv_loop_init(&loop);
    queue_new(&loop, db, 0, &app.queue);
    struct app_lab labs[2];
    memset(labs, 0, sizeof(labs));
    labs[0].lab.name = "board";
    labs[1].lab.name = "empty";
    app.labs = labs;
    app.nlabs = 2;

    struct auth_user ta, ann;
    auth_user_get(db, "tim", &ta);
    auth_user_get(db, "ann", &ann);
    struct api_error e;
    json_t *sb = NULL;
    ok(api_scoreboard(&app, &ta, "board", &sb, &e) == 0, "scoreboard builds");
    ok(json_array_size(json_object_get(sb, "rows")) == 5, "one row per student, the TA left out");
    ok(row_user(sb, 0) && strcmp(row_user(sb, 0), "dee") == 0 && row_score(sb, 0) == 95,
       "the latest override (95) replaces a score and ranks first");
    ok(row_user(sb, 1) && strcmp(row_user(sb, 1), "bob") == 0 && row_sub(sb, 1) == bob90,
       "a tie at 90 goes to the higher speedup");
    ok(row_user(sb, 2) && strcmp(row_user(sb, 2), "ann") == 0 && row_sub(sb, 2) == ann90,
       "then the earlier submission; each student's best one is shown");
    ok(row_user(sb, 3) && strcmp(row_user(sb, 3), "cyd") == 0 && row_sub(sb, 3) == cyd90,
       "the later equal submission ranks after");
    ok(json_integer_value(
           json_object_get(json_array_get(json_object_get(sb, "rows"), 4), "rank")) == 5,
       "ranks are 1-based positions");
    json_decref(sb);

    ok(api_scoreboard(&app, &ann, "board", &sb, &e) == 0, "a student's scoreboard builds");
    int pseudonyms = 1;
    for (size_t i = 0; i < 5; i++) {
        const char *u = row_user(sb, i);
        for (int k = 0; k < 5; k++)
            if (u && strcmp(u, students[k]) == 0)
                pseudonyms = 0;
    }
    ok(pseudonyms, "students see pseudonyms, not names");
    json_decref(sb);

    struct auth_user bob;
    auth_user_get(db, "bob", &bob);
    api_show_name_set(&app, &bob, 1, &e);
    ok(api_scoreboard(&app, &ann, "board", &sb, &e) == 0 && row_user(sb, 1) &&
           strcmp(row_user(sb, 1), "bob") == 0,
       "a student who opted in shows by name");
    json_decref(sb);

    struct http_buf csv = {0};
    ok(api_scoreboard_csv(&app, &ta, "board", &csv, &e) == 0 && csv.data &&
           strncmp(csv.data,
                   "rank,user,display_name,score,max_score,speedup,submission,submitted_at\r\n",
                   70) == 0,
       "CSV has the documented header");
    ok(csv.data && strstr(csv.data, ",\"'@cmd\",") &&
           strstr(csv.data, ",\"'=HYPERLINK(\"\"x\"\")\",") && !strstr(csv.data, ",=") &&
           !strstr(csv.data, ",@"),
       "cells starting with '=' or '@' are quoted and prefixed (formula injection)");
    http_buf_free(&csv);
    ok(api_scoreboard(&app, &ta, "nolab", &sb, &e) == -ENOENT && e.status == 404,
       "an unknown lab is a 404");
    ok(api_scoreboard(&app, &ann, "empty", &sb, &e) == 0 &&
           json_array_size(json_object_get(sb, "rows")) == 0,
       "a lab without graded submissions has an empty board");
    json_decref(sb);

    for (int l = 0; l < 2; l++)
        for (int k = 0; k < 4; k++)
            http_buf_free(&labs[l].sb_cache[k]); /* app_close's job in the server */
    auth_cache_clear();
    queue_close(app.queue);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    db_close(db);
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    printf("1..%d\n", count);
    return failures ? 1 : 0;
}
