/*
 * http.c - libFuzzer target: server/http.c, the request parser and
 * everything the server adds to http-parser: strict RFC 9112 framing,
 * admission from the head before any body byte, body limits, 100-continue,
 * pipelining, path and query decoding, cookies, the answers themselves.
 *
 * The input is what one client sends on one connection. It is written into
 * one end of a socketpair whose other end the server serves as an accepted
 * connection (http_server_adopt, the fuzzing entry point of http.c); then
 * the client half-closes, reads every answer and the run ends when the
 * server has closed the connection. A connection the server leaves open
 * hangs the run (libFuzzer reports a timeout). The admission and handler
 * callbacks below play an application: refusals, small and large body
 * limits, JSON answers naming what was parsed, a large answer, admission
 * answered later ("/later...").
 */
#include <assert.h>
#include <ctype.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server/http.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int http_server_adopt(struct http_server *srv, int fd); /* server/http.c */

static uv_loop_t loop;
static struct http_server *srv;
static char big[64 * 1024];

/* What the strict framing rules promise every head that gets past them
 * (RFC 9112; request smuggling): field names are tokens, no value holds a
 * line break, the only transfer coding is one lone "chunked", never beside
 * a Content-Length, at most one Host, and the target is origin-form. (The
 * line framing -- CRLF, no obs-fold -- is checked before the parser and
 * leaves no trace in a head.) */
static void check_strict(const struct http_request *req)
{
    size_t te = 0, cl = 0, host = 0;
    assert(req->target[0] == '/' && req->path[0] == '/');
    for (size_t i = 0; i < req->nheaders; i++) {
        const char *n = req->headers[i].name, *v = req->headers[i].value;
        assert(n[0] != '\0');
        for (const char *k = n; *k; k++)
            assert(isalnum((unsigned char)*k) || strchr("!#$%&'*+-.^_`|~", *k));
        assert(!strpbrk(v, "\r\n"));
        if (strcasecmp(n, "Transfer-Encoding") == 0) {
            te++;
            assert(strcasecmp(v, "chunked") == 0);
        }
        cl += strcasecmp(n, "Content-Length") == 0;
        host += strcasecmp(n, "Host") == 0;
    }
    assert(te <= 1 && !(te && cl) && host <= 1);
}

/* Admission that looks something up off the loop (the server's credential
 * lookups): "/later..." answers HTTP_DEFERRED and is resumed from a timer,
 * unless the client went first (later_abort). req->user marks the second
 * call; the server frees it. */
static uv_timer_t later_timer;
static struct http_request *later_req;

static void later_abort(struct http_request *req, void *data)
{
    assert(req == later_req);
    later_req = NULL;
    uv_timer_stop(&later_timer);
}

static void later_cb(uv_timer_t *t)
{
    struct http_request *req = later_req;
    later_req = NULL;
    if (req) {
        req->on_abort = NULL;
        http_request_admit_resume(req);
    }
}

/* Admission as the application does it: from the head alone. */
static int fuzz_admit(void *app, struct http_request *req, size_t *body_max)
{
    char session[64];
    check_strict(req);
    if (strncmp(req->path, "/later", 6) == 0 && req->user == NULL) {
        assert(later_req == NULL && (req->user = malloc(1)) != NULL);
        later_req = req;
        req->on_abort = later_abort;
        uv_timer_start(&later_timer, later_cb, 0, 0);
        return HTTP_DEFERRED;
    }
    if (strncmp(req->path, "/laterdeny", 10) == 0) {
        http_response_error(req, 401, "unauthorized", "Looked up: no.");
        return 401;
    }
    const char *token = http_request_header(req, "Authorization");
    int has_session = http_request_cookie(req, "session", session, sizeof(session)) == 0;
    if (strncmp(req->path, "/deny", 5) == 0) {
        http_response_error(req, 401, "unauthorized", "Sign in to %s first.", req->path);
        return 401;
    }
    if (strncmp(req->path, "/small", 6) == 0) {
        *body_max = 16;
        req->body_note = "this endpoint takes at most 16 bytes.";
    } else if (req->method == HTTP_GET || req->method == HTTP_HEAD) {
        *body_max = 0;
    } else {
        *body_max = token || has_session ? 256 * 1024 : 4096;
    }
    return 0;
}

static int fuzz_handle(void *app, struct http_request *req)
{
    assert(req->body && req->body[req->body_len] == '\0');
    if (strcmp(req->path, "/big") == 0) {
        http_response_body_borrowed(req, 200, "text/plain", big, sizeof(big));
        return HTTP_DONE;
    }
    if (strcmp(req->path, "/redirect") == 0) {
        http_response_redirect(req, 303, "/");
        return HTTP_DONE;
    }
    if (strcmp(req->path, "/empty") == 0) {
        http_response_status(req, 204);
        return HTTP_DONE;
    }
    json_t *j = json_object();
    json_object_set_new(j, "method", json_string(req->method_name));
    json_object_set_new(j, "path", json_string(req->path)); /* NULL (skipped) if not UTF-8 */
    const char *q = http_request_query(req, "q"), *page = http_request_query(req, "page");
    json_object_set_new(j, "q", q ? json_string(q) : json_null());
    json_object_set_new(j, "page", page ? json_string(page) : json_null());
    json_object_set_new(j, "headers", json_integer((json_int_t)req->nheaders));
    json_object_set_new(j, "body_utf8", json_boolean(http_utf8_valid(req->body, req->body_len)));
    json_object_set_new(j, "client", json_string(req->client));
    if (strcmp(req->path, "/close") == 0)
        req->close_after = 1;
    if (strcmp(req->path, "/error") == 0)
        http_response_error(req, 422, "bad_input", "Got %zu bytes at %s.", req->body_len,
                            req->path);
    else if (http_response_json(req, 200, j) != 0)
        http_response_status(req, 500);
    json_decref(j);
    return HTTP_DONE;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    static const struct http_callbacks cb = {.admit = fuzz_admit, .handle = fuzz_handle};
    /* Timeouts long enough that a run never reaches them: a run that
     * does is a connection the server forgot (libFuzzer -timeout). */
    struct http_limits lim = {.header_timeout_s = 60, .idle_timeout_s = 60,
                              .write_timeout_s = 60};
    signal(SIGPIPE, SIG_IGN); /* as in server/main.c */
    memset(big, 'x', sizeof(big));
    uv_loop_init(&loop);
    uv_timer_init(&loop, &later_timer);
    if (http_server_start(&loop, "127.0.0.1", 0, &lim, &cb, NULL, &srv) != 0) {
        fprintf(stderr, "fuzz/http: cannot listen on 127.0.0.1\n");
        exit(2);
    }
    return 0;
}

/* The client's end. */
struct client {
    uv_pipe_t pipe;
    uv_write_t write;
    uv_shutdown_t shutdown;
    size_t received;
    int closed;
};

static void client_closed(uv_handle_t *h)
{
    ((struct client *)h->data)->closed = 1;
}

static void client_alloc(uv_handle_t *h, size_t sug, uv_buf_t *buf)
{
    static char in[64 * 1024];
    *buf = uv_buf_init(in, sizeof(in));
}

static void client_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf)
{
    struct client *cl = st->data;
    if (n > 0) {
        if (getenv("FUZZ_HTTP_ECHO")) /* to read what a reproducer got back */
            fwrite(buf->base, 1, (size_t)n, stderr);
        if (cl->received == 0) /* every answer starts with a status line */
            assert(n >= 9 && memcmp(buf->base, "HTTP/1.1 ", 9) == 0);
        cl->received += (size_t)n;
    } else if (n < 0 && !uv_is_closing((uv_handle_t *)st)) {
        uv_close((uv_handle_t *)st, client_closed);
    }
}

static void client_wrote(uv_write_t *w, int status) {}
static void client_shut(uv_shutdown_t *s, int status) {}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int sv[2];
    struct client cl = {0};
    assert(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
    assert(http_server_adopt(srv, sv[0]) == 0);
    assert(uv_pipe_init(&loop, &cl.pipe, 0) == 0 && uv_pipe_open(&cl.pipe, sv[1]) == 0);
    cl.pipe.data = &cl;
    uv_buf_t b = uv_buf_init((char *)data, (unsigned)size);
    assert(uv_write(&cl.write, (uv_stream_t *)&cl.pipe, &b, 1, client_wrote) == 0);
    assert(uv_shutdown(&cl.shutdown, (uv_stream_t *)&cl.pipe, client_shut) == 0);
    assert(uv_read_start((uv_stream_t *)&cl.pipe, client_alloc, client_read) == 0);
    while (!cl.closed || http_server_conns(srv) > 0)
        uv_run(&loop, UV_RUN_ONCE);
    return 0;
}
