/*
 * client.c - see client.h.
 */
#include "runner/service/client.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CLIENT_MAX_BODY (64u << 20) /* a job carries a source of at most 256 KiB */

int client_global_init(void)
{
    return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -EIO;
}

int client_init(struct client *c, const char *server, const char *token, const char *runner,
                const char *gpu)
{
    memset(c, 0, sizeof *c);
    c->server = strdup(server);
    c->token = strdup(token);
    c->runner = strdup(runner);
    c->gpu = strdup(gpu ? gpu : "");
    c->timeout_s = 30;
    c->fresh = 1;
    if (!c->server || !c->token || !c->runner || !c->gpu) {
        client_free(c);
        return -ENOMEM;
    }
    size_t n = strlen(c->server);
    while (n > 0 && c->server[n - 1] == '/')
        c->server[--n] = '\0';
    return 0;
}

void client_free(struct client *c)
{
    free(c->server);
    free(c->token);
    free(c->runner);
    free(c->gpu);
    memset(c, 0, sizeof *c);
}

struct body {
    char *buf;
    size_t len;
};

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
    struct body *b = arg;
    size_t k = size * n;
    if (b->len + k > CLIENT_MAX_BODY)
        return 0; /* a misbehaving server cannot make us allocate without bound */
    char *nb = realloc(b->buf, b->len + k + 1);
    if (!nb)
        return 0;
    memcpy(nb + b->len, p, k);
    b->len += k;
    nb[b->len] = '\0';
    b->buf = nb;
    return k;
}

/* POST body as JSON to path. Returns the HTTP status (> 0) with the response
 * body in *resp (may be NULL; caller frees), or -EAGAIN on a transport error. */
static int post_json(struct client *c, const char *path, const char *json, double timeout_s,
                     char **resp)
{
    CURL *h = curl_easy_init();
    struct curl_slist *hdr = NULL;
    struct body b = {NULL, 0};
    char url[2048], auth[512];
    long code = 0;
    int rc;
    *resp = NULL;
    if (!h)
        return -ENOMEM;
    snprintf(url, sizeof url, "%s%s", c->server, path);
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", c->token);
    hdr = curl_slist_append(hdr, auth);
    hdr = curl_slist_append(hdr, "Content-Type: application/json");
    hdr = curl_slist_append(hdr, "Expect:");
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, json);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(json));
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(timeout_s * 1000));
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "cugrade-runner/1");
    /* Only http(s): a redirect to file:// or elsewhere is not followed. */
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    CURLcode cc = curl_easy_perform(h);
    if (cc != CURLE_OK) {
        fprintf(stderr, "cugrade-runner: POST %s: %s\n", url, curl_easy_strerror(cc));
        free(b.buf);
        rc = -EAGAIN;
    } else {
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
        *resp = b.buf;
        rc = (int)code;
    }
    curl_slist_free_all(hdr);
    curl_easy_cleanup(h);
    return rc;
}

/* Encode body (a new reference, always released here) as compact JSON.
 * Returns a malloc'd string (caller frees) or NULL when out of memory. */
static char *body_encode(json_t *body)
{
    if (!body)
        return NULL;
    char *req = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    return req;
}

int client_claim(struct client *c, int wait_seconds, json_t **job)
{
    char *resp = NULL, *req;
    *job = NULL;
    req = body_encode(json_pack("{s:s, s:s, s:i, s:b}", "runner", c->runner, "gpu", c->gpu,
                                "wait", wait_seconds, "fresh", c->fresh));
    if (!req)
        return -ENOMEM;
    int code = post_json(c, "/api/runner/claim", req, wait_seconds + c->timeout_s, &resp);
    free(req);
    int rc;
    if (code < 0) {
        rc = code;
    } else if (code == 204) {
        rc = 0;
        c->fresh = 0;
    } else if (code == 200) {
        c->fresh = 0;
        json_t *doc = json_loads(resp ? resp : "", 0, NULL);
        json_t *j = json_object_get(doc, "job");
        if (json_is_object(j)) {
            *job = json_incref(j);
            rc = 0;
        } else {
            fprintf(stderr, "cugrade-runner: claim answered 200 without a job\n");
            rc = -EAGAIN;
        }
        json_decref(doc);
    } else if (code == 401 || code == 403) {
        fprintf(stderr, "cugrade-runner: claim refused (%d): check the runner token\n", code);
        rc = -EACCES;
    } else {
        fprintf(stderr, "cugrade-runner: claim answered %d: %.200s\n", code, resp ? resp : "");
        rc = -EAGAIN;
    }
    free(resp);
    return rc;
}

int client_progress(struct client *c, long long id, int attempt, const char *phase,
                    const char *detail, int *lease_left)
{
    char path[128], *resp = NULL, *req;
    /* runner + attempt name the lease: a runner whose lease expired and
     * was re-granted to another (a later attempt) gets 409, not a say. */
    req = body_encode(json_pack("{s:s, s:s, s:s, s:i}", "phase", phase, "detail",
                                detail ? detail : "", "runner", c->runner, "attempt", attempt));
    if (!req)
        return -ENOMEM;
    snprintf(path, sizeof path, "/api/runner/jobs/%lld/progress", id);
    int code = post_json(c, path, req, c->timeout_s, &resp);
    free(req);
    int rc;
    if (code == 200) {
        json_t *doc = json_loads(resp ? resp : "", 0, NULL);
        if (lease_left)
            *lease_left = (int)json_integer_value(json_object_get(doc, "lease_expires_in"));
        json_decref(doc);
        rc = 0;
    } else if (code == 409 || code == 404) {
        rc = -ECANCELED;
    } else {
        rc = -EAGAIN;
    }
    free(resp);
    return rc;
}

int client_release(struct client *c, long long id, int attempt)
{
    char path[128], *resp = NULL;
    char *req = body_encode(json_pack("{s:s, s:i}", "runner", c->runner, "attempt", attempt));
    if (!req)
        return -ENOMEM;
    snprintf(path, sizeof path, "/api/runner/jobs/%lld/release", id);
    int code = post_json(c, path, req, c->timeout_s, &resp);
    free(req);
    free(resp);
    return code == 200 ? 0 : code == 409 || code == 404 ? -ECANCELED : -EAGAIN;
}

/* POST body to path until it is answered (200: 0; 409 or 404: -ECANCELED;
 * another 4xx: -EINVAL) or give_up_s passed (-ETIMEDOUT), with backoff. */
static int post_retrying(struct client *c, long long id, const char *path, const char *req,
                         double give_up_s)
{
    char *resp = NULL;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = -ETIMEDOUT;
    for (int try_ = 0;; try_++) {
        int code = post_json(c, path, req, c->timeout_s, &resp);
        if (code == 200) {
            rc = 0;
        } else if (code == 409 || code == 404) {
            rc = -ECANCELED;
        } else if (code >= 400 && code < 500 && code != 429 && code != 408) {
            fprintf(stderr, "cugrade-runner: %s for job %lld refused (%d): %.300s\n",
                    strrchr(path, '/') + 1, id, code, resp ? resp : "");
            rc = -EINVAL;
        } else {
            rc = -ETIMEDOUT;
        }
        free(resp);
        resp = NULL;
        if (rc != -ETIMEDOUT)
            break;
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((double)(t.tv_sec - t0.tv_sec) > give_up_s)
            break;
        client_backoff(try_);
    }
    return rc;
}

int client_result(struct client *c, long long id, int attempt, const char *status,
                  const json_t *result, const char *profile_key, double give_up_s)
{
    char path[128], *req;
    json_t *body = json_pack("{s:s, s:O, s:s, s:i}", "status", status, "result", result, "runner",
                             c->runner, "attempt", attempt);
    if (body && profile_key && json_object_set_new(body, "profile_key", json_string(profile_key)))
        json_decref(body), body = NULL;
    if (!(req = body_encode(body)))
        return -ENOMEM;
    snprintf(path, sizeof path, "/api/runner/jobs/%lld/result", id);
    int rc = post_retrying(c, id, path, req, give_up_s);
    free(req);
    return rc;
}

int client_profile(struct client *c, long long id, int attempt, const char *profile_key,
                   const json_t *update, double give_up_s)
{
    char path[128], *req;
    json_t *body = json_deep_copy(update);
    json_t *lease = json_pack("{s:s, s:i, s:s}", "runner", c->runner, "attempt", attempt,
                              "profile_key", profile_key);
    if (body && (!lease || json_object_update(body, lease) < 0))
        json_decref(body), body = NULL;
    json_decref(lease);
    if (!(req = body_encode(body)))
        return -ENOMEM;
    snprintf(path, sizeof path, "/api/runner/jobs/%lld/profile", id);
    int rc = post_retrying(c, id, path, req, give_up_s);
    free(req);
    return rc;
}

void client_backoff(int attempt)
{
    double s = 0.5;
    for (int i = 0; i < attempt && s < 30; i++)
        s *= 2;
    if (s > 30)
        s = 30;
    s *= 0.75 + 0.5 * ((double)rand() / RAND_MAX);
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}
