/*
 * api.c - what the JSON views share. See api.h.
 */
#include "server/api.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void api_error_send(struct http_request *req, const struct api_error *e)
{
    if (e->status == 429) {
        char ra[24];
        snprintf(ra, sizeof(ra), "%d", e->retry_after);
        http_response_header(req, "Retry-After", ra);
        json_t *j = json_pack("{s:{s:s,s:s,s:i}}", "error", "code", e->code, "message", e->message,
                              "retry_after", e->retry_after);
        if (j) {
            http_response_json(req, 429, j);
            json_decref(j);
            return;
        }
    }
    if (e->status == 401)
        http_response_header(req, "WWW-Authenticate", "Bearer realm=\"cugrade\"");
    if (e->status == 503)
        http_response_header(req, "Retry-After", "1");
    http_response_error(req, e->status ? e->status : 500, e->code ? e->code : "internal", "%s",
                        e->message);
}

int api_send_json(struct http_request *req, int status, json_t *j)
{
    if (!j) {
        http_response_error(req, 500, "internal", "Out of memory.");
        return HTTP_DONE;
    }
    http_response_json(req, status, j);
    json_decref(j);
    return HTTP_DONE;
}

int api_send_err(struct http_request *req, const struct api_error *e)
{
    api_error_send(req, e);
    return HTTP_DONE;
}

int api_path_id(struct http_request *req, const char *param, const char *what, long long *id)
{
    if (api_parse_id(http_request_param(req, param), id) == 0)
        return 0;
    struct api_error e;
    api_fail(&e, 404, "not_found", "%s ids are positive integers.", what);
    api_error_send(req, &e);
    return -1;
}

/* Authenticate and check the role; on failure the response is filled and
 * -1 returned. */
int api_need(struct app *app, struct http_request *req, struct auth_user *u, unsigned roles)
{
    assert(roles != 0); /* a route nobody may use is a bug in its table */
    struct api_error e;
    int rc = app_auth(app, req, u);
    if (rc == -ENOENT) {
        api_fail(&e, 401, "unauthorized",
                 "This needs a token: send the header 'Authorization: Bearer <your token>'.");
        api_send_err(req, &e);
        return -1;
    }
    if (rc == -EACCES) {
        api_fail(&e, 401, "unauthorized",
                 "Your token or session is not valid (mistyped, revoked or expired); ask the "
                 "course staff for a new one.");
        api_send_err(req, &e);
        return -1;
    }
    if (rc) {
        api_internal(&e, rc);
        api_send_err(req, &e);
        return -1;
    }
    /* Cross-site request forgery: a browser sends the session cookie with
     * any request to us, so a state-changing API call authenticated by the
     * cookie alone must also prove it came from our pages. */
    if (u->via_session && req->method != HTTP_GET && req->method != HTTP_HEAD) {
        const char *t = http_request_header(req, "X-CSRF-Token");
        if (!t || !auth_equal(t, u->csrf)) {
            api_fail(&e, 403, "forbidden",
                     "A request signed in by the session cookie must send the page's X-CSRF-Token "
                     "header.");
            api_send_err(req, &e);
            return -1;
        }
    }
    if (!(ROLE(u->role) & roles)) {
        if (u->role == AUTH_RUNNER)
            api_fail(&e, 403, "forbidden", "Runner tokens may only use /api/runner/*.");
        else if (roles == RUNNER)
            api_fail(&e, 403, "forbidden", "Only runner tokens may use /api/runner/*.");
        else if (roles == ADMIN)
            api_fail(&e, 403, "forbidden", "Only admins may do this; you are signed in as %s (%s).",
                     u->name, auth_role_name(u->role));
        else
            api_fail(&e, 403, "forbidden", "Your role (%s) may not do this.",
                     auth_role_name(u->role));
        api_send_err(req, &e);
        return -1;
    }
    return 0;
}

int api_body_json(struct http_request *req, json_t **out, int allow_empty,
                         struct api_error *e)
{
    return api_json_parse(req->body, req->body_len, allow_empty, out, e);
}

int api_parse_id(const char *s, long long *out)
{
    /* One spelling per id: "012" and "0" are not ids (a cache key, a log
     * line or an audit entry never names one row two ways). 18 digits
     * always fit in a long long. */
    if (!s || *s < '1' || *s > '9' || strlen(s) > 18)
        return -EINVAL;
    long long v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return -EINVAL;
        v = v * 10 + (*p - '0');
    }
    assert(v > 0);
    *out = v;
    return 0;
}

int api_query_int(struct http_request *req, const char *name, int dflt, int *out)
{
    const char *v = http_request_query(req, name);
    if (!v || !*v) {
        *out = dflt;
        return 0;
    }
    char *end;
    long x = strtol(v, &end, 10);
    if (*end || x < 0 || x > 1000000000)
        return -EINVAL;
    *out = (int)x;
    return 0;
}

int api_ct_is(const char *ct, const char *type)
{
    size_t n = strlen(type);
    while (ct && *ct == ' ')
        ct++;
    return ct && strncasecmp(ct, type, n) == 0 && (ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ');
}
