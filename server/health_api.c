/*
 * health_api.c - GET /healthz and GET /metrics.
 */
#include "server/api.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "status.h"
#include "server/runner.h"
#include "server/submission.h"
#include "server/views.h"
#include "server/writer.h"

/* /healthz: 200 only when the database answers and is still the file at its
 * path (renamed away, every write would go into a file lost at restart:
 * "db":"moved" with a reason), no damage was seen (the
 * start's quick_check passed, and SQLite has met no damaged page since),
 * and the database's filesystem has at least --min-free-mb free: a full
 * disk fails every submission and result, so the probe says so first. */
static int h_healthz(struct app *app, struct http_request *req)
{
    int db_ok = app_db_ok(app);
    double free_mb = 0;
    int disk_rc = api_disk_free(app, &free_mb);
    const char *disk = disk_rc ? "error" : free_mb < app->cfg.min_free_mb ? "low" : "ok";
    long damaged = db_corruption_count();
    int moved = db_file_check(app->db) != 0;
    int ok = db_ok && !moved && damaged == 0 && strcmp(disk, "ok") == 0;
    json_t *j = json_pack("{s:b,s:s,s:s,s:s,s:o,s:f}", "ok", ok, "db",
                          moved ? "moved" : db_ok ? "ok" : "error",
                          "integrity", damaged ? "damaged" : "ok", "disk", disk, "free_mb",
                          disk_rc ? json_null() : json_integer((json_int_t)free_mb), "min_free_mb",
                          app->cfg.min_free_mb);
    /* 512, not 512.0, for a whole number of MiB. */
    if (j && app->cfg.min_free_mb == floor(app->cfg.min_free_mb))
        json_object_set_new(j, "min_free_mb", json_integer((json_int_t)app->cfg.min_free_mb));
    if (j && moved)
        json_object_set_new(j, "reason",
                            json_sprintf("%s is no longer the file this server has open (renamed, "
                                         "deleted or replaced): writes are refused; put it back "
                                         "or restart the server.",
                                         db_path(app->db)));
    if (!j) {
        static const char bad[] = "{\"ok\":false,\"db\":\"error\"}\n";
        http_response_body(req, 503, "application/json", bad, sizeof(bad) - 1);
        return HTTP_DONE;
    }
    return api_send_json(req, ok ? 200 : 503, j);
}

/* The server's own Prometheus lines: connections refused, requests
 * refused at admission. 0 or -ENOMEM. */
static int app_metrics_write(struct app *app, struct http_buf *out)
{
    uint64_t global = 0, client = 0, shed_client = 0, shed_global = 0, shed_budget = 0;
    uint64_t turn_waits = 0;
    size_t buffered = 0;
    if (app->http) {
        http_server_refused(app->http, &global, &client);
        http_server_shed(app->http, &shed_client, &shed_global, &shed_budget, &buffered);
        turn_waits = http_server_turn_waits(app->http);
    }
    int rc = http_buf_printf(
        out,
        "# HELP cugrade_http_connections_refused_total Connections closed as soon as accepted: "
        "over the server's cap, or over one client address's.\n"
        "# TYPE cugrade_http_connections_refused_total counter\n"
        "cugrade_http_connections_refused_total{reason=\"server\"} %llu\n"
        "cugrade_http_connections_refused_total{reason=\"client\"} %llu\n"
        "# HELP cugrade_http_connections_shed_total Connections closed to make room: idle "
        "ones at a client address's cap or at the server's, stalled ones over the byte budget.\n"
        "# TYPE cugrade_http_connections_shed_total counter\n"
        "cugrade_http_connections_shed_total{reason=\"idle_client\"} %llu\n"
        "cugrade_http_connections_shed_total{reason=\"idle_server\"} %llu\n"
        "cugrade_http_connections_shed_total{reason=\"budget\"} %llu\n"
        "# HELP cugrade_http_buffered_bytes Unsent answers and request bodies held now.\n"
        "# TYPE cugrade_http_buffered_bytes gauge\n"
        "cugrade_http_buffered_bytes %zu\n"
        "# HELP cugrade_http_pipeline_turn_waits_total Times a connection's pipelined "
        "requests waited for the next turn of the event loop: all connections together had "
        "their share of that turn handled.\n"
        "# TYPE cugrade_http_pipeline_turn_waits_total counter\n"
        "cugrade_http_pipeline_turn_waits_total %llu\n"
        "# HELP cugrade_http_admission_refused_total Requests refused from their headers, "
        "before any body byte was read.\n"
        "# TYPE cugrade_http_admission_refused_total counter\n"
        "cugrade_http_admission_refused_total{code=\"401\"} %llu\n"
        "cugrade_http_admission_refused_total{code=\"403\"} %llu\n"
        "cugrade_http_admission_refused_total{code=\"429\"} %llu\n",
        (unsigned long long)global, (unsigned long long)client, (unsigned long long)shed_client,
        (unsigned long long)shed_global, (unsigned long long)shed_budget, buffered,
        (unsigned long long)turn_waits, (unsigned long long)app->admit_refused[0],
        (unsigned long long)app->admit_refused[1], (unsigned long long)app->admit_refused[2]);
    if (!rc && app->writer) {
        struct writer_stats ws;
        writer_stats_get(app->writer, &ws);
        rc = http_buf_printf(
            out,
            "# HELP cugrade_writer_jobs_total Durable writes done by the writer thread.\n"
            "# TYPE cugrade_writer_jobs_total counter\ncugrade_writer_jobs_total %llu\n"
            "# HELP cugrade_writer_commits_total Its transactions (group commits).\n"
            "# TYPE cugrade_writer_commits_total counter\ncugrade_writer_commits_total %llu\n"
            "# HELP cugrade_writer_queued Writes waiting for the writer or being written.\n"
            "# TYPE cugrade_writer_queued gauge\ncugrade_writer_queued %llu\n"
            "# HELP cugrade_writer_commit_max_seconds The longest transaction so far.\n"
            "# TYPE cugrade_writer_commit_max_seconds gauge\n"
            "cugrade_writer_commit_max_seconds %.6f\n",
            (unsigned long long)ws.jobs, (unsigned long long)ws.batches,
            (unsigned long long)ws.queued, ws.commit_max_s);
    }
    return rc ? -ENOMEM : 0;
}

static int h_metrics(struct app *app, struct http_request *req)
{
    /* Not for anyone: it names runners and costs queries (issue 14).
     * Prometheus sends a bearer token (authorization: credentials_file). */
    struct auth_user u;
    if (api_need(app, req, &u, ADMIN | RUNNER))
        return HTTP_DONE;
    struct http_buf *b = &req->res_body;
    req->status = 200;
    req->content_type = "text/plain; version=0.0.4; charset=utf-8";
    b->len = 0;
    double now = db_now();
    http_buf_printf(b,
                    "# HELP cugrade_queue_depth Submissions waiting for a runner.\n"
                    "# TYPE cugrade_queue_depth gauge\ncugrade_queue_depth %lld\n",
                    queue_depth(app->queue));
    http_buf_printf(b, "# HELP cugrade_jobs Submissions by status.\n# TYPE cugrade_jobs gauge\n");
    /* The counts scan every submission (3.4 ms at 20,000): kept until a
     * status changes here, and at most 1 s (the CLI is another process), so
     * that clients pipelining /metrics do not hold the loop (issue 14). */
    static long long counts[STATUS_COUNT];
    static unsigned counts_gen;
    static double counts_at;
    if (counts_at == 0 || counts_gen != queue_generation(app->queue) || now - counts_at > 1.0) {
        submission_count_by_status(app, counts);
        counts_gen = queue_generation(app->queue);
        counts_at = now;
    }
    for (int i = 0; i < STATUS_COUNT; i++)
        http_buf_printf(b, "cugrade_jobs{status=\"%s\"} %lld\n", status_name(i), counts[i]);
    http_buf_printf(b, "# HELP cugrade_runners_seen Runners that ever claimed a job.\n"
                       "# TYPE cugrade_runners_seen gauge\n");
    long long nr = 0, recent = 0;
    json_t *runners = NULL, *r;
    size_t k;
    struct http_buf per = {0};
    runner_list(app, 1, &runners);
    json_array_foreach(runners, k, r)
    {
        nr++;
        double ls = json_number_value(json_object_get(r, "last_seen"));
        if (now - ls < 120)
            recent++;
        /* Runner names come from runners; keep label values printable. */
        char name[80];
        snprintf(name, sizeof(name), "%s", json_string_value(json_object_get(r, "name")));
        for (char *p = name; *p; p++)
            if (*p == '"' || *p == '\\' || (unsigned char)*p < 0x20)
                *p = '_';
        http_buf_printf(&per,
                        "cugrade_runner_last_seen_seconds{runner=\"%s\"} %.3f\n"
                        "cugrade_runner_jobs_done_total{runner=\"%s\"} %lld\n",
                        name, ls, name, (long long)json_integer_value(json_object_get(r, "jobs_done")));
    }
    json_decref(runners);
    http_buf_printf(b, "cugrade_runners_seen %lld\n", nr);
    http_buf_printf(b,
                    "# HELP cugrade_runners_active Runners seen in the last 120 seconds.\n"
                    "# TYPE cugrade_runners_active gauge\ncugrade_runners_active %lld\n",
                    recent);
    http_buf_printf(b,
                    "# HELP cugrade_runners_waiting Runners parked in a claim long poll.\n"
                    "# TYPE cugrade_runners_waiting gauge\ncugrade_runners_waiting %zu\n",
                    queue_waiting(app->queue));
    http_buf_printf(
        b, "# HELP cugrade_runner_last_seen_seconds Unix time a runner last talked to us.\n"
           "# TYPE cugrade_runner_last_seen_seconds gauge\n"
           "# HELP cugrade_runner_jobs_done_total Results a runner posted.\n"
           "# TYPE cugrade_runner_jobs_done_total counter\n");
    if (per.len)
        http_buf_append(b, per.data, per.len);
    http_buf_free(&per);
    http_buf_printf(b,
                    "# HELP cugrade_http_connections Open HTTP connections.\n"
                    "# TYPE cugrade_http_connections gauge\ncugrade_http_connections %zu\n",
                    app->http ? http_server_conns(app->http) : 0);
    double free_mb;
    if (api_disk_free(app, &free_mb) == 0)
        http_buf_printf(b,
                        "# HELP cugrade_disk_free_bytes Free space on the database's filesystem.\n"
                        "# TYPE cugrade_disk_free_bytes gauge\ncugrade_disk_free_bytes %.0f\n",
                        free_mb * 1024 * 1024);
    http_buf_printf(b,
                    "# HELP cugrade_uptime_seconds Seconds since the server started.\n"
                    "# TYPE cugrade_uptime_seconds gauge\ncugrade_uptime_seconds %.0f\n",
                    now - app->started_at);
    router_metrics_write(&app->router, b);
    app_metrics_write(app, b);
    return HTTP_DONE;
}

const struct route health_api_routes[] = {
    {HTTP_GET, "/healthz", h_healthz, 0, NULL, NULL, 0},
    {HTTP_GET, "/metrics", h_metrics, 0, NULL, NULL, 0},
};
const size_t health_api_nroutes = sizeof(health_api_routes) / sizeof(health_api_routes[0]);
