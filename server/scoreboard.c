/*
 * scoreboard.c - ranking, rendering and caching a lab's scoreboard. See
 * scoreboard.h.
 */
#include "server/lateday.h"
#include "server/scoreboard.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void scoreboard_invalidate(struct app *app, const char *lab)
{
    for (size_t i = 0; i < app->nlabs; i++) {
        if (lab && strcmp(app->labs[i].lab.name, lab) != 0)
            continue;
        for (int k = 0; k < 4; k++)
            app->labs[i].sb_valid[k] = 0;
        app->labs[i].sb_gen++;
    }
}

struct sb_row {
    long long user_id;
    char user[65], display[129], pseudonym[65];
    int show_name;
    double score, max_score, speedup;
    int has_speedup, late;
    long long submission;
    double submitted_at;
};

/* Best submission per student in lab, ranked: score, then speedup, then
 * earliest. Overrides replace scores. *rows is malloc'd (caller frees). */
struct sb_override {
    long long submission;
    double score;
};

static int sb_override_cmp(const void *a, const void *b)
{
    long long x = ((const struct sb_override *)a)->submission;
    long long y = ((const struct sb_override *)b)->submission;
    return x < y ? -1 : x > y;
}

/* Ranking: score, then speedup (higher first, none last), then earliest. */
static int sb_better(const struct sb_row *a, const struct sb_row *b)
{
    if (a->score != b->score)
        return a->score > b->score;
    if (a->has_speedup != b->has_speedup)
        return a->has_speedup;
    if (a->has_speedup && a->speedup != b->speedup)
        return a->speedup > b->speedup;
    if (a->submitted_at != b->submitted_at)
        return a->submitted_at < b->submitted_at;
    return a->submission < b->submission;
}

static int sb_row_cmp(const void *a, const void *b)
{
    const struct sb_row *x = a, *y = b;
    return sb_better(x, y) ? -1 : sb_better(y, x) ? 1 : 0;
}

/* The latest override of each submission of lab (rare: a few per lab),
 * sorted by submission: *ov is malloc'd (caller frees). 0 or -errno. */
static int sb_overrides_load(struct app *app, const char *lab, struct sb_override **ovp,
                             size_t *novp)
{
    struct sb_override *ov = NULL;
    size_t nov = 0, capov = 0;
    int rc;

    sqlite3_stmt *st = db_stmt(app->db, "SELECT o.submission_id, o.score FROM overrides o"
                                        " JOIN submissions s ON s.id = o.submission_id"
                                        " WHERE s.lab = ?1 ORDER BY o.submission_id, o.id");
    if (!st)
        return -EIO;
    sqlite3_bind_text(st, 1, lab, -1, SQLITE_STATIC);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        long long sid = sqlite3_column_int64(st, 0);
        if (nov && ov[nov - 1].submission == sid) {
            ov[nov - 1].score = sqlite3_column_double(st, 1); /* a later one */
            continue;
        }
        if (nov == capov) {
            capov = capov ? capov * 2 : 16;
            struct sb_override *p = realloc(ov, capov * sizeof(*ov));
            if (!p) {
                sqlite3_reset(st);
                rc = -ENOMEM;
                goto fail;
            }
            ov = p;
        }
        ov[nov].submission = sid;
        ov[nov].score = sqlite3_column_double(st, 1);
        nov++;
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) {
        rc = db_errno(rc);
        goto fail;
    }
    *ovp = ov;
    *novp = nov;
    return 0;
fail:
    free(ov);
    return rc;
}

/* Each student's best graded submission in lab l (overrides ov[nov]
 * replace scores) appended to *rows (malloc'd, caller frees). 0 or -errno. */
static int sb_best_rows(struct app *app, struct app_lab *l, const char *lab,
                        const struct sb_override *ov, size_t nov, struct sb_row **rows, size_t *n)
{
    size_t cap = 0;
    struct sb_row best;
    long long cur_user = 0;
    int have = 0, rc;
    sqlite3_stmt *st;

    st = db_stmt(app->db, "SELECT user_id, id, score, speedup, created_at, max_score, late"
                          " FROM submissions WHERE lab = ?1 ORDER BY user_id");
    if (!st)
        return -EIO;
    sqlite3_bind_text(st, 1, lab, -1, SQLITE_STATIC);
    for (;;) {
        rc = sqlite3_step(st);
        int row = rc == SQLITE_ROW;
        long long uid = row ? sqlite3_column_int64(st, 0) : -1;
        if ((!row || uid != cur_user) && have) {
            /* The previous student's best is final. */
            if (*n == cap) {
                cap = cap ? cap * 2 : 64;
                struct sb_row *p = realloc(*rows, cap * sizeof(**rows));
                if (!p) {
                    sqlite3_reset(st);
                    rc = -ENOMEM;
                    return rc;
                }
                *rows = p;
            }
            (*rows)[(*n)++] = best;
            have = 0;
        }
        if (!row)
            break;
        cur_user = uid;
        struct sb_row r;
        memset(&r, 0, sizeof(r));
        r.submission = sqlite3_column_int64(st, 1);
        struct sb_override key = {.submission = r.submission};
        const struct sb_override *o = NULL;
        if (nov)
            o = bsearch(&key, ov, nov, sizeof(*ov), sb_override_cmp);
        if (o) {
            r.score = o->score;
        } else if (sqlite3_column_type(st, 2) != SQLITE_NULL) {
            r.score = sqlite3_column_double(st, 2);
        } else {
            continue; /* not graded: not on the board */
        }
        r.has_speedup = sqlite3_column_type(st, 3) != SQLITE_NULL;
        r.speedup = sqlite3_column_double(st, 3);
        r.submitted_at = sqlite3_column_double(st, 4);
        r.max_score = sqlite3_column_type(st, 5) != SQLITE_NULL ? sqlite3_column_double(st, 5)
                      : l && l->has_rubric                      ? l->rubric.max_score
                                                                : 0;
        r.late = sqlite3_column_int(st, 6);
        r.user_id = uid;
        if (!have || sb_better(&r, &best)) {
            best = r; /* names are filled in below, for winners only */
            have = 1;
        }
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) {
        rc = db_errno(rc);
        return rc;
    }

    return 0;
}

/* Names (and pseudonyms, made now for students new to the board) for
 * rows[*n], keeping only students: staff test submissions stay off the
 * board. 0 or -errno. */
static int sb_names_fill(struct app *app, const char *lab, struct sb_row *rows, size_t *n)
{
    int rc;
    sqlite3_stmt *st;

    /* Names, and only students: staff test submissions stay off the board.
     * The pseudonym is the student's one for this lab. */
    st = db_stmt(app->db, "SELECT u.name, u.display_name, p.pseudonym, u.show_name, u.role"
                          " FROM users u LEFT JOIN pseudonyms p ON p.user_id = u.id AND p.lab = ?2"
                          " WHERE u.id = ?1");
    if (!st)
        return -EIO;
    size_t k = 0, missing = 0;
    for (size_t i = 0; i < *n; i++) {
        struct sb_row *r = &rows[i];
        sqlite3_bind_int64(st, 1, r->user_id);
        sqlite3_bind_text(st, 2, lab, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW && strcmp(db_col_text(st, 4), "student") == 0) {
            snprintf(r->user, sizeof(r->user), "%s", db_col_text(st, 0));
            snprintf(r->display, sizeof(r->display), "%s", db_col_text(st, 1));
            snprintf(r->pseudonym, sizeof(r->pseudonym), "%s", db_col_text(st, 2));
            missing += r->pseudonym[0] == '\0';
            r->show_name = sqlite3_column_int(st, 3);
            rows[k++] = *r;
        }
        sqlite3_reset(st);
    }
    *n = k;
    /* Students new to this lab's board get their pseudonym now, all in one
     * transaction (one fsync, not one per student, on the event loop). */
    if (missing) {
        int own = sqlite3_get_autocommit(db_handle(app->db));
        rc = own ? db_begin(app->db, 1) : 0;
        for (size_t i = 0; !rc && i < *n; i++)
            if (!rows[i].pseudonym[0])
                rc = auth_pseudonym(app->db, rows[i].user_id, lab, 1, rows[i].pseudonym);
        if (own && rc)
            db_rollback(app->db);
        else if (own)
            rc = db_commit(app->db);
        if (rc)
            return rc;
    }
    return 0;
}

/* Best submission per student in lab, ranked by sb_better. Overrides replace
 * scores. One pass over a covering index (no table rows, no sort in SQL):
 * the scoreboard is rebuilt after every result, on the event loop.
 * *rows is malloc'd (caller frees). */
static int scoreboard_rows(struct app *app, const char *lab, struct sb_row **rows, size_t *n)
{
    struct app_lab *l = app_lab_find(app, lab);
    struct sb_override *ov = NULL;
    size_t nov = 0;

    *rows = NULL;
    *n = 0;
    int rc = sb_overrides_load(app, lab, &ov, &nov);
    if (!rc)
        rc = sb_best_rows(app, l, lab, ov, nov, rows, n);
    if (!rc)
        rc = sb_names_fill(app, lab, *rows, n);
    free(ov);
    if (rc) {
        free(*rows);
        *rows = NULL;
        *n = 0;
        return rc;
    }
    if (*n > 1) /* qsort(NULL, 0, ...) is undefined: an empty board has no array */
        qsort(*rows, *n, sizeof(**rows), sb_row_cmp);
    assert(*n == 0 || *rows);
    return 0;
}

static const char *sb_name(const struct sb_row *r, int student_view)
{
    return student_view && !r->show_name ? r->pseudonym : r->user;
}

static const char *sb_display(const struct sb_row *r, int student_view)
{
    return student_view && !r->show_name ? r->pseudonym : r->display;
}

/* The day (UTC) of t, "2026-12-03": what a student's view says of when
 * a row's submission came, instead of the second (which, with the
 * submission's id, linked rows across labs and to other pages). */
static void sb_day(double t, char *buf, size_t len)
{
    char iso[40];
    api_time_iso(t, iso, sizeof(iso));
    snprintf(buf, len, "%.10s", iso);
}

static json_t *scoreboard_json(const char *lab, const struct sb_row *rows, size_t n,
                               int student_view)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) {
        const struct sb_row *r = &rows[i];
        char at[40];
        json_t *o = json_pack("{s:I,s:s,s:s,s:f,s:f,s:o}", "rank", (json_int_t)(i + 1), "user",
                              sb_name(r, student_view), "display_name", sb_display(r, student_view),
                              "score", r->score, "max_score", r->max_score, "speedup",
                              r->has_speedup ? json_real(r->speedup) : json_null());
        if (!o)
            break;
        if (student_view) {
            sb_day(r->submitted_at, at, sizeof(at));
            json_object_set_new(o, "submitted_on", json_string(at));
        } else {
            api_time_iso(r->submitted_at, at, sizeof(at));
            json_object_set_new(o, "submission", json_integer(r->submission));
            json_object_set_new(o, "submitted_at", json_string(at));
        }
        json_array_append_new(arr, o);
    }
    return json_pack("{s:s,s:o}", "lab", lab, "rows", arr);
}

/* Spreadsheet formula injection: a cell starting with = + - @ (or a tab or
 * CR) runs as a formula when a TA opens the CSV; prefix it with a quote. */
static void csv_cell(struct http_buf *b, const char *s)
{
    int quote = strpbrk(s, ",\"\r\n") != NULL;
    int formula =
        s[0] == '=' || s[0] == '+' || s[0] == '-' || s[0] == '@' || s[0] == '\t' || s[0] == '\r';
    if (!quote && !formula) {
        http_buf_append(b, s, strlen(s));
        return;
    }
    http_buf_append(b, "\"", 1);
    if (formula)
        http_buf_append(b, "'", 1);
    for (const char *p = s; *p; p++) {
        if (*p == '"')
            http_buf_append(b, "\"", 1);
        http_buf_append(b, p, 1);
    }
    http_buf_append(b, "\"", 1);
}

static void scoreboard_csv(struct http_buf *b, const struct sb_row *rows, size_t n,
                           int student_view)
{
    http_buf_printf(b, student_view
                           ? "rank,user,display_name,score,max_score,speedup,submitted_on\r\n"
                           : "rank,user,display_name,score,max_score,speedup,submission,"
                             "submitted_at\r\n");
    for (size_t i = 0; i < n; i++) {
        const struct sb_row *r = &rows[i];
        char at[40], sp[40] = "";
        if (r->has_speedup)
            snprintf(sp, sizeof(sp), "%g", r->speedup);
        http_buf_printf(b, "%zu,", i + 1);
        csv_cell(b, sb_name(r, student_view));
        http_buf_append(b, ",", 1);
        csv_cell(b, sb_display(r, student_view));
        if (student_view) {
            sb_day(r->submitted_at, at, sizeof(at));
            http_buf_printf(b, ",%g,%g,%s,%s\r\n", r->score, r->max_score, sp, at);
        } else {
            api_time_iso(r->submitted_at, at, sizeof(at));
            http_buf_printf(b, ",%g,%g,%s,%lld,%s\r\n", r->score, r->max_score, sp, r->submission,
                            at);
        }
    }
}

/* The rendered scoreboard (kind: 0 json staff, 1 json student, 2 csv staff,
 * 3 csv student), from the cache or built now. */
int scoreboard_render(struct app *app, struct app_lab *l, int kind,
                             const struct http_buf **out)
{
    assert(l && kind >= SCOREBOARD_JSON_STAFF && kind <= SCOREBOARD_CSV_STUDENT);
    if (l->sb_valid[kind]) {
        *out = &l->sb_cache[kind];
        return 0;
    }
    struct sb_row *rows;
    size_t n;
    int rc = scoreboard_rows(app, l->lab.name, &rows, &n);
    if (rc)
        return rc;
    struct http_buf *b = &l->sb_cache[kind];
    b->len = 0;
    if (kind < 2) {
        json_t *j = scoreboard_json(l->lab.name, rows, n, kind == 1);
        char *s = j ? json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(15)) : NULL;
        json_decref(j);
        if (!s) {
            free(rows);
            return -ENOMEM;
        }
        http_buf_append(b, s, strlen(s));
        http_buf_append(b, "\n", 1);
        free(s);
    } else {
        scoreboard_csv(b, rows, n, kind == 3);
    }
    free(rows);
    if (!b->data)
        return -ENOMEM;
    l->sb_valid[kind] = 1;
    *out = b;
    return 0;
}

int api_scoreboard(struct app *app, const struct auth_user *viewer, const char *lab, json_t **out,
                   struct api_error *e)
{
    struct app_lab *l = app_lab_find(app, lab);
    if (!l)
        return api_fail(e, 404, "not_found", "There is no lab called '%.64s'.", lab);
    const struct http_buf *b;
    int rc = scoreboard_render(app, l, viewer->role == AUTH_STUDENT ? 1 : 0, &b);
    if (rc)
        return api_internal(e, rc);
    *out = json_loadb(b->data, b->len, 0, NULL);
    return *out ? 0 : api_internal(e, -ENOMEM);
}

int api_scoreboard_mine(struct app *app, const struct auth_user *viewer, const char *lab, int *rank,
                        long long *submission)
{
    struct app_lab *l = app_lab_find(app, lab);
    const struct http_buf *b;
    *rank = 0;
    *submission = 0;
    if (!l)
        return -ENOENT;
    /* The staff rendering (cached) has names and ids; only the viewer's own
     * row is read from it. */
    int rc = scoreboard_render(app, l, 0, &b);
    if (rc)
        return rc;
    json_t *sb = json_loadb(b->data, b->len, 0, NULL), *row;
    if (!sb)
        return -ENOMEM;
    size_t i;
    rc = -ENOENT;
    json_array_foreach(json_object_get(sb, "rows"), i, row)
    {
        const char *u = json_string_value(json_object_get(row, "user"));
        if (u && strcmp(u, viewer->name) == 0) {
            *rank = (int)json_integer_value(json_object_get(row, "rank"));
            *submission = json_integer_value(json_object_get(row, "submission"));
            rc = 0;
            break;
        }
    }
    json_decref(sb);
    return rc;
}

int api_scoreboard_csv(struct app *app, const struct auth_user *viewer, const char *lab,
                       struct http_buf *out, struct api_error *e)
{
    struct app_lab *l = app_lab_find(app, lab);
    if (!l)
        return api_fail(e, 404, "not_found", "There is no lab called '%.64s'.", lab);
    const struct http_buf *b;
    int rc = scoreboard_render(app, l, viewer->role == AUTH_STUDENT ? 3 : 2, &b);
    if (rc)
        return api_internal(e, rc);
    return http_buf_append(out, b->data, b->len) ? api_internal(e, -ENOMEM) : 0;
}

int api_grades_csv(struct app *app, const struct auth_user *viewer, struct http_buf *out,
                   struct api_error *e)
{
    if (viewer->role != AUTH_ADMIN)
        return api_fail(e, 403, "forbidden", "Only admins may export grades.");
    http_buf_printf(out, "user,display_name,lab,score,max_score,late,submission%s\r\n",
                    lateday_csv_header);
    for (size_t i = 0; i < app->nlabs; i++) {
        struct sb_row *rows;
        size_t n;
        int rc = scoreboard_rows(app, app->labs[i].lab.name, &rows, &n);
        if (rc)
            return api_internal(e, rc);
        for (size_t k = 0; k < n; k++) {
            csv_cell(out, rows[k].user);
            http_buf_append(out, ",", 1);
            csv_cell(out, rows[k].display);
            http_buf_append(out, ",", 1);
            csv_cell(out, app->labs[i].lab.name);
            http_buf_printf(out, ",%g,%g,%s,%lld", rows[k].score, rows[k].max_score,
                            rows[k].late ? "true" : "false", rows[k].submission);
            lateday_csv_cells(app->db, rows[k].user_id, app->labs[i].lab.name, out);
            http_buf_append(out, "\r\n", 2);
        }
        free(rows);
    }
    return 0;
}

void scoreboard_csv_cell(struct http_buf *b, const char *s)
{
    csv_cell(b, s);
}
