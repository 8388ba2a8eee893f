/*
 * lateday.h - pooled late days (docs/late-days.md): a course-wide budget of
 * whole days per student, spent automatically by late submissions before
 * the rubric's late penalty applies.
 *
 * The rules, in one place:
 *   - A submission is late by ceil((submitted_at - due) / 1 day) whole days,
 *     where due is the student's own deadline (an extension replaces the
 *     rubric's, so days count from the extended date).
 *   - A lab is charged once: its charge is the largest number of days any of
 *     the student's counted submissions to it covered (not the sum). Later
 *     late submissions to the same lab spend only the difference.
 *   - The charge is made when the submission is accepted (the student saw
 *     the cost before submitting). A submission that ends 'superseded' or
 *     'system_error' is not counted: its days come back.
 *   - The budget is the course default plus every grant to the student;
 *     days beyond what is left are penalised as the rubric says.
 *   - Late days never reopen a lab: the hard deadline and a rubric that
 *     refuses late work still refuse.
 *
 * Owns the tables late_day_policy, late_day_grants, late_day_spends (schema
 * step in migrate.c, SQL here); its routes (docs/api-course.md) are in
 * lateday_api.c and lateday_page.c.
 */
#ifndef CUGRADE_LATEDAY_H
#define CUGRADE_LATEDAY_H

#include <jansson.h>
#include <stddef.h>

#include "server/app.h"
#include "server/http.h"

struct app;
struct app_lab;
struct api_error;
struct auth_user;
struct db;
struct html_buf;

/* The schema step that creates the tables (migrate.c). */
extern const char lateday_schema[];

/* A student's pool. */
struct lateday_pool {
    int budget;    /* default + grants */
    int used;      /* sum over labs of each lab's charge */
    int remaining; /* budget - used, >= 0 */
};

/* What a late submission to lab now would cost (the preview). */
struct lateday_quote {
    int days_late;    /* whole days late now (0: on time) */
    int lab_charged;  /* days this lab already charged */
    int would_use;    /* new days this submission would spend */
    int covered;      /* days of lateness the pool covers (charged + would_use) */
    int penalty_days; /* days_late - covered: what the rubric's penalty sees */
    struct lateday_pool pool;
};

/* Whole days late, rounded up: 0 when t <= due or due <= 0. */
int lateday_days_late(double t, double due);

/* user_id's pool. 0 or -errno. */
int lateday_pool_get(struct db *db, long long user_id, struct lateday_pool *out);

/* The quote for user_id submitting to lab at time now (their deadlines).
 * 0 or -errno. */
int lateday_quote(struct app *app, const struct app_lab *l, long long user_id, double now,
                  struct lateday_quote *out);

/* Record the spend of the accepted submission id to lab (late by days_late
 * whole days) on db (the loop's, or the writer's inside its transaction):
 * the lab's charge rises to min(days_late, charge + remaining). Fills q with
 * what happened (would_use = days spent now). 0 or -errno. */
int lateday_spend(struct db *db, const char *lab, long long user_id, long long id, int days_late,
                  struct lateday_quote *q);

/* Days of submission id's lateness the pool covers (0 when none). */
int lateday_covered(struct db *db, long long id);

/* Add the quote's fields to a submit response object. */
/* One sentence about what submitting now would cost (q, the lab's penalty
 * per day), into buf. */
void lateday_quote_sentence(const struct lateday_quote *q, double pct_per_day, char *buf, size_t len);

void lateday_quote_json(const struct lateday_quote *q, json_t *o);

/* For the grades export: the header's extra columns, and one row's cells
 * (each cell preceded by a comma). */
extern const char lateday_csv_header[];
void lateday_csv_cells(struct db *db, long long user_id, const char *lab, struct http_buf *out);

/* The lab page's notice for a student (nothing for staff or before due):
 * "This submission will use 1 of your 3 remaining late days." Returns 1
 * when it wrote one. */
int lateday_notice_html(struct app *app, struct html_buf *b, const struct auth_user *viewer,
                        const char *lab);

/* An admin's change of the pools (the course default budget, or a grant to
 * a student), read and written on the writer thread (server/writer.h), so
 * that a stalled disk stalls it, not the loop: the role, the days and the
 * reason are checked on the loop when it is started; the user (that it is
 * a student) on the writer, in the batch's transaction with the insert and
 * its audit row. */
struct lateday_write {
    int grant;               /* 0: the default budget; 1: a grant to user */
    struct auth_user viewer; /* copied */
    int days;
    char user[65];           /* a grant's student */
    const char *reason;      /* a grant's (copied by the start) */
    struct api_error e;      /* a refusal found on the writer (e.status != 0) */
};

/* On the loop, once the change is committed (rc 0) or refused or failed
 * (rc -errno, w->e says why), if the client is still there: answer req,
 * return HTTP_DONE (or HTTP_DEFERRED when req is finished later). */
typedef int lateday_write_answer(struct app *app, struct http_request *req,
                                 const struct lateday_write *w, int rc);

/* Admin: set the course default budget (days >= 0); audited. 0 (answer is
 * called later) or -errno with e (nothing queued: answer req now). */
int lateday_default_start(struct app *app, struct http_request *req,
                          const struct auth_user *viewer, int days, lateday_write_answer *answer,
                          struct api_error *e);

/* Admin: grant user days more (1..365) with a reason; audited. Returns as
 * lateday_default_start. */
int lateday_grant_start(struct app *app, struct http_request *req, const struct auth_user *viewer,
                        const char *user, int days, const char *reason,
                        lateday_write_answer *answer, struct api_error *e);

/* {"default_days","students":[{"user","display_name","budget","used","remaining","labs":{..}}]}
 * for staff. */
int lateday_overview(struct app *app, const struct auth_user *viewer, json_t **out,
                     struct api_error *e);

/* {"user","budget","used","remaining","labs":[{"lab","days"}],"grants":[...]}: the viewer's
 * own, or (staff) the user called name. */
int lateday_user_json(struct app *app, const struct auth_user *viewer, const char *name,
                      json_t **out, struct api_error *e);


#endif
