/*
 * api.h - what the JSON views (server/<noun>_api.c) share: authenticate and
 * check the role, parse a JSON body or an id, send JSON or an error. A
 * view parses HTTP, calls its noun (submission.h, scoreboard.h, course.h,
 * runner.h) and sends what it returns; the nouns hold the rules.
 */
#ifndef CUGRADE_API_H
#define CUGRADE_API_H

#include "server/app.h"

#define ROLE(r) (1u << (r))
#define HUMANS (ROLE(AUTH_STUDENT) | ROLE(AUTH_TA) | ROLE(AUTH_ADMIN))
#define STAFF (ROLE(AUTH_TA) | ROLE(AUTH_ADMIN))
#define ADMIN ROLE(AUTH_ADMIN)
#define RUNNER ROLE(AUTH_RUNNER)
#define KiB 1024

/* Fill req with the API's JSON error for e. */
void api_error_send(struct http_request *req, const struct api_error *e);

/* Send j (a reference this takes; NULL: 500 out of memory) with status.
 * Returns HTTP_DONE. */
int api_send_json(struct http_request *req, int status, json_t *j);

/* api_error_send, returning HTTP_DONE. */
int api_send_err(struct http_request *req, const struct api_error *e);

/* Authenticate and check the role (a mask of ROLE()s); a state-changing
 * request signed in by the session cookie must carry X-CSRF-Token. On
 * failure the response is filled and -1 returned; else 0, u filled and
 * req->user set. */
int api_need(struct app *app, struct http_request *req, struct auth_user *u, unsigned roles);

/* req's body as a JSON object (api_json_parse). */
int api_body_json(struct http_request *req, json_t **out, int allow_empty, struct api_error *e);

/* A path's id: a positive decimal number as plain digits -- no sign, no
 * space, no leading zero ("012" is refused), at most 18 digits. Returns 0
 * and *out, or -EINVAL (the routes answer 404). The one id rule of every
 * API route. */
int api_parse_id(const char *s, long long *out);

/* The path parameter param as an id (api_parse_id): 0 and *id, or the
 * 404 "<what> ids are positive integers." answered and -1 (the handler
 * returns HTTP_DONE). */
int api_path_id(struct http_request *req, const char *param, const char *what, long long *id);

/* Query parameter name as a non-negative int (dflt when absent). 0 or -EINVAL. */
int api_query_int(struct http_request *req, const char *name, int dflt, int *out);

/* 1 when the Content-Type ct is type (parameters after ';' ignored). */
int api_ct_is(const char *ct, const char *type);

#endif
