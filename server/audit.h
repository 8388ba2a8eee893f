/*
 * audit.h - reading the audit log (db_audit in server/db.h writes it):
 * every regrade, override, rubric change, new user, extension and token
 * revocation, with who did it.
 */
#ifndef CUGRADE_AUDIT_H
#define CUGRADE_AUDIT_H

#include "server/app.h"

/* The newest 500 entries, of one action (NULL: all): a new array of
 * {"at" (Unix seconds),"who" (null: the system),"action","target","detail"}.
 * 0 or -errno. */
int audit_list(struct app *app, const char *action, json_t **out);

#endif
