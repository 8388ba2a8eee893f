/*
 * grades_lms.h - the grades CSV an LMS imports: one row per student (every
 * student on the roster, also those who never submitted), one column per
 * lab with the student's best counted score. Beside the long format of
 * api_grades_csv (one row per student and lab with submission details).
 */
#ifndef CUGRADE_GRADES_LMS_H
#define CUGRADE_GRADES_LMS_H

#include "server/app.h"

/* Admin: "user,display_name,<lab>,<lab>..." then one row per student
 * (role student), by name, into out. A cell is the best score of the
 * student's submissions to that lab, the latest override replacing a
 * submission's score; submissions ended by a system error (our fault) never
 * count; an empty cell means the student has no counted submission there.
 * Runs on the caller's thread with app->db. 0, or -errno with e (403 for a
 * non-admin). */
int grades_lms_csv(struct app *app, const struct auth_user *viewer, struct http_buf *out,
                   struct api_error *e);

/* The export's file name for the day t (UTC) into buf:
 * "grades-lms-2026-11-28.csv". */
void grades_lms_filename(double t, char *buf, size_t len);

#endif
