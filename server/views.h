/*
 * views.h - every view's route table, for server.c to install in the
 * router: the JSON routes (server/<noun>_api.c) and the web pages
 * (server/<noun>_page.c). Each view file owns the table of its own URLs.
 */
#ifndef CUGRADE_VIEWS_H
#define CUGRADE_VIEWS_H

#include "server/router.h"

#define VIEW_TABLE(name)                                                                           \
    extern const struct route name##_routes[];                                                     \
    extern const size_t name##_nroutes

VIEW_TABLE(health_api);
VIEW_TABLE(course_api);
VIEW_TABLE(submission_api);
VIEW_TABLE(scoreboard_api);
VIEW_TABLE(runner_api);
VIEW_TABLE(page);
VIEW_TABLE(signin_page);
VIEW_TABLE(lab_page);
VIEW_TABLE(submission_page);
VIEW_TABLE(scoreboard_page);
VIEW_TABLE(audit_page);
VIEW_TABLE(user_page);
VIEW_TABLE(rubric_page);
VIEW_TABLE(deadline_page);
VIEW_TABLE(queue_page);
VIEW_TABLE(export_page);
VIEW_TABLE(lateday_api);
VIEW_TABLE(regrade_api);
VIEW_TABLE(similarity_api);
VIEW_TABLE(lateday_page);
VIEW_TABLE(regrade_page);
VIEW_TABLE(similarity_page);
VIEW_TABLE(bundle);

#undef VIEW_TABLE

#endif
