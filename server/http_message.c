/*
 * http_message.c - buffers, status texts, URL decoding, request accessors and
 * response helpers: the parts of a message that need no connection. See http.h.
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
void http_buf_reset(struct http_buf *b)
{
    if (b->cap > HTTP_KEEP_BUF)
        http_buf_free(b);
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

int http_buf_reserve(struct http_buf *b, size_t extra)
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

const char *http_date(void)
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

void request_parse_query(struct http_request *req)
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

int http_request_query_named(const struct http_request *req, const char *name)
{
    size_t nl = strlen(name);
    for (const char *p = req->query; p && *p;) {
        size_t seg = strcspn(p, "&");
        size_t klen = strcspn(p, "=&");
        if (klen == nl && strncmp(p, name, nl) == 0)
            return 1;
        p += seg + (p[seg] == '&');
    }
    return 0;
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
    int found = 0, rc = -ENOENT;
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
                if (found++) /* which one is ours is anybody's guess */
                    return -EEXIST;
                if (vl + 1 > len) {
                    rc = -ENAMETOOLONG;
                } else {
                    memcpy(buf, v, vl);
                    buf[vl] = '\0';
                    rc = 0;
                }
            }
            if (!end)
                break;
            p = end + 1;
        }
    }
    return rc;
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
