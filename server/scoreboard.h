/*
 * scoreboard.h - the ranking of a lab: each student's best submission
 * (overrides replace scores), ranked by score, then speedup, then the
 * earliest; rendered as JSON or CSV for staff (names, ids, times) or for
 * students (pseudonyms, days), cached per lab until a result, an override,
 * a regrade or a name choice changes it; and the grades export.
 */
#ifndef CUGRADE_SCOREBOARD_H
#define CUGRADE_SCOREBOARD_H

#include "server/app.h"

/* Kinds of rendering (the index into app_lab.sb_cache). */
enum scoreboard_kind {
    SCOREBOARD_JSON_STAFF,
    SCOREBOARD_JSON_STUDENT,
    SCOREBOARD_CSV_STAFF,
    SCOREBOARD_CSV_STUDENT,
};

/* The rendered scoreboard of kind, from the cache or built now. *out
 * belongs to the lab's cache (valid until the next invalidation). */
int scoreboard_render(struct app *app, struct app_lab *l, int kind, const struct http_buf **out);

/* Forget the rendered scoreboards of lab (NULL: of every lab). */
void scoreboard_invalidate(struct app *app, const char *lab);

/* {"lab","rows":[...]} as the viewer may see it: for students, per-lab
 * pseudonyms (unless a student opted in) and the day of the submission,
 * with no submission ids or times; for staff, names, ids and times. */
int api_scoreboard(struct app *app, const struct auth_user *viewer, const char *lab, json_t **out,
                   struct api_error *e);

/* The viewer's own row on lab's scoreboard: its rank and submission id
 * (a student's view of the board carries neither ids nor their name).
 * 0, -ENOENT when the viewer has no row, -errno. */
int api_scoreboard_mine(struct app *app, const struct auth_user *viewer, const char *lab, int *rank,
                        long long *submission);

/* The scoreboard as CSV (rank,user,display_name,...) into out. */
int api_scoreboard_csv(struct app *app, const struct auth_user *viewer, const char *lab,
                       struct http_buf *out, struct api_error *e);

/* Admin: the grades CSV of GET /api/admin/export/grades.csv into out. */
int api_grades_csv(struct app *app, const struct auth_user *viewer, struct http_buf *out,
                   struct api_error *e);

/* s as one CSV cell into b: quoted when it holds a comma, a quote or a
 * line break; a leading = + - @ (a spreadsheet formula) defused with a
 * quote. */
void scoreboard_csv_cell(struct http_buf *b, const char *s);

#endif
