/*
 * signin_page.c - signing in with a token (a session cookie) and out.
 */
#include "server/page.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "server/auth.h"
#include "server/views.h"
#include "server/writer.h"

static int post_login(struct page *p)
{
    char cookie[96], session[65], csrf[65];
    const char *token, *form_csrf;
    struct auth_user u;
    int rc;

    if (page_form_parse(p) != 0)
        return page_login(p, "The form did not arrive intact. Try again.", 400);
    form_csrf = page_field(p, "csrf");
    if (http_request_cookie(p->req, LOGIN_COOKIE, cookie, sizeof(cookie)) != 0 || form_csrf == NULL ||
        !auth_equal(cookie, form_csrf))
        return page_login(p, "The sign-in form expired (or your browser blocks cookies). "
                             "Enter your token again; cookies must be enabled for this site.", 403);
    token = page_field(p, "token");
    if (token == NULL || *token == '\0')
        return page_login(p, "Enter your course token.", 400);
    while (*token == ' ' || *token == '\t')
        token++;
    char trimmed[AUTH_TOKEN_LEN + 8];
    snprintf(trimmed, sizeof(trimmed), "%s", token);
    for (size_t n = strlen(trimmed); n > 0 && strchr(" \t\r\n", trimmed[n - 1]); n--)
        trimmed[n - 1] = '\0';
    /* Looked up in the database, not the loop's token cache: this runs on
     * the reader (login_run). */
    struct auth_credential c = {.kind = AUTH_CRED_TOKEN};
    snprintf(c.value, sizeof(c.value), "%s", trimmed);
    rc = strlen(trimmed) == AUTH_TOKEN_LEN ? auth_credential_check(p->app->db, &c, &u) : -EACCES;
    if (rc == -EACCES || (rc == 0 && !auth_role_human(u.role)))
        return page_login(p, "That token is not valid. Check that you copied all of it "
                             "(68 characters, starting with cgs_, cgt_ or cga_); if it still "
                             "fails, ask the course staff for a new one.", 401);
    if (rc == 0)
        rc = auth_session_create(p->app->db, u.id, u.token_id, session, csrf);
    if (rc == -EINVAL) /* revoked after a cached lookup said it was fine */
        return page_login(p, "That token is not valid (it was revoked); ask the course staff "
                             "for a new one.", 401);
    if (rc != 0)
        return page_login(p, "The server could not start a session. Try again in a minute.", 500);
    page_set_cookie(p->req, AUTH_SESSION_COOKIE, session, (long)AUTH_SESSION_TTL_S);
    page_set_cookie(p->req, LOGIN_COOKIE, "", 0);
    return page_redirect(p, "/labs");
}

/* ---- signing out: the session rows end on the writer thread ---- */

struct logout_job {
    struct http_hold client; /* the request, while its client is there */
    struct app *app;
    char cookie[2][96];       /* the session honoured, and a cookie of the plain name */
};

static int logout_run(struct db *db, void *arg)
{
    struct logout_job *j = arg;
    int rc = 0;
    for (int i = 0; i < 2 && !rc; i++)
        if (j->cookie[i][0])
            rc = auth_session_destroy(db, j->cookie[i]);
    return rc;
}

/* Loop: the session is gone (or the write failed: it still ends at its
 * expiry, and the cookie is cleared anyway). To the sign-in page. */
static void logout_done(void *arg, int rc)
{
    struct logout_job *j = arg;
    if (rc)
        app_log("a sign-out could not end its session: %s", strerror(-rc));
    struct http_request *req = http_hold_end(&j->client); /* NULL: the client hung up */
    if (req) {
        struct page p;
        page_open(&p, j->app, req);
        page_set_cookie(req, AUTH_SESSION_COOKIE, "", 0);
        page_redirect(&p, "/login?bye=1");
        page_free(&p);
        http_request_finish(req);
    }
    free(j);
}

static int post_logout(struct page *p)
{
    if (page_post_check(p) != 0)
        return HTTP_DONE;
    struct logout_job *j = calloc(1, sizeof(*j));
    if (!j)
        return page_error(p, 500, "Out of memory", "Try again in a minute.");
    j->app = p->app;
    if (auth_session_cookie(p->req, j->cookie[0], sizeof(j->cookie[0])) != 0)
        j->cookie[0][0] = '\0';
    if (http_request_cookie(p->req, AUTH_SESSION_COOKIE, j->cookie[1], sizeof(j->cookie[1])) != 0)
        j->cookie[1][0] = '\0';
    int rc = writer_submit(p->app->writer, logout_run, logout_done, j, 0);
    if (rc) {
        free(j);
        return page_error(p, 503, "Try again", "The server could not sign you out just now.");
    }
    http_hold_start(&j->client, p->req);
    return HTTP_DEFERRED; /* answered by logout_done */
}

/* The sign-in form's token lookup and its new session, on the reader
 * (page_job_start): app is a view, req a copy. */
static int login_run(struct app *app, struct http_request *req, const struct route *rt)
{
    struct page p;
    (void)rt;
    page_open(&p, app, req);
    post_login(&p);
    page_free(&p);
    return HTTP_DONE;
}

/* Sign-in and sign-out run before (and without) a session: plain routes
 * that open their own page. */
static int r_login(struct app *app, struct http_request *req)
{
    struct page p;
    if (req->method == HTTP_POST)
        return page_job_start(app, req, NULL, login_run);
    page_open(&p, app, req);
    if (p.authed)
        page_redirect(&p, "/labs");
    else
        page_login(&p, NULL, 200);
    page_free(&p);
    return HTTP_DONE;
}

static int r_logout(struct app *app, struct http_request *req)
{
    struct page p;
    int rc = HTTP_DONE;
    page_open(&p, app, req);
    if (p.authed)
        rc = post_logout(&p);
    else
        page_redirect(&p, "/login");
    page_free(&p);
    return rc == HTTP_DEFERRED ? HTTP_DEFERRED : HTTP_DONE;
}

const struct route signin_page_routes[] = {
    {HTTP_GET, "/login", r_login, PAGES_BODY_MAX, NULL, NULL, 0},
    {HTTP_POST, "/login", r_login, PAGES_BODY_MAX, NULL, NULL, 0},
    {HTTP_POST, "/logout", r_logout, PAGES_BODY_MAX, NULL, NULL, 0},
};
const size_t signin_page_nroutes = sizeof(signin_page_routes) / sizeof(signin_page_routes[0]);
