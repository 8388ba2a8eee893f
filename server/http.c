/*
 * http.c - HTTP/1.1 on libuv and http-parser: connections, their
 * lifecycle, writing, timers, reading and accepting. See http.h; the other
 * parts are http_message.c, http_client.c, http_parse.c, http_frame.c and
 * http_budget.c (private interface: http_conn.h).
 *
 * One connection parses one request at a time: the parser pauses at the end
 * of each message, the request is handled, and only then does parsing go on
 * with the bytes that followed (pipelining). Responses are appended to one
 * output buffer per connection and written with uv_try_write, the rest with
 * uv_write; while a client does not read, we stop reading from it.
 *
 * What one client can make us hold or do is bounded: a request's head is
 * checked by the application's admit callback before any body byte is
 * buffered (an anonymous client gets a few KiB at most); connections are
 * counted per client address; a connection gets header_timeout_s from
 * accept to its first complete head; at most HTTP_PIPELINE_BURST pipelined
 * requests of one connection are handled per turn of the loop; and parsing
 * stops while HTTP_WRITE_HIGH bytes of answers wait unsent in user space,
 * the kernel holding at most HTTP_NOTSENT_LOWAT more (TCP_NOTSENT_LOWAT).
 */
#include "server/http.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <http_parser.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#include "server/http_conn.h"

static char http_read_buf[HTTP_READ_CHUNK];
static int http_read_buf_busy;

/* ---- connection lifecycle ---- */

static void server_maybe_done(struct http_server *s);
static void yield_unlink(struct http_conn *c);

static void conn_free_if_done(struct http_conn *c)
{
    if (c->handles > 0)
        return;
    struct http_server *s = c->srv;
    if (c->prev)
        c->prev->next = c->next;
    else
        s->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    s->nconns--;
    assert(s->nclosing > 0);
    s->nclosing--;
    client_remove(s, c);
    if (s->stopping && s->nconns == 0)
        server_maybe_done(s);
    http_buf_free(&c->hbuf);
    http_buf_free(&c->pbuf);
    http_buf_free(&c->body);
    http_buf_free(&c->out);
    http_buf_free(&c->req.res_headers);
    http_buf_free(&c->req.res_body);
    free(c->req.qparams);
    free(c->req.user);
    free(c->pending);
    free(c);
}

static void conn_handle_closed(uv_handle_t *h)
{
    struct http_conn *c = h->data;
    c->handles--;
    conn_free_if_done(c);
}

void conn_close(struct http_conn *c)
{
    if (c->closing)
        return;
    c->closing = 1;
    c->srv->nclosing++;
    client_remove(c->srv, c); /* its place is free now (http_budget.c) */
    conn_unaccount(c);
    yield_unlink(c);
    if (c->deferred && c->req.on_abort) {
        /* The client went away while its request was parked: the owner
         * must forget the request now; its memory goes with the conn. */
        c->deferred = 0;
        c->req.on_abort(&c->req, c->req.abort_data);
    }
    uv_close((uv_handle_t *)&c->timer, conn_handle_closed);
    uv_close((uv_handle_t *)&c->tcp, conn_handle_closed);
}

static void linger_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf);

static void linger_alloc(uv_handle_t *h, size_t sug, uv_buf_t *buf)
{
    (void)h;
    (void)sug;
    buf->base = http_read_buf;
    buf->len = sizeof(http_read_buf);
}

static void linger_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf)
{
    struct http_conn *c = st->data;
    (void)buf;
    if (n < 0) {
        conn_close(c);
        return;
    }
    /* Discard what the client still sends, so that closing does not reset
     * the connection before it read our answer; but not forever. */
    c->pending_off += (size_t)n;
    if (c->pending_off > HTTP_LINGER_MAX)
        conn_close(c);
}

static void conn_shutdown_cb(uv_shutdown_t *sr, int status)
{
    free(sr);
    (void)status;
}

/* Half-close after the last byte was written, then read and discard for a
 * while (lingering close) and close. */
void conn_linger(struct http_conn *c)
{
    if (c->lingering || c->closing)
        return;
    c->lingering = 1;
    uv_read_stop((uv_stream_t *)&c->tcp);
    c->reading = 0;
    uv_shutdown_t *sr = malloc(sizeof(*sr));
    if (!sr || uv_shutdown(sr, (uv_stream_t *)&c->tcp, conn_shutdown_cb) != 0) {
        free(sr);
        conn_close(c);
        return;
    }
    free(c->pending);
    c->pending = NULL;
    c->pending_len = c->pending_off = 0;
    if (uv_read_start((uv_stream_t *)&c->tcp, linger_alloc, linger_read) != 0) {
        conn_close(c);
        return;
    }
    conn_timer_arm(c, HTTP_LINGER_S);
}

/* ---- writing ---- */


static void write_cb(uv_write_t *w, int status)
{
    struct http_write *hw = (struct http_write *)w;
    struct http_conn *c = hw->conn;
    c->write_pending -= hw->buf.len;
    http_buf_free(&hw->buf);
    free(hw);
    if (c->closing)
        return;
    if (status < 0) {
        conn_close(c);
        return;
    }
    c->progress_tick = ++c->srv->tick;
    if (c->write_pending == 0)
        conn_after_writes(c);
    conn_account(c);
}

/* Hand hw (owning hw->buf) to uv_write, or, when failed is non-zero or
 * uv_write refuses, free it and close the connection. Either way hw is no
 * longer the caller's. */
void conn_write_queue(struct http_conn *c, struct http_write *hw, int failed)
{
    uv_buf_t b = uv_buf_init(hw->buf.data, (unsigned)hw->buf.len);
    if (failed || uv_write(&hw->w, (uv_stream_t *)&c->tcp, &b, 1, write_cb) != 0) {
        http_buf_free(&hw->buf);
        free(hw);
        conn_close(c);
        return;
    }
    c->write_pending += hw->buf.len;
    /* Backpressure: a client that does not read gets no more parsing. */
    if (c->write_pending > HTTP_WRITE_HIGH)
        conn_read_stop(c);
    conn_timer_arm(c, c->srv->lim.write_timeout_s);
}

void conn_flush(struct http_conn *c)
{
    if (c->closing || c->out.len == 0) {
        if (!c->closing && c->write_pending == 0)
            conn_after_writes(c);
        return;
    }
    size_t off = 0;
    if (c->write_pending == 0) {
        uv_buf_t b = uv_buf_init(c->out.data, (unsigned)c->out.len);
        int n = uv_try_write((uv_stream_t *)&c->tcp, &b, 1);
        if (n > 0)
            off = (size_t)n;
        else if (n != UV_EAGAIN && n != UV_ENOSYS) {
            conn_close(c);
            return;
        }
    }
    if (off == c->out.len) {
        c->out.len = 0;
        http_buf_reset(&c->out);
        conn_after_writes(c);
        return;
    }
    struct http_write *hw = calloc(1, sizeof(*hw));
    if (!hw) {
        conn_close(c);
        return;
    }
    hw->conn = c;
    if (off == 0) {
        hw->buf = c->out; /* hand the buffer over, no copy */
        memset(&c->out, 0, sizeof(c->out));
    } else if (http_buf_append(&hw->buf, c->out.data + off, c->out.len - off)) {
        free(hw);
        conn_close(c);
        return;
    } else {
        c->out.len = 0;
    }
    conn_write_queue(c, hw, 0);
}

/* ---- timers ---- */

static void conn_timer_cb(uv_timer_t *t);

void conn_timer_arm(struct http_conn *c, double seconds)
{
    if (c->closing)
        return;
    uv_timer_start(&c->timer, conn_timer_cb, (uint64_t)(seconds * 1000.0), 0);
}


static void conn_timer_cb(uv_timer_t *t)
{
    struct http_conn *c = t->data;
    struct http_server *s = c->srv;
    if (c->closing)
        return;
    if (c->lingering || c->write_pending > 0) {
        conn_close(c);
        return;
    }
    if (c->deferred)
        return;
    if (c->in_message) {
        /* Slowloris: a request that trickles in is cut off. */
        conn_reject(c, 408, "request_timeout",
                    "The request did not arrive in time (%.0f s for the headers, %.0f s in all).",
                    s->lim.header_timeout_s, s->lim.header_timeout_s * 3);
        conn_refuse(c);
        conn_flush(c);
        return;
    }
    conn_close(c); /* idle keep-alive connection */
}

/* ---- reading ---- */

static void conn_alloc(uv_handle_t *h, size_t sug, uv_buf_t *buf)
{
    (void)h;
    (void)sug;
    /* One shared buffer: every read is parsed before the next one, and the
     * leftovers of a parked request are copied out. */
    if (http_read_buf_busy) {
        buf->base = NULL;
        buf->len = 0;
        return;
    }
    buf->base = http_read_buf;
    buf->len = sizeof(http_read_buf);
}

/* ---- fair reading ----
 * libuv reads a readable socket until it is drained (up to 32 buffers per
 * callback): 400 uploads arriving at once were read whole, 100 MB, before
 * the loop polled again, and /healthz waited behind them. A connection in
 * the middle of a request reads one buffer per loop iteration, then yields
 * its turn until the next one (the idle handle also keeps the poll from
 * blocking while anyone waits). */

static void yield_unlink(struct http_conn *c)
{
    struct http_server *s = c->srv;
    if (!c->yielded)
        return;
    if (c->yprev)
        c->yprev->ynext = c->ynext;
    else if (c->yielded == 2)
        s->yield_now = c->ynext;
    else
        s->yield_head = c->ynext;
    if (c->ynext)
        c->ynext->yprev = c->yprev;
    c->ynext = c->yprev = NULL;
    c->yielded = 0;
    c->resume = 0;
}

static void yield_cb(uv_idle_t *h)
{
    struct http_server *s = h->data;
    struct http_conn *c;
    assert(s->yield_now == NULL);
    /* Those that yield meanwhile wait for the next iteration; one closed
     * meanwhile (budget shedding) unlinks itself from yield_now. */
    s->yield_now = s->yield_head;
    s->yield_head = NULL;
    for (c = s->yield_now; c; c = c->ynext)
        c->yielded = 2;
    uv_idle_stop(h);
    while ((c = s->yield_now) != NULL) {
        assert(!c->reading);
        int resume = c->resume;
        yield_unlink(c);
        if (resume)
            conn_resume(c);
        else
            conn_read_start(c);
    }
}

/* c on the yield list, to read again (resume: to handle its pending
 * bytes) next loop iteration. */
static void yield_link(struct http_conn *c, int resume)
{
    struct http_server *s = c->srv;
    c->yielded = 1;
    c->resume = resume;
    c->ynext = s->yield_head;
    c->yprev = NULL;
    if (s->yield_head)
        s->yield_head->yprev = c;
    s->yield_head = c;
    uv_idle_start(&s->yield, yield_cb);
}

static void conn_yield(struct http_conn *c)
{
    struct http_server *s = c->srv;
    if (c->yielded || !c->reading || c->closing || s->stopping)
        return;
    conn_read_stop(c);
    yield_link(c, 0);
}

/* Not a 0 ms timer: libuv (1.44) runs a timer started from a timer
 * callback in the same pass, so a client whose answers the kernel took at
 * once had its whole pipeline handled in one turn of the loop, whatever
 * HTTP_PIPELINE_BURST and HTTP_TURN_REQUESTS said. */
void conn_resume_later(struct http_conn *c)
{
    assert(c->pending);
    if (c->yielded || c->closing)
        return;
    conn_read_stop(c); /* stopped already when its bytes were kept */
    /* No deadline while it waits for its turn (after_writes arms the idle
     * one once the pipeline is drained). */
    uv_timer_stop(&c->timer);
    yield_link(c, 1);
}

static void conn_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf)
{
    struct http_conn *c = st->data;
    if (n == 0)
        return;
    if (n < 0) {
        if (n == UV_ENOBUFS)
            return;
        /* EOF or error. A half-received request gets no answer, and a parked
         * one is dropped (its owner must not hand a job to a client that
         * left). A client that half-closed after its request still gets the
         * response that is being written. */
        if (n == UV_EOF && !c->in_message && !c->deferred && c->write_pending > 0) {
            conn_read_stop(c);
            c->close_after_write = 1;
            return;
        }
        conn_close(c);
        return;
    }
    c->progress_tick = ++c->srv->tick;
    http_read_buf_busy = 1;
    conn_feed(c, buf->base, (size_t)n);
    http_read_buf_busy = 0;
    conn_flush(c);
    if (c->in_message && !c->complete && !c->deferred)
        conn_yield(c);
    conn_account(c);
}

void conn_read_start(struct http_conn *c)
{
    yield_unlink(c);
    if (c->reading || c->closing || c->lingering)
        return;
    if (uv_read_start((uv_stream_t *)&c->tcp, conn_alloc, conn_read) == 0)
        c->reading = 1;
}

void conn_read_stop(struct http_conn *c)
{
    yield_unlink(c); /* whoever stops reading decides when it starts again */
    if (!c->reading)
        return;
    uv_read_stop((uv_stream_t *)&c->tcp);
    c->reading = 0;
}

char *http_request_body_take(struct http_request *req)
{
    struct http_conn *c = req->conn;
    char *b = c->body.data;
    /* Taken once, by the handler: conn_dispatch NUL-terminated the body,
     * so the buffer exists. */
    assert(b != NULL && req->body == b);
    c->body.data = NULL;
    c->body.len = c->body.cap = 0;
    req->body = "";
    req->body_len = 0;
    conn_account(c); /* the handler holds it now */
    return b;
}

void http_request_finish(struct http_request *req)
{
    struct http_conn *c = req->conn;
    if (!c->deferred)
        return;
    c->deferred = 0;
    conn_respond(c);
    conn_flush(c);
    conn_account(c);
}

/* req's client went away (conn_close): forget req. */
static void hold_abort(struct http_request *req, void *data)
{
    struct http_hold *h = data;
    assert(h->req == req);
    h->req = NULL;
}

void http_hold_start(struct http_hold *h, struct http_request *req)
{
    assert(h && req && !req->on_abort);
    h->req = req;
    req->on_abort = hold_abort;
    req->abort_data = h;
}

struct http_request *http_hold_end(struct http_hold *h)
{
    struct http_request *req = h->req;
    h->req = NULL;
    if (req) {
        assert(req->on_abort == hold_abort && req->abort_data == h);
        req->on_abort = NULL;
        req->abort_data = NULL;
    }
    return req;
}

void http_request_admit_resume(struct http_request *req)
{
    struct http_conn *c = req->conn;
    assert(c->admitting && c->deferred && !c->closing);
    c->admitting = 0;
    c->deferred = 0;
    if (conn_admit_resume(c) != 0) {
        conn_refuse(c);
    } else if (!c->admitting && c->pending) {
        conn_feed(c, c->pending + c->pending_off, c->pending_len - c->pending_off);
    }
    if (!c->admitting)
        conn_flush(c);
    conn_account(c);
}

/* ---- accepting ---- */

static void on_connection(uv_stream_t *ls, int status)
{
    struct http_server *s = ls->data;
    if (status < 0 || s->stopping)
        return;
    struct http_conn *c = calloc(1, sizeof(*c));
    if (!c)
        return;
    c->srv = s;
    c->req.conn = c;
    c->req.app = s->app;
    c->req.remote = c->remote;
    c->req.client = c->client_key;
    uv_tcp_init(s->loop, &c->tcp);
    uv_timer_init(s->loop, &c->timer);
    c->tcp.data = c;
    c->timer.data = c;
    c->handles = 2;
    c->next = s->conns;
    if (s->conns)
        s->conns->prev = c;
    s->conns = c;
    s->nconns++;
    c->idle_tick = c->progress_tick = ++s->tick;
    if (uv_accept(ls, (uv_stream_t *)&c->tcp) != 0) {
        conn_close(c);
        return;
    }
    struct sockaddr_storage sa;
    int salen = sizeof(sa);
    if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&sa, &salen) != 0) {
        conn_close(c); /* gone already */
        return;
    }
    struct http_addr peer;
    addr_from_sockaddr(&sa, &peer);
    if (sa.ss_family == AF_INET)
        uv_ip4_name((struct sockaddr_in *)&sa, c->remote, sizeof(c->remote));
    else if (sa.ss_family == AF_INET6)
        uv_ip6_name((struct sockaddr_in6 *)&sa, c->remote, sizeof(c->remote));
    addr_client_key(&peer, c->client_key, sizeof(c->client_key));
    for (size_t i = 0; i < s->nproxies; i++)
        c->via_proxy |= addr_equal(&peer, &s->proxies[i]);
    /* One client holding every connection locks the others out (10,000
     * idle sockets from one host did): it gets its share, no more, and
     * idle ones make room for others (http_budget.c). A trusted proxy
     * carries every client: it is held only to max_conns. */
    if (conn_admit(s, c) != 0) {
        conn_close(c); /* connection floods: shed at once */
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    uv_os_fd_t fd;
    if (uv_fileno((uv_handle_t *)&c->tcp, &fd) == 0) {
        int lowat = HTTP_NOTSENT_LOWAT;
        setsockopt(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &lowat, sizeof(lowat));
    }
    http_parser_init(&c->parser, HTTP_REQUEST);
    frame_reset(c);
    c->parser.data = c;
    conn_read_start(c);
    /* Until its first request head is in, a connection gets the header
     * timeout, not the idle one: sockets that never send a byte are
     * otherwise the cheapest way to hold connections. */
    conn_timer_arm(c, s->lim.header_timeout_s);
}

static void server_listen_failed(uv_handle_t *h)
{
    free(h->data);
}

int http_server_start(uv_loop_t *loop, const char *host, int port, const struct http_limits *limits,
                      const struct http_callbacks *cb, void *app, struct http_server **out)
{
    struct sockaddr_storage sa;
    int rc;
    struct http_server *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->loop = loop;
    s->cb = *cb;
    s->app = app;
    s->lim = limits ? *limits : (struct http_limits){0};
    if (s->lim.header_timeout_s <= 0)
        s->lim.header_timeout_s = 10;
    if (s->lim.idle_timeout_s <= 0)
        s->lim.idle_timeout_s = 30;
    if (s->lim.write_timeout_s <= 0)
        s->lim.write_timeout_s = 30;
    if (s->lim.max_conns == 0)
        s->lim.max_conns = 10000;
    if (s->lim.max_conns_per_client == 0)
        s->lim.max_conns_per_client = 64;
    if (s->lim.max_buffered == 0)
        s->lim.max_buffered = (size_t)64 << 20;
    for (size_t i = 0; i < HTTP_TRUSTED_PROXIES_MAX && s->lim.trusted_proxies[i]; i++) {
        const char *p = s->lim.trusted_proxies[i];
        if (addr_from_text(p, strlen(p), &s->proxies[s->nproxies++]) != 0) {
            free(s);
            return -EINVAL;
        }
    }
    if (strchr(host, ':'))
        rc = uv_ip6_addr(host, port, (struct sockaddr_in6 *)&sa);
    else
        rc = uv_ip4_addr(host, port, (struct sockaddr_in *)&sa);
    if (rc) {
        free(s);
        return -EINVAL;
    }
    uv_tcp_init(loop, &s->listener);
    s->listener.data = s;
    rc = uv_tcp_bind(&s->listener, (struct sockaddr *)&sa, 0);
    if (!rc)
        rc = uv_listen((uv_stream_t *)&s->listener, 1024, on_connection);
    if (rc) {
        uv_close((uv_handle_t *)&s->listener, server_listen_failed);
        return rc;
    }
    struct sockaddr_storage bound;
    int blen = sizeof(bound);
    uv_tcp_getsockname(&s->listener, (struct sockaddr *)&bound, &blen);
    s->port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                                : ((struct sockaddr_in *)&bound)->sin_port);
    uv_timer_init(loop, &s->grace);
    s->grace.data = s;
    uv_idle_init(loop, &s->yield);
    s->yield.data = s;
    *out = s;
    return 0;
}

int http_server_port(struct http_server *srv)
{
    return srv->port;
}

size_t http_server_conns(struct http_server *srv)
{
    return srv->nconns;
}

void http_server_refused(struct http_server *srv, uint64_t *over_global, uint64_t *over_client)
{
    *over_global = srv->refused_global;
    *over_client = srv->refused_client;
}

int http_request_has_body(const struct http_request *req)
{
    const http_parser *p = &req->conn->parser;
    return (p->flags & F_CHUNKED) || ((p->flags & F_CONTENTLENGTH) && p->content_length > 0);
}

int http_server_stopping(struct http_server *srv)
{
    return srv->stopping;
}

static void server_free_cb(uv_handle_t *h)
{
    struct http_server *s = h->data;
    if (h == (uv_handle_t *)&s->listener)
        s->listener_closed = 1;
    else if (h == (uv_handle_t *)&s->yield)
        s->yield_closed = 1;
    else
        s->grace_closed = 1;
    if (s->listener_closed && s->grace_closed && s->yield_closed) {
        void (*done)(void *) = s->done;
        void *arg = s->done_arg;
        free(s);
        if (done)
            done(arg);
    }
}

static void server_maybe_done(struct http_server *s)
{
    /* Connections unlink themselves when their handles are closed. */
    if (s->nconns > 0 || uv_is_closing((uv_handle_t *)&s->grace))
        return;
    assert(s->yield_head == NULL); /* every connection unlinked itself */
    uv_close((uv_handle_t *)&s->grace, server_free_cb);
    uv_close((uv_handle_t *)&s->yield, server_free_cb);
}

static void grace_expired(uv_timer_t *t)
{
    struct http_server *s = t->data;
    for (struct http_conn *c = s->conns; c; c = c->next)
        if (!c->closing)
            conn_close(c);
    server_maybe_done(s);
}

void http_server_shutdown(struct http_server *srv, double grace_s, void (*done)(void *arg),
                          void *arg)
{
    if (srv->stopping)
        return;
    srv->stopping = 1;
    srv->done = done;
    srv->done_arg = arg;
    yield_cb(&srv->yield); /* no more turns: everyone reads on */
    uv_close((uv_handle_t *)&srv->listener, server_free_cb);
    struct http_conn *next;
    for (struct http_conn *c = srv->conns; c; c = next) {
        next = c->next;
        if (!c->in_message && !c->deferred && c->write_pending == 0 && !c->pending)
            conn_close(c);
    }
    uv_timer_start(&srv->grace, grace_expired, (uint64_t)(grace_s * 1000), 0);
    server_maybe_done(srv);
}

/* ---- fuzzing entry point ---- */

/* Not in http.h: only the fuzzer (tests/fuzz/http.c) calls it. */
int http_server_adopt(struct http_server *srv, int fd);

/* Serve fd, a connected stream socket (one end of a socketpair whose other
 * end the caller writes requests into and reads answers from), as a
 * connection srv accepted from 127.0.0.1: the same parsing, strictness
 * checks, admission, dispatch, pipelining and writing as for a client.
 * The per-client connection cap is not applied. Returns 0 (fd is srv's
 * now; it is closed with the connection) or -errno (fd is still the
 * caller's). */
int http_server_adopt(struct http_server *srv, int fd)
{
    assert(srv && !srv->stopping && fd >= 0);
    struct http_conn *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->srv = srv;
    c->req.conn = c;
    c->req.app = srv->app;
    c->req.remote = c->remote;
    c->req.client = c->client_key;
    snprintf(c->remote, sizeof(c->remote), "127.0.0.1");
    snprintf(c->client_key, sizeof(c->client_key), "127.0.0.1");
    uv_tcp_init(srv->loop, &c->tcp);
    uv_timer_init(srv->loop, &c->timer);
    c->tcp.data = c;
    c->timer.data = c;
    c->handles = 2;
    c->next = srv->conns;
    if (srv->conns)
        srv->conns->prev = c;
    srv->conns = c;
    srv->nconns++;
    c->idle_tick = c->progress_tick = ++srv->tick;
    int rc = uv_tcp_open(&c->tcp, fd);
    if (rc) {
        conn_close(c);
        return rc;
    }
    http_parser_init(&c->parser, HTTP_REQUEST);
    frame_reset(c);
    c->parser.data = c;
    conn_read_start(c);
    conn_timer_arm(c, srv->lim.header_timeout_s);
    return 0;
}
