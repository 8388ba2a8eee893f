/*
 * client.h - the runner's side of the runner protocol (docs/api.md):
 * claim (long poll), progress (lease heartbeat), result. libcurl, one easy
 * handle per call, so the heartbeat thread and the main loop never share
 * one. A server error is never fatal: calls return -EAGAIN and the caller
 * backs off (client_backoff) and tries again.
 */
#ifndef CUGRADE_CLIENT_H
#define CUGRADE_CLIENT_H

#include <jansson.h>

struct client {
    char *server;      /* "http://host:port", no trailing slash */
    char *token;       /* runner token (cgr_...) */
    char *runner;      /* this runner's name: "hostname-gpu0" */
    char *gpu;         /* GPU model name */
    double timeout_s;  /* per-request limit besides the long poll (default 30) */
    int fresh;         /* no claim answered yet: this process holds no job */
};

/* Call once per process before any other client_* call (curl_global_init). */
int client_global_init(void);

/* Fill *c with copies of the strings. Returns 0 or -ENOMEM. */
int client_init(struct client *c, const char *server, const char *token, const char *runner,
                const char *gpu);
void client_free(struct client *c);

/* POST /api/runner/claim with {"runner","gpu","wait"}, and "fresh": true
 * until a claim is answered (200 or 204): the server then lets go of the
 * jobs this name held in an earlier life of the runner (a crash, a kill, a
 * requeue) at once, not when their leases run out. Returns 0 and a new
 * reference to the "job" object in *job (NULL when the server answered 204:
 * nothing to do), -EACCES when the token is refused (401/403), -EAGAIN on a
 * network or server error. */
int client_claim(struct client *c, int wait_seconds, json_t **job);

/* POST /api/runner/jobs/{id}/progress {"phase","detail","runner","attempt"}
 * (attempt: the job's "attempt" from the claim). Returns 0 (and the lease seconds left
 * in *lease_left when not NULL), -ECANCELED on 409 (the lease is lost:
 * abandon the job), -EAGAIN on a network or server error. */
int client_progress(struct client *c, long long id, int attempt, const char *phase,
                    const char *detail, int *lease_left);

/* POST /api/runner/jobs/{id}/release {"runner","attempt"}: give back a job
 * this runner holds and has not judged (docs/runner.md "Hand-back"); the
 * server queues it again without counting the attempt. One try. Returns 0,
 * -ECANCELED on 409 or 404 (not ours any more), -EAGAIN on a network or
 * server error (the job is still ours: go on with it). */
int client_release(struct client *c, long long id, int attempt);

/* POST /api/runner/jobs/{id}/result {"status","result","runner","attempt"}, plus
 * "profile_key" when profile_key is not NULL (a profile update of this
 * verdict follows: client_profile). Retries with backoff on network/server
 * errors for up to give_up_s seconds. Returns 0, -ECANCELED on 409 (someone
 * else holds the job now), -EINVAL on another 4xx, -ETIMEDOUT when it gave
 * up. */
int client_result(struct client *c, long long id, int attempt, const char *status,
                  const json_t *result, const char *profile_key, double give_up_s);

/* POST /api/runner/jobs/{id}/profile: update's keys ({"profile", "hints",
 * "hint_details"}) with "runner", "attempt" and the profile_key its verdict
 * was posted with. Retries as client_result. Returns 0, -ECANCELED on 409
 * or 404 (regraded or no longer ours: drop it), -EINVAL on another 4xx,
 * -ETIMEDOUT, -ENOMEM. */
int client_profile(struct client *c, long long id, int attempt, const char *profile_key,
                   const json_t *update, double give_up_s);

/* Sleep for the attempt-th backoff step: 0.5 s doubling to 30 s, with
 * jitter so that many runners do not hammer a restarted server in step. */
void client_backoff(int attempt);

#endif
