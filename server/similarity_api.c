/*
 * similarity_api.c - the JSON routes of the similarity checks; the runs and
 * their reports are in similarity.c. See similarity.h.
 */
#include "server/similarity.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/api.h"
#include "server/auth.h"
#include "server/views.h"

/* The start is over (similarity.h): 202 with the run, or the refusal. */
static int started(struct app *app, struct http_request *req, const char *lab, long long id,
                   const struct api_error *e)
{
    (void)app;
    if (e)
        return api_send_err(req, e);
    char url[128];
    snprintf(url, sizeof(url), "/api/admin/labs/%s/similarity", lab);
    return api_send_json(
        req, 202,
        json_pack("{s:I,s:s,s:s}", "run", (json_int_t)id, "status", "running", "url", url));
}

static int h_start(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    if (api_need(app, req, &u, STAFF))
        return HTTP_DONE;
    if (similarity_start(app, req, &u, http_request_param(req, "lab"), started, &e))
        return api_send_err(req, &e);
    return HTTP_DEFERRED; /* answered by started */
}

static int h_report(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    json_t *out;
    if (api_need(app, req, &u, STAFF))
        return HTTP_DONE;
    if (similarity_report(app, &u, http_request_param(req, "lab"), &out, &e))
        return api_send_err(req, &e);
    return api_send_json(req, 200, out);
}

static int h_pair(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    json_t *out;
    if (api_need(app, req, &u, STAFF))
        return HTTP_DONE;
    long long id;
    if (api_path_id(req, "id", "Pair", &id))
        return HTTP_DONE;
    if (similarity_pair(app, &u, id, &out, &e))
        return api_send_err(req, &e);
    return api_send_json(req, 200, out);
}

const struct route similarity_api_routes[] = {
    {HTTP_POST, "/api/admin/labs/{lab}/similarity", h_start, 4096, NULL, NULL, 0},
    {HTTP_GET, "/api/admin/labs/{lab}/similarity", h_report, 0, NULL, NULL, 1},
    {HTTP_GET, "/api/admin/similarity/pairs/{id}", h_pair, 0, NULL, NULL, 1},
};
const size_t similarity_api_nroutes = sizeof(similarity_api_routes) / sizeof(similarity_api_routes[0]);
