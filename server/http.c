/*
 * http.c - HTTP/1.1 on libuv and http-parser. See http.h.
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

#define HTTP_READ_CHUNK (64 * 1024)
/* A client that pipelines requests and never reads its answers makes us
 * work until these fill: its receive window, the kernel's unsent bytes
 * (TCP_NOTSENT_LOWAT keeps them near HTTP_NOTSENT_LOWAT, else the send
 * buffer autotunes to megabytes), and our own unsent bytes. Above
 * HTTP_WRITE_HIGH we stop parsing its requests until it reads. */
#define HTTP_WRITE_HIGH (256 * 1024)
#define HTTP_NOTSENT_LOWAT (64 * 1024)
/* Pipelined requests one connection may have handled per turn of the loop
 * before others get theirs (10 clients each pipelining 64 KiB of requests
 * would otherwise hold the loop for thousands of handler runs). */
#define HTTP_PIPELINE_BURST 16
#define HTTP_CLIENT_BUCKETS 1024 /* hash buckets of the per-client connection counts */
#define HTTP_LINGER_MAX (1024 * 1024) /* bytes discarded after an error answer */
#define HTTP_LINGER_S 2.0
#define HTTP_KEEP_BUF (64 * 1024)  /* buffers above this are freed between requests */
#define HTTP_WRITEV_MIN (8 * 1024) /* bodies this big are written, not copied */

/* Open connections of one client address (or IPv6 /64). Exists while it
 * has any; chained in its hash bucket. */
struct http_client {
    struct http_client *next;
    size_t conns;
    char key[HTTP_CLIENT_KEY_MAX];
};

/* An address in canonical form: IPv4 (4 bytes) also when it came v4-mapped
 * on an IPv6 socket, else IPv6 (16 bytes). */
struct http_addr {
    int family; /* AF_INET, AF_INET6; 0: none */
    unsigned char b[16];
};

struct http_server {
    uv_loop_t *loop;
    uv_tcp_t listener;
    uv_timer_t grace;
    struct http_callbacks cb;
    struct http_limits lim;
    void *app;
    struct http_conn *conns;
    size_t nconns;
    struct http_client *clients[HTTP_CLIENT_BUCKETS];
    uint64_t refused_global, refused_client;
    struct http_addr proxies[HTTP_TRUSTED_PROXIES_MAX]; /* lim.trusted_proxies, parsed */
    size_t nproxies;
    int port;
    int stopping;
    int listener_closed, grace_closed;
    void (*done)(void *arg);
    void *done_arg;
};

struct http_conn {
    uv_tcp_t tcp;
    uv_timer_t timer;
    struct http_server *srv;
    struct http_conn *prev, *next;
    http_parser parser;
    struct http_request req;
    /* request line and headers, NUL-separated: url, name, value, ... */
    struct http_buf hbuf;
    size_t url_end; /* 0 until the url is terminated */
    size_t hname[HTTP_HEADERS_COUNT_MAX], hvalue[HTTP_HEADERS_COUNT_MAX];
    size_t nh;
    int hstate; /* 0 url, 1 in a field, 2 in a value */
    struct http_kv kv[HTTP_HEADERS_COUNT_MAX];
    struct http_buf pbuf; /* decoded path and query parameters */
    struct http_buf body;
    size_t body_max;
    int in_message, complete;
    unsigned long requests; /* requests answered on this connection */
    int reject_status;      /* answer this and close (413, 431, 400) */
    int reject_ready;       /* ...with the response admission filled in, not reject_msg */
    int admit_refused;      /* admission answered this bodiless request: no handler */
    const char *reject_code;
    char reject_msg[160];
    /* input received but not parsed yet (while a request is handled) */
    char *pending;
    size_t pending_len, pending_off;
    /* output */
    struct http_buf out;
    size_t write_pending;
    int reading;  /* uv_read_start is active */
    int deferred; /* a handler holds req */
    int lingering, closing, close_after_write, resume;
    int handles; /* open handles; free at 0 */
    struct http_client *client; /* counted there while not NULL */
    int via_proxy;              /* the peer is a trusted proxy */
    char remote[INET6_ADDRSTRLEN];
    char client_key[HTTP_CLIENT_KEY_MAX];    /* the peer's */
    char forwarded_key[HTTP_CLIENT_KEY_MAX]; /* X-Forwarded-For's, via a proxy */
};

struct http_write {
    uv_write_t w;
    struct http_conn *conn;
    struct http_buf buf;
};

static char http_read_buf[HTTP_READ_CHUNK];
static int http_read_buf_busy;

static void conn_close(struct http_conn *c);
static void conn_feed(struct http_conn *c, const char *data, size_t len);
static void conn_flush(struct http_conn *c);
static void conn_read_start(struct http_conn *c);
static void conn_read_stop(struct http_conn *c);

/* ---- buffers ---- */

int http_buf_append(struct http_buf *b, const void *data, size_t len)
{
    if (b->len + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + len + 1)
            cap *= 2;
        char *p = realloc(b->data, cap);
        if (!p)
            return -ENOMEM;
        b->data = p;
        b->cap = cap;
    }
    if (len)
        memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = '\0';
    return 0;
}

static int http_buf_vprintf(struct http_buf *b, const char *fmt, va_list ap)
{
    va_list aq;
    va_copy(aq, ap);
    char tmp[512];
    int n = vsnprintf(tmp, sizeof(tmp), fmt, aq);
    va_end(aq);
    if (n < 0)
        return -EINVAL;
    if ((size_t)n < sizeof(tmp))
        return http_buf_append(b, tmp, (size_t)n);
    char *big = malloc((size_t)n + 1);
    if (!big)
        return -ENOMEM;
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    int rc = http_buf_append(b, big, (size_t)n);
    free(big);
    return rc;
}

int http_buf_printf(struct http_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = http_buf_vprintf(b, fmt, ap);
    va_end(ap);
    return rc;
}

void http_buf_free(struct http_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

/* Keep small buffers for the next request; give big ones back (RSS). */
static void http_buf_reset(struct http_buf *b)
{
    if (b->cap > HTTP_KEEP_BUF)
        http_buf_free(b);
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

static int http_buf_reserve(struct http_buf *b, size_t extra)
{
    if (b->len + extra + 1 <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra + 1)
        cap *= 2;
    char *p = realloc(b->data, cap);
    if (!p)
        return -ENOMEM;
    b->data = p;
    b->cap = cap;
    return 0;
}

/* ---- small helpers ---- */

const char *http_status_text(int status)
{
    switch (status) {
    case 100:
        return "Continue";
    case 200:
        return "OK";
    case 201:
        return "Created";
    case 202:
        return "Accepted";
    case 204:
        return "No Content";
    case 301:
        return "Moved Permanently";
    case 302:
        return "Found";
    case 303:
        return "See Other";
    case 304:
        return "Not Modified";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 408:
        return "Request Timeout";
    case 409:
        return "Conflict";
    case 411:
        return "Length Required";
    case 413:
        return "Payload Too Large";
    case 415:
        return "Unsupported Media Type";
    case 422:
        return "Unprocessable Entity";
    case 429:
        return "Too Many Requests";
    case 431:
        return "Request Header Fields Too Large";
    case 500:
        return "Internal Server Error";
    case 501:
        return "Not Implemented";
    case 503:
        return "Service Unavailable";
    default:
        return "Unknown";
    }
}

static int hexval(int ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

long http_url_decode(const char *src, size_t len, char *dst, int plus)
{
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        int ch = (unsigned char)src[i];
        if (ch == '%') {
            if (i + 2 >= len)
                return -EINVAL;
            int hi = hexval((unsigned char)src[i + 1]), lo = hexval((unsigned char)src[i + 2]);
            if (hi < 0 || lo < 0)
                return -EINVAL;
            ch = hi * 16 + lo;
            i += 2;
        } else if (plus && ch == '+') {
            ch = ' ';
        }
        if (ch == 0) /* %00 would cut C strings short: refuse it */
            return -EINVAL;
        dst[o++] = (char)ch;
    }
    dst[o] = '\0';
    return (long)o;
}

static const char *http_date(void)
{
    static char buf[40];
    static time_t last;
    time_t now = time(NULL);
    if (now != last) {
        struct tm tm;
        gmtime_r(&now, &tm);
        strftime(buf, sizeof(buf), "%a, %d %b %Y %H:%M:%S GMT", &tm);
        last = now;
    }
    return buf;
}

/* ---- request accessors ---- */

const char *http_request_header(const struct http_request *req, const char *name)
{
    for (size_t i = 0; i < req->nheaders; i++)
        if (strcasecmp(req->headers[i].name, name) == 0)
            return req->headers[i].value;
    return NULL;
}

const char *http_request_param(const struct http_request *req, const char *name)
{
    for (size_t i = 0; i < req->nparams; i++)
        if (strcmp(req->params[i].name, name) == 0)
            return req->params[i].value;
    return NULL;
}

static void request_parse_query(struct http_request *req)
{
    struct http_conn *c = req->conn;
    const char *q = req->query;
    size_t qlen = strlen(q), n = 1;
    req->qparsed = 1;
    if (!qlen)
        return;
    for (size_t i = 0; i < qlen; i++)
        n += q[i] == '&';
    if (n > 64)
        n = 64; /* parameter floods: the rest are ignored */
    req->qparams = calloc(n, sizeof(*req->qparams));
    /* Reserve once so pointers into pbuf stay valid. */
    if (!req->qparams || http_buf_reserve(&c->pbuf, 2 * qlen + 2 * n + 2))
        return;
    size_t i = 0;
    const char *p = q;
    while (*p && i < n) {
        const char *amp = strchr(p, '&');
        size_t seg = amp ? (size_t)(amp - p) : strlen(p);
        const char *eq = memchr(p, '=', seg);
        size_t klen = eq ? (size_t)(eq - p) : seg;
        char *k = c->pbuf.data + c->pbuf.len;
        long kl = http_url_decode(p, klen, k, 1);
        if (kl >= 0) {
            c->pbuf.len += (size_t)kl + 1;
            char *v = c->pbuf.data + c->pbuf.len;
            long vl = eq ? http_url_decode(eq + 1, seg - klen - 1, v, 1) : (v[0] = '\0', 0);
            if (vl >= 0) {
                c->pbuf.len += (size_t)vl + 1;
                req->qparams[i].name = k;
                req->qparams[i].value = v;
                i++;
            }
        }
        if (!amp)
            break;
        p = amp + 1;
    }
    req->nqparams = i;
}

const char *http_request_query(struct http_request *req, const char *name)
{
    if (!req->qparsed)
        request_parse_query(req);
    for (size_t i = 0; i < req->nqparams; i++)
        if (strcmp(req->qparams[i].name, name) == 0)
            return req->qparams[i].value;
    return NULL;
}

int http_request_cookie(const struct http_request *req, const char *name, char *buf, size_t len)
{
    size_t nl = strlen(name);
    for (size_t h = 0; h < req->nheaders; h++) {
        if (strcasecmp(req->headers[h].name, "Cookie") != 0)
            continue;
        const char *p = req->headers[h].value;
        while (*p) {
            while (*p == ' ' || *p == ';')
                p++;
            const char *end = strchr(p, ';');
            size_t seg = end ? (size_t)(end - p) : strlen(p);
            if (seg > nl && strncmp(p, name, nl) == 0 && p[nl] == '=') {
                size_t vl = seg - nl - 1;
                const char *v = p + nl + 1;
                if (vl >= 2 && v[0] == '"' && v[vl - 1] == '"') {
                    v++;
                    vl -= 2;
                }
                if (vl + 1 > len)
                    return -ENAMETOOLONG;
                memcpy(buf, v, vl);
                buf[vl] = '\0';
                return 0;
            }
            if (!end)
                break;
            p = end + 1;
        }
    }
    return -ENOENT;
}

/* ---- response helpers ---- */

void http_response_status(struct http_request *req, int status)
{
    req->status = status;
}

int http_response_header(struct http_request *req, const char *name, const char *value)
{
    /* Response splitting: a CR or LF in a header value would start a new
     * header (or body) chosen by whoever controls the value. */
    if (strpbrk(name, "\r\n:") || strpbrk(value, "\r\n"))
        return -EINVAL;
    return http_buf_printf(&req->res_headers, "%s: %s\r\n", name, value);
}

void http_response_body_borrowed(struct http_request *req, int status, const char *content_type,
                                 const void *data, size_t len)
{
    req->status = status;
    req->content_type = content_type;
    req->res_body.len = 0;
    req->body_ext = data;
    req->body_ext_len = len;
}

int http_response_body(struct http_request *req, int status, const char *content_type,
                       const void *data, size_t len)
{
    req->body_ext = NULL;
    req->status = status;
    req->content_type = content_type;
    req->res_body.len = 0;
    return http_buf_append(&req->res_body, data, len);
}

int http_response_append(struct http_request *req, const void *data, size_t len)
{
    return http_buf_append(&req->res_body, data, len);
}

int http_response_printf(struct http_request *req, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = http_buf_vprintf(&req->res_body, fmt, ap);
    va_end(ap);
    return rc;
}

static int json_dump_cb(const char *buf, size_t size, void *data)
{
    return http_buf_append(data, buf, size) ? -1 : 0;
}

int http_response_json(struct http_request *req, int status, const json_t *json)
{
    req->status = status;
    req->content_type = "application/json";
    req->res_body.len = 0;
    req->body_ext = NULL;
    if (json_dump_callback(json, json_dump_cb, &req->res_body,
                           JSON_COMPACT | JSON_REAL_PRECISION(15)) != 0)
        return -ENOMEM;
    return http_buf_append(&req->res_body, "\n", 1);
}

int http_utf8_valid(const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        if (c == 0)
            return 0;
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t k;
        unsigned cp;
        if (c >= 0xc2 && c <= 0xdf) {
            k = 1;
            cp = c & 0x1f;
        } else if (c >= 0xe0 && c <= 0xef) {
            k = 2;
            cp = c & 0x0f;
        } else if (c >= 0xf0 && c <= 0xf4) {
            k = 3;
            cp = c & 0x07;
        } else {
            return 0;
        }
        if (i + k >= n)
            return 0;
        for (size_t j = 1; j <= k; j++) {
            if ((s[i + j] & 0xc0) != 0x80)
                return 0;
            cp = cp << 6 | (s[i + j] & 0x3f);
        }
        if ((k == 2 && cp < 0x800) || (k == 3 && (cp < 0x10000 || cp > 0x10ffff)) ||
            (cp >= 0xd800 && cp <= 0xdfff))
            return 0;
        i += k + 1;
    }
    return 1;
}

int http_response_error(struct http_request *req, int status, const char *code, const char *fmt,
                        ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    /* Messages quote what the client sent (a lab name from the path...):
     * bytes that are not UTF-8 would make the JSON unencodable. */
    if (!http_utf8_valid(msg, strlen(msg)))
        for (char *p = msg; *p; p++)
            if ((unsigned char)*p >= 0x80 || (unsigned char)*p < 0x20)
                *p = '?';
    json_t *j = json_pack("{s:{s:s,s:s}}", "error", "code", code, "message", msg);
    if (!j)
        return -ENOMEM;
    int rc = http_response_json(req, status, j);
    json_decref(j);
    return rc;
}

int http_response_redirect(struct http_request *req, int status, const char *location)
{
    int rc = http_response_header(req, "Location", location);
    if (rc)
        return rc;
    return http_response_body(req, status ? status : 303, "text/plain; charset=utf-8",
                              "redirecting\n", 12);
}

/* ---- clients: connections per address ---- */

static void addr_from_sockaddr(const struct sockaddr_storage *sa, struct http_addr *a)
{
    memset(a, 0, sizeof(*a));
    if (sa->ss_family == AF_INET) {
        a->family = AF_INET;
        memcpy(a->b, &((const struct sockaddr_in *)sa)->sin_addr, 4);
    } else if (sa->ss_family == AF_INET6) {
        const struct in6_addr *in6 = &((const struct sockaddr_in6 *)sa)->sin6_addr;
        if (IN6_IS_ADDR_V4MAPPED(in6)) {
            a->family = AF_INET;
            memcpy(a->b, &in6->s6_addr[12], 4);
        } else {
            a->family = AF_INET6;
            memcpy(a->b, in6, 16);
        }
    }
}

/* Parse len bytes of text: "1.2.3.4", "2001:db8::1" or "[2001:db8::1]".
 * Returns 0 or -EINVAL. */
static int addr_from_text(const char *text, size_t len, struct http_addr *a)
{
    char buf[INET6_ADDRSTRLEN + 2];
    if (len >= 2 && text[0] == '[' && text[len - 1] == ']') {
        text++;
        len -= 2;
    }
    if (len == 0 || len >= sizeof(buf))
        return -EINVAL;
    memcpy(buf, text, len);
    buf[len] = '\0';
    memset(a, 0, sizeof(*a));
    struct in6_addr in6;
    if (inet_pton(AF_INET, buf, a->b) == 1) {
        a->family = AF_INET;
    } else if (inet_pton(AF_INET6, buf, &in6) == 1) {
        struct sockaddr_storage ss = {.ss_family = AF_INET6};
        ((struct sockaddr_in6 *)&ss)->sin6_addr = in6;
        addr_from_sockaddr(&ss, a);
    } else {
        return -EINVAL;
    }
    return 0;
}

static int addr_equal(const struct http_addr *x, const struct http_addr *y)
{
    return x->family && x->family == y->family &&
           memcmp(x->b, y->b, x->family == AF_INET ? 4 : 16) == 0;
}

/* The text per-client limits count a for: IPv4 as is, IPv6 as its /64, the
 * block one subscriber usually holds (counting single IPv6 addresses would
 * let one host take every connection). "" for no address. */
static void addr_client_key(const struct http_addr *a, char *key, size_t klen)
{
    char text[INET6_ADDRSTRLEN];
    key[0] = '\0';
    if (a->family == AF_INET) {
        inet_ntop(AF_INET, a->b, key, (socklen_t)klen);
    } else if (a->family == AF_INET6) {
        unsigned char prefix[16] = {0};
        memcpy(prefix, a->b, 8);
        if (inet_ntop(AF_INET6, prefix, text, sizeof(text)))
            snprintf(key, klen, "%s/64", text);
    }
}

static size_t client_bucket(const char *key)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)key; *p; p++)
        h = (h ^ *p) * 16777619u;
    return h % HTTP_CLIENT_BUCKETS;
}

/* Count c against its client. Returns 0, -EMFILE when the client already
 * holds max connections (c is not counted then), or -ENOMEM. */
static int client_add(struct http_server *s, struct http_conn *c, size_t max)
{
    assert(c->client == NULL);
    struct http_client **head = &s->clients[client_bucket(c->client_key)], *e;
    for (e = *head; e; e = e->next)
        if (strcmp(e->key, c->client_key) == 0)
            break;
    if (e && e->conns >= max)
        return -EMFILE;
    if (!e) {
        e = calloc(1, sizeof(*e));
        if (!e)
            return -ENOMEM;
        snprintf(e->key, sizeof(e->key), "%s", c->client_key);
        e->next = *head;
        *head = e;
    }
    e->conns++;
    c->client = e;
    return 0;
}

/* Uncount c; the client's entry goes with its last connection. */
static void client_remove(struct http_server *s, struct http_conn *c)
{
    struct http_client *e = c->client;
    if (!e)
        return;
    c->client = NULL;
    assert(e->conns > 0);
    if (--e->conns > 0)
        return;
    struct http_client **pp = &s->clients[client_bucket(e->key)];
    while (*pp != e)
        pp = &(*pp)->next;
    *pp = e->next;
    free(e);
}

/* ---- connection lifecycle ---- */

static void server_maybe_done(struct http_server *s);

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
    free(c->pending);
    free(c);
}

static void conn_handle_closed(uv_handle_t *h)
{
    struct http_conn *c = h->data;
    c->handles--;
    conn_free_if_done(c);
}

static void conn_close(struct http_conn *c)
{
    if (c->closing)
        return;
    c->closing = 1;
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
static void conn_timer_arm(struct http_conn *c, double seconds);

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
static void conn_linger(struct http_conn *c)
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

static void conn_after_writes(struct http_conn *c);

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
    if (c->write_pending == 0)
        conn_after_writes(c);
}

/* Hand hw (owning hw->buf) to uv_write, or, when failed is non-zero or
 * uv_write refuses, free it and close the connection. Either way hw is no
 * longer the caller's. */
static void conn_write_queue(struct http_conn *c, struct http_write *hw, int failed)
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

static void conn_flush(struct http_conn *c)
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

static void conn_timer_arm(struct http_conn *c, double seconds)
{
    if (c->closing)
        return;
    uv_timer_start(&c->timer, conn_timer_cb, (uint64_t)(seconds * 1000.0), 0);
}

static void conn_resume_cb(uv_timer_t *t);
static int conn_reject(struct http_conn *c, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void conn_refuse(struct http_conn *c);

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

/* ---- parsing ---- */

static int conn_reject(struct http_conn *c, int status, const char *code, const char *fmt, ...)
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
 * never beside Content-Length. Returns 0, or conn_reject's -1. */
static int request_check_strict(struct http_conn *c, http_parser *p)
{
    int te = 0, cl = 0;
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
        }
    }
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

static int on_headers_complete(http_parser *p)
{
    struct http_conn *c = p->data;
    struct http_server *s = c->srv;
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
    r->user = NULL;
    r->on_abort = NULL;
    r->abort_data = NULL;
    r->qparsed = 0;
    r->nqparams = 0;

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

    /* Admission: nothing of the body has been read yet (what arrived with
     * the head waits unparsed in the read buffer). */
    c->body_max = HTTP_BODY_DEFAULT_MAX;
    if (s->cb.admit) {
        int refused = s->cb.admit(s->app, r, &c->body_max);
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
static void conn_respond(struct http_conn *c)
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
static void conn_refuse(struct http_conn *c)
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
static void conn_feed(struct http_conn *c, const char *data, size_t len)
{
    int from_pending = c->pending && data == c->pending + c->pending_off;
    int handled = 0;
    /* Pipelined requests from a client that does not read its answers stop
     * being handled once HTTP_WRITE_HIGH of answers wait (memory, and a
     * loop working for one client); and after HTTP_PIPELINE_BURST of them
     * the rest waits in c->pending for the next turn of the loop, so that
     * other clients are served in between. */
    while (len > 0 && !c->closing && !c->lingering && !c->deferred && !c->close_after_write &&
           c->out.len + c->write_pending <= HTTP_WRITE_HIGH && handled < HTTP_PIPELINE_BURST) {
        size_t n = http_parser_execute(&c->parser, &parser_settings, data, len);
        enum http_errno e = HTTP_PARSER_ERRNO(&c->parser);
        if (n > len)
            n = len;
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
static void conn_after_writes(struct http_conn *c)
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
        c->resume = 1;
        uv_timer_start(&c->timer, conn_resume_cb, 0, 0);
        return;
    }
    if (s->stopping && !c->in_message) {
        conn_close(c);
        return;
    }
    conn_read_start(c);
    /* Only an idle connection gets a new deadline here: a request in
     * progress keeps the one from its first byte (slowloris). */
    if (!c->in_message)
        conn_timer_arm(c, s->lim.idle_timeout_s);
}

static void conn_resume_cb(uv_timer_t *t)
{
    struct http_conn *c = t->data;
    c->resume = 0;
    if (c->closing || c->deferred)
        return;
    if (c->pending)
        conn_feed(c, c->pending + c->pending_off, c->pending_len - c->pending_off);
    conn_flush(c);
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
    http_read_buf_busy = 1;
    conn_feed(c, buf->base, (size_t)n);
    http_read_buf_busy = 0;
    conn_flush(c);
}

static void conn_read_start(struct http_conn *c)
{
    if (c->reading || c->closing || c->lingering)
        return;
    if (uv_read_start((uv_stream_t *)&c->tcp, conn_alloc, conn_read) == 0)
        c->reading = 1;
}

static void conn_read_stop(struct http_conn *c)
{
    if (!c->reading)
        return;
    uv_read_stop((uv_stream_t *)&c->tcp);
    c->reading = 0;
}

void http_request_finish(struct http_request *req)
{
    struct http_conn *c = req->conn;
    if (!c->deferred)
        return;
    c->deferred = 0;
    conn_respond(c);
    conn_flush(c);
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
    if (uv_accept(ls, (uv_stream_t *)&c->tcp) != 0) {
        conn_close(c);
        return;
    }
    if (s->nconns > s->lim.max_conns) {
        s->refused_global++;
        conn_close(c); /* connection floods: shed at once */
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
     * idle sockets from one host did): it gets its share, no more. A
     * trusted proxy carries every client: it is held only to max_conns. */
    int rc = c->via_proxy ? 0 : client_add(s, c, s->lim.max_conns_per_client);
    if (rc) {
        if (rc == -EMFILE)
            s->refused_client++;
        conn_close(c);
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    uv_os_fd_t fd;
    if (uv_fileno((uv_handle_t *)&c->tcp, &fd) == 0) {
        int lowat = HTTP_NOTSENT_LOWAT;
        setsockopt(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &lowat, sizeof(lowat));
    }
    http_parser_init(&c->parser, HTTP_REQUEST);
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
    else
        s->grace_closed = 1;
    if (s->listener_closed && s->grace_closed) {
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
    uv_close((uv_handle_t *)&s->grace, server_free_cb);
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
    int rc = uv_tcp_open(&c->tcp, fd);
    if (rc) {
        conn_close(c);
        return rc;
    }
    http_parser_init(&c->parser, HTTP_REQUEST);
    c->parser.data = c;
    conn_read_start(c);
    conn_timer_arm(c, srv->lim.header_timeout_s);
    return 0;
}
