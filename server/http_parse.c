/*
 * http_parse.c - a connection's input: http-parser callbacks, strict
 * parsing (RFC 9112), admission from the head, buffering the body, then
 * handing the request to the application and answering it. See http.h.
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

/* ---- parsing ---- */

int conn_reject(struct http_conn *c, int status, const char *code, const char *fmt, ...)
{
    if (c->reject_status)
        return -1;
    c->reject_status = status;
    c->reject_code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->reject_msg, sizeof(c->reject_msg), fmt, ap);
    va_end(ap);
    return -1; /* makes http-parser stop with an error */
}

static int on_message_begin(http_parser *p)
{
    struct http_conn *c = p->data;
    c->in_message = 1;
    c->complete = 0;
    c->hbuf.len = 0;
    c->url_end = 0;
    c->nh = 0;
    c->hstate = 0;
    c->body.len = 0;
    c->body_max = 0;
    c->reject_ready = 0;
    c->admit_refused = 0;
    c->req.start_ns = uv_hrtime();
    c->req.method_name = NULL;
    c->req.path = NULL;
    c->req.route = NULL;
    /* A later request on a kept-alive connection gets its own deadline from
     * its first byte; the first keeps the one from accept, so that waiting
     * before the first byte buys no time. */
    if (c->requests > 0)
        conn_timer_arm(c, c->srv->lim.header_timeout_s);
    return 0;
}

static int hbuf_add(struct http_conn *c, const char *at, size_t len)
{
    if (c->hbuf.len + len > HTTP_HEADER_MAX)
        return conn_reject(c, 431, "header_too_large",
                           "The request line and headers exceed %d KiB.", HTTP_HEADER_MAX / 1024);
    if (http_buf_append(&c->hbuf, at, len))
        return conn_reject(c, 500, "internal", "Out of memory.");
    return 0;
}

static int on_url(http_parser *p, const char *at, size_t len)
{
    return hbuf_add(p->data, at, len);
}

static int on_header_field(http_parser *p, const char *at, size_t len)
{
    struct http_conn *c = p->data;
    if (c->hstate != 1) {
        if (hbuf_add(c, "", 1)) /* terminate the url or previous value */
            return -1;
        if (c->hstate == 0)
            c->url_end = c->hbuf.len;
        if (c->nh == HTTP_HEADERS_COUNT_MAX)
            return conn_reject(c, 431, "header_too_large", "The request has more than %d headers.",
                               HTTP_HEADERS_COUNT_MAX);
        c->hname[c->nh++] = c->hbuf.len;
        c->hstate = 1;
    }
    return hbuf_add(c, at, len);
}

static int on_header_value(http_parser *p, const char *at, size_t len)
{
    struct http_conn *c = p->data;
    if (c->hstate != 2) {
        if (hbuf_add(c, "", 1))
            return -1;
        c->hvalue[c->nh - 1] = c->hbuf.len;
        c->hstate = 2;
    }
    return hbuf_add(c, at, len);
}

/* RFC 9110 5.6.2: a header field name is a token. */
static int is_tchar(unsigned char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           (ch && strchr("!#$%&'*+-.^_`|~", ch) != NULL);
}

/* Strict RFC 9112 framing, checked once the head is in (http-parser is
 * lenient): only HTTP/1.0 and 1.1; field names are tokens (no space before
 * the colon: "Transfer-Encoding : chunked" would be read differently by a
 * proxy in front of us -- request smuggling); no CR or LF left in a value;
 * the only transfer coding is a lone "chunked", and
 * never beside Content-Length; one Host (RFC 9112 3.2: exactly one in
 * HTTP/1.1, at most one in 1.0). The line framing (CRLF, no obs-fold) is
 * http_frame.c's. Returns 0, or conn_reject's -1. */
static int request_check_strict(struct http_conn *c, http_parser *p)
{
    int te = 0, cl = 0, host = 0;
    if (p->http_major != 1 || p->http_minor > 1)
        return conn_reject(c, 400, "bad_request", "Only HTTP/1.0 and HTTP/1.1 are served.");
    for (size_t i = 0; i < c->nh; i++) {
        const char *n = c->kv[i].name, *v = c->kv[i].value;
        if (!*n)
            return conn_reject(c, 400, "bad_request", "A header line has no field name.");
        for (const char *k = n; *k; k++)
            if (!is_tchar((unsigned char)*k))
                return conn_reject(c, 400, "bad_request",
                                   "A header field name holds a character it may not (a space "
                                   "before the colon?).");
        if (strpbrk(v, "\r\n"))
            return conn_reject(c, 400, "bad_request",
                               "A header value holds a line break.");
        if (strcasecmp(n, "Transfer-Encoding") == 0) {
            if (te++ || strcasecmp(v, "chunked") != 0)
                return conn_reject(c, 501, "not_implemented",
                                   "The only transfer coding accepted is a lone 'chunked'.");
        } else if (strcasecmp(n, "Content-Length") == 0) {
            cl++;
        } else if (strcasecmp(n, "Host") == 0 && host++) {
            return conn_reject(c, 400, "bad_request", "A request carries one Host header, not two.");
        }
    }
    if (!host && p->http_minor == 1)
        return conn_reject(c, 400, "bad_request", "An HTTP/1.1 request must carry a Host header.");
    if (te && cl)
        return conn_reject(c, 400, "bad_request",
                           "A request may not carry both Transfer-Encoding and Content-Length.");
    return 0;
}

/* Through a trusted proxy, the client is the last address in
 * X-Forwarded-For: the one the proxy appended (entries before it are
 * whatever the client sent). Without a usable one, the proxy itself. */
static const char *request_forwarded_client(struct http_conn *c)
{
    const char *xff = NULL;
    for (size_t i = 0; i < c->nh; i++)
        if (strcasecmp(c->kv[i].name, "X-Forwarded-For") == 0)
            xff = c->kv[i].value; /* the last such header */
    if (!xff)
        return c->client_key;
    const char *last = strrchr(xff, ',');
    last = last ? last + 1 : xff;
    while (*last == ' ' || *last == '\t')
        last++;
    size_t len = strlen(last);
    while (len > 0 && (last[len - 1] == ' ' || last[len - 1] == '\t'))
        len--;
    struct http_addr a;
    if (addr_from_text(last, len, &a) != 0)
        return c->client_key;
    addr_client_key(&a, c->forwarded_key, sizeof(c->forwarded_key));
    return c->forwarded_key;
}

/* Split req's target into the decoded path (in c->pbuf) and the query.
 * 0, or the rejection (400/500) queued and -1. */
static int request_split_target(struct http_conn *c, struct http_request *r)
{
    /* Split the target; only origin-form ("/path?query") is served. */
    const char *t = r->target;
    size_t tlen = strlen(t);
    if (tlen == 0 || t[0] != '/')
        return conn_reject(c, 400, "bad_request", "The request target must start with '/'.");
    const char *q = memchr(t, '?', tlen);
    size_t plen = q ? (size_t)(q - t) : tlen;
    c->pbuf.len = 0;
    if (http_buf_reserve(&c->pbuf, plen + 1))
        return conn_reject(c, 500, "internal", "Out of memory.");
    long dl = http_url_decode(t, plen, c->pbuf.data, 0);
    if (dl < 0)
        return conn_reject(c, 400, "bad_request", "The request path has a bad %%-escape.");
    c->pbuf.len = (size_t)dl + 1;
    r->path = NULL; /* set below: pbuf may move in reserve */
    r->query = q ? q + 1 : "";
    /* Reserve room for the query parameters now so that the path pointer
     * stays valid (request_parse_query reserves the same amount). */
    size_t ql = strlen(r->query), n = 2;
    for (size_t i = 0; i < ql; i++)
        n += r->query[i] == '&';
    if (n > 66)
        n = 66;
    if (http_buf_reserve(&c->pbuf, 2 * ql + 2 * n + 2))
        return conn_reject(c, 500, "internal", "Out of memory.");
    r->path = c->pbuf.data;
    return 0;
}

static int head_admit(struct http_conn *c);

static int on_headers_complete(http_parser *p)
{
    struct http_conn *c = p->data;
    struct http_request *r = &c->req;

    if (hbuf_add(c, "", 1))
        return -1;
    if (c->hstate == 0)
        c->url_end = c->hbuf.len;
    if (c->hstate == 1) /* a field with no value */
        c->hvalue[c->nh - 1] = c->hbuf.len - 1;
    for (size_t i = 0; i < c->nh; i++) {
        c->kv[i].name = c->hbuf.data + c->hname[i];
        c->kv[i].value = c->hbuf.data + c->hvalue[i];
    }
    frame_body(c, p);
    if (request_check_strict(c, p))
        return -1;
    r->headers = c->kv;
    r->nheaders = c->nh;
    r->client = c->via_proxy ? request_forwarded_client(c) : c->client_key;
    r->method = p->method;
    r->method_name = http_method_str(p->method);
    r->target = c->hbuf.data;
    r->status = 0;
    r->content_type = NULL;
    r->close_after = 0;
    r->nparams = 0;
    r->route = NULL;
    r->body_note = NULL;
    free(r->user);
    r->user = NULL;
    r->on_abort = NULL;
    r->abort_data = NULL;
    r->qparsed = 0;
    r->nqparams = 0;

    if (request_split_target(c, r))
        return -1;
    if (head_admit(c))
        return -1;
    if (c->admitting) /* the parser waits at the head's end */
        http_parser_pause(p, 1);
    return 0;
}

/* Admission of c's head and the checks that follow it: 0 (c->admitting
 * when the application answers later), or -1 with the request rejected.
 * Nothing of the body has been read yet (what arrived with the head waits
 * unparsed). */
static int head_admit(struct http_conn *c)
{
    struct http_server *s = c->srv;
    struct http_request *r = &c->req;
    http_parser *p = &c->parser;

    c->body_max = HTTP_BODY_DEFAULT_MAX;
    if (s->cb.admit) {
        int refused = s->cb.admit(s->app, r, &c->body_max);
        if (refused == HTTP_DEFERRED) {
            /* Its lookups are off the loop: http_request_admit_resume
             * goes on. Nothing more is read or parsed meanwhile. */
            c->admitting = 1;
            c->deferred = 1;
            return 0;
        }
        if (refused) {
            assert(refused >= 400 && refused <= 599);
            if (r->status == 0)
                http_response_status(r, refused);
            if (http_request_has_body(r)) {
                /* Answer and close: reading a body nobody may send
                 * here is what we refuse to do. */
                c->reject_ready = 1;
                return conn_reject(c, refused, "refused", "Refused at admission.");
            }
            c->admit_refused = 1; /* answered in turn; the connection stays */
            return 0;
        }
    }
    if ((p->flags & F_CONTENTLENGTH) && p->content_length > c->body_max) {
        if (c->body_max == 0)
            return conn_reject(c, 413, "payload_too_large", "%s %s takes no request body.",
                               r->method_name, r->path);
        if (r->body_note)
            return conn_reject(c, 413, "payload_too_large", "The request body is %llu bytes; %s",
                               (unsigned long long)p->content_length, r->body_note);
        return conn_reject(c, 413, "payload_too_large",
                           "The request body is %llu bytes; this endpoint accepts at most %zu KiB.",
                           (unsigned long long)p->content_length, c->body_max / 1024);
    }
    /* The body is held until handled: all bodies being read together have
     * a budget (http_budget.c). */
    if ((p->flags & F_CONTENTLENGTH) && p->content_length > 0 &&
        conn_body_room(c, p->content_length) != 0)
        return conn_reject(c, 503, "busy",
                           "The server holds too many unfinished uploads; try again in a "
                           "minute.");
    const char *expect = http_request_header(r, "Expect");
    if (expect) {
        if (strcasecmp(expect, "100-continue") != 0)
            return conn_reject(c, 400, "bad_request", "Only 'Expect: 100-continue' is supported.");
        /* curl waits for this before sending a large body: it goes out
         * only now, after admission and the size check. */
        if (c->body_max > 0)
            http_buf_append(&c->out, "HTTP/1.1 100 Continue\r\n\r\n", 25);
    }
    conn_timer_arm(c, s->lim.header_timeout_s * 3);
    return 0;
}

int conn_admit_resume(struct http_conn *c)
{
    return head_admit(c);
}

static int on_body(http_parser *p, const char *at, size_t len)
{
    struct http_conn *c = p->data;
    if (c->body.len + len > c->body_max && c->req.body_note)
        return conn_reject(c, 413, "payload_too_large", "The request body is too large; %s",
                           c->req.body_note);
    if (c->body.len + len > c->body_max)
        return conn_reject(c, 413, "payload_too_large",
                           "The request body exceeds this endpoint's limit of %zu KiB.",
                           c->body_max / 1024);
    /* The whole announced body at once (admitted under body_max): growing
     * it by doubling copied 4 MiB into a fresh 8 MiB for every 8 MiB result,
     * thirty at a time, on the loop. The parser has already counted this
     * chunk off content_length. */
    if (c->body.len == 0 && (p->flags & F_CONTENTLENGTH) && p->content_length <= c->body_max &&
        http_buf_reserve(&c->body, len + (size_t)p->content_length))
        return conn_reject(c, 500, "internal", "Out of memory.");
    if (http_buf_append(&c->body, at, len))
        return conn_reject(c, 500, "internal", "Out of memory.");
    return 0;
}

static int on_message_complete(http_parser *p)
{
    struct http_conn *c = p->data;
    c->complete = 1;
    http_parser_pause(p, 1);
    return 0;
}

static const http_parser_settings parser_settings = {
    .on_message_begin = on_message_begin,
    .on_url = on_url,
    .on_header_field = on_header_field,
    .on_header_value = on_header_value,
    .on_headers_complete = on_headers_complete,
    .on_body = on_body,
    .on_message_complete = on_message_complete,
};

/* Write c->out and then body with one writev; whatever the socket does not
 * take now is copied into a uv_write. Only when no write is pending, so
 * the order of pipelined responses holds. */
static void conn_write_body(struct http_conn *c, const char *body, size_t blen)
{
    uv_buf_t b[2] = {uv_buf_init(c->out.data, (unsigned)c->out.len),
                     uv_buf_init((char *)body, (unsigned)blen)};
    int n = uv_try_write((uv_stream_t *)&c->tcp, b, 2);
    size_t done = n > 0 ? (size_t)n : 0;
    if (n < 0 && n != UV_EAGAIN && n != UV_ENOSYS) {
        c->out.len = 0;
        conn_close(c);
        return;
    }
    if (done == c->out.len + blen) {
        c->out.len = 0;
        return;
    }
    struct http_write *hw = calloc(1, sizeof(*hw));
    if (!hw) {
        conn_close(c);
        return;
    }
    hw->conn = c;
    int rc = 0;
    if (done < c->out.len)
        rc = http_buf_append(&hw->buf, c->out.data + done, c->out.len - done);
    size_t boff = done > c->out.len ? done - c->out.len : 0;
    if (!rc)
        rc = http_buf_append(&hw->buf, body + boff, blen - boff);
    c->out.len = 0;
    conn_write_queue(c, hw, rc);
}

/* Format the response of c->req into c->out and reset the request. */
void conn_respond(struct http_conn *c)
{
    struct http_server *s = c->srv;
    struct http_request *r = &c->req;
    if (r->status == 0) {
        http_response_error(r, 500, "internal", "The server produced no answer.");
    }
    if (s->cb.done)
        s->cb.done(s->app, r);
    int keep = !c->close_after_write && !r->close_after && !s->stopping &&
               http_should_keep_alive(&c->parser);
    int head = r->method == HTTP_HEAD;
    int no_body = r->status == 204 || r->status == 304;
    const char *body = r->body_ext ? r->body_ext : r->res_body.data;
    size_t blen = r->body_ext ? r->body_ext_len : r->res_body.len;
    http_buf_printf(&c->out, "HTTP/1.1 %d %s\r\nServer: cugrade\r\nDate: %s\r\n", r->status,
                    http_status_text(r->status), http_date());
    if (!no_body)
        http_buf_printf(&c->out, "Content-Type: %s\r\nContent-Length: %zu\r\n",
                        r->content_type ? r->content_type : "application/json", blen);
    if (r->res_headers.len)
        http_buf_append(&c->out, r->res_headers.data, r->res_headers.len);
    http_buf_append(&c->out, keep ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n",
                    keep ? 26 : 21);
    if (!head && !no_body && blen) {
        if (blen >= HTTP_WRITEV_MIN && c->write_pending == 0 && !c->closing)
            conn_write_body(c, body, blen); /* big bodies: no copy */
        else
            http_buf_append(&c->out, body, blen);
    }
    r->body_ext = NULL;
    r->body_ext_len = 0;
    c->requests++;
    if (!keep)
        c->close_after_write = 1;
    /* reset for the next request */
    http_buf_reset(&r->res_headers);
    http_buf_reset(&r->res_body);
    free(r->qparams);
    r->qparams = NULL;
    r->nqparams = 0;
    r->qparsed = 0;
    free(r->user);
    r->user = NULL;
    c->in_message = 0;
    c->complete = 0;
    if (c->hbuf.cap > HTTP_KEEP_BUF)
        http_buf_free(&c->hbuf);
    http_buf_reset(&c->body);
    http_buf_reset(&c->pbuf);
}

static void conn_dispatch(struct http_conn *c)
{
    struct http_server *s = c->srv;
    struct http_request *r = &c->req;
    if (http_buf_append(&c->body, "", 0)) { /* NUL-terminate the body */
        http_response_error(r, 500, "internal", "Out of memory.");
        conn_respond(c);
        return;
    }
    r->body = c->body.data ? c->body.data : "";
    r->body_len = c->body.len;
    uv_timer_stop(&c->timer);
    if (c->admit_refused) { /* admission filled the answer in */
        c->admit_refused = 0;
        conn_respond(c);
        return;
    }
    int rc = s->cb.handle(s->app, r);
    if (rc == HTTP_DEFERRED) {
        c->deferred = 1;
        return;
    }
    conn_respond(c);
}

/* Answer a request the parser refused, then close. */
void conn_refuse(struct http_conn *c)
{
    struct http_request *r = &c->req;
    char msg[200];
    snprintf(msg, sizeof(msg), "%s", c->reject_msg);
    r->route = r->route ? r->route : "(refused)";
    r->close_after = 1;
    if (!r->method_name)
        r->method_name = "-";
    if (!r->path)
        r->path = "";
    if (!c->reject_ready) {
        /* The request may be half-parsed: answer with a clean slate. */
        r->res_body.len = 0;
        r->res_headers.len = 0;
        r->body_ext = NULL;
        http_response_error(r, c->reject_status, c->reject_code, "%s", msg);
    }
    c->close_after_write = 1;
    conn_read_stop(c);
    conn_respond(c);
}

static void conn_save_pending(struct http_conn *c, const char *data, size_t len)
{
    if (len == 0)
        return;
    if (c->pending && c->pending_off < c->pending_len) {
        /* Called while draining pending itself: it is already there. */
        return;
    }
    free(c->pending);
    c->pending = malloc(len);
    if (!c->pending) {
        conn_close(c);
        return;
    }
    memcpy(c->pending, data, len);
    c->pending_len = len;
    c->pending_off = 0;
    conn_read_stop(c);
}

/* Parse and handle as much of data as possible. Bytes not parsed because a
 * request is being handled are kept in c->pending. */
void conn_feed(struct http_conn *c, const char *data, size_t len)
{
    struct http_server *s = c->srv;
    int from_pending = c->pending && data == c->pending + c->pending_off;
    int handled = 0;
    if (uv_now(s->loop) != s->turn_ms) {
        s->turn_ms = uv_now(s->loop);
        s->turn_requests = 0;
    }
    /* Pipelined requests from a client that does not read its answers stop
     * being handled once HTTP_WRITE_HIGH of answers wait (memory, and a
     * loop working for one client); and after HTTP_PIPELINE_BURST of them,
     * or once HTTP_TURN_REQUESTS were handled in this turn by everyone
     * (then each connection gets its first only), the rest waits in
     * c->pending for the next turn of the loop, so that other clients are
     * served in between. */
    while (len > 0 && !c->closing && !c->lingering && !c->deferred && !c->close_after_write &&
           c->out.len + c->write_pending <= HTTP_WRITE_HIGH && handled < HTTP_PIPELINE_BURST &&
           (handled == 0 || s->turn_requests < HTTP_TURN_REQUESTS)) {
        /* Only bytes whose line framing is checked go to the parser. */
        size_t ok = frame_scan(c, data, len);
        if (ok == 0) {
            assert(c->fr_bad); /* else the parser would have had the head */
            conn_reject(c, 400, "bad_request", "%s", c->fr_bad);
            conn_refuse(c);
            break;
        }
        size_t n = http_parser_execute(&c->parser, &parser_settings, data, ok);
        enum http_errno e = HTTP_PARSER_ERRNO(&c->parser);
        if (n > ok)
            n = ok;
        c->fr_ahead = ok - n;
        data += n;
        len -= n;
        if (from_pending)
            c->pending_off += n;
        if (c->reject_status) {
            conn_refuse(c);
            break;
        }
        if (e == HPE_PAUSED) {
            http_parser_pause(&c->parser, 0);
            if (c->complete) {
                conn_dispatch(c);
                handled++;
                s->turn_requests++;
            }
            continue;
        }
        if (e != HPE_OK) {
            conn_reject(c, 400, "bad_request", "Malformed HTTP request: %s.",
                        http_errno_description(e));
            conn_refuse(c);
            break;
        }
        if (n == 0)
            break;
    }
    if (len > 0 && handled > 0 && handled < HTTP_PIPELINE_BURST &&
        s->turn_requests >= HTTP_TURN_REQUESTS && !c->closing && !c->lingering && !c->deferred &&
        !c->close_after_write && c->out.len + c->write_pending <= HTTP_WRITE_HIGH)
        s->turn_waits++; /* the turn's budget stopped it, nothing else */
    if (from_pending) {
        if (c->pending_off >= c->pending_len || c->close_after_write || c->lingering) {
            free(c->pending);
            c->pending = NULL;
            c->pending_len = c->pending_off = 0;
        }
    } else if (len > 0 && !c->closing && !c->close_after_write && !c->lingering) {
        conn_save_pending(c, data, len);
    }
}

/* Called when every queued byte was written. */
void conn_after_writes(struct http_conn *c)
{
    struct http_server *s = c->srv;
    if (c->closing || c->lingering)
        return;
    if (c->close_after_write) {
        conn_linger(c);
        return;
    }
    if (c->deferred)
        return;
    if (c->pending) {
        /* Pipelined bytes wait: go on with them from the loop, not from
         * inside whoever finished the previous request. */
        conn_resume_later(c);
        return;
    }
    if (s->stopping && !c->in_message) {
        conn_close(c);
        return;
    }
    conn_read_start(c);
    /* Only an idle connection gets a new deadline here: a request in
     * progress keeps the one from its first byte (slowloris). */
    if (!c->in_message) {
        c->idle_tick = ++s->tick;
        conn_timer_arm(c, s->lim.idle_timeout_s);
    }
}

void conn_resume(struct http_conn *c)
{
    if (c->closing || c->deferred)
        return;
    if (c->pending)
        conn_feed(c, c->pending + c->pending_off, c->pending_len - c->pending_off);
    conn_flush(c);
    conn_account(c);
}
