/*
 * user_admin.h - what an admin does to users besides adding them one by
 * one: a roster import that may be run again (existing names are updated
 * or left as they are, reported row by row). A user's new token is a
 * staff change (staff_write.h: STAFF_TOKEN).
 */
#ifndef CUGRADE_USER_ADMIN_H
#define CUGRADE_USER_ADMIN_H

#include "server/app.h"
#include "server/roster.h"

/* The roster's rows[n] on db, inside the caller's transaction (the
 * writer's job or the pages' loop connection). A new name is created with
 * a first token; an existing name keeps its tokens and its role (an import
 * never grants or takes away a role: a typo would make a student an
 * admin), and takes the row's display name when the row has one that
 * differs. On success *out (a new reference) is
 *   {"users":[{"name","role","token"}] (the new users only: their tokens),
 *    "rows":[{"line","name","role","result","detail"}] (one per row;
 *     result "created", "updated" or "unchanged"; role as stored),
 *    "created":N,"updated":N,"unchanged":N}.
 * Each new user and each change is audit-logged. 0 or -errno with e (403
 * for a non-admin). */
int user_admin_import(struct db *db, const struct auth_user *viewer, const struct roster_row *rows,
                      size_t n, json_t **out, struct api_error *e);

#endif
