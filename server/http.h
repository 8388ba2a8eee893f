/*
 * http.h - HTTP/1.1 server on libuv + http-parser: keep-alive, pipelining,
 * caps on header and body sizes, admission from the headers before any body
 * byte is read, connection caps per client address, slow-client timeouts,
 * write backpressure, graceful shutdown. One request per connection is
 * handled at a time; bytes of pipelined requests that arrive meanwhile wait,
 * unparsed, in order.
 *
 * A handler gets a struct http_request, fills in the response with the
 * http_response_* helpers and returns HTTP_DONE; or it returns HTTP_DEFERRED,
 * keeps the request (long polls) and later calls http_request_finish() once.
 * Request memory belongs to the connection and is valid until the response
 * is finished (or until the abort callback ran, for a deferred request).
 */
#ifndef CUGRADE_HTTP_H
#define CUGRADE_HTTP_H

#include <http_parser.h> /* enum http_method: HTTP_GET, HTTP_POST, ... */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#define HTTP_DONE 0
#define HTTP_DEFERRED 1

#define HTTP_HEADER_MAX (16 * 1024) /* request line + headers; 431 beyond */
#define HTTP_HEADERS_COUNT_MAX 100  /* 431 beyond */
#define HTTP_BODY_DEFAULT_MAX (64 * 1024)
#define HTTP_TRUSTED_PROXIES_MAX 4
#define HTTP_CLIENT_KEY_MAX 52 /* "2001:db8:1:2::/64", "1.2.3.4": INET6_ADDRSTRLEN + "/64" */

struct http_kv {
    const char *name;
    const char *value;
};

/* Growable byte buffer (used for response headers and bodies). */
struct http_buf {
    char *data;
    size_t len, cap;
};

struct http_conn;
struct http_server;
struct http_request;

typedef void (*http_abort_cb)(struct http_request *req, void *data);

struct http_request {
    struct http_conn *conn;
    /* request */
    int method;              /* enum http_method (http_parser.h): HTTP_GET... */
    const char *method_name; /* "GET" */
    const char *target;      /* raw request target, "/api/x?y=1" */
    const char *path;        /* percent-decoded path, NUL-free, "/api/x" */
    const char *query;       /* raw query string after '?', "" if none */
    struct http_kv *headers; /* names as sent; use http_request_header() */
    size_t nheaders;
    struct http_kv params[8]; /* route {params}, set by the router */
    size_t nparams;
    const char *body; /* NUL-terminated for convenience; may hold NULs */
    size_t body_len;
    const char *route;     /* route name for metrics, set by the router */
    const char *body_note; /* set by body_limit: says the limit in a 413 */
    uint64_t start_ns;     /* uv_hrtime() when the request line began */
    const char *remote;    /* peer address, "1.2.3.4" */
    const char *client;    /* what per-client limits count: remote, or its /64 for IPv6;
                            * via a trusted proxy, X-Forwarded-For's last address */
    void *user;            /* for the application (its auth result): malloc'd by it,
                            * freed with free() by the server when the request ends */
    void *app;             /* the application passed to http_server_start */
    /* response (filled by the http_response_* helpers) */
    int status;
    struct http_buf res_headers; /* extra header lines, each "Name: value\r\n" */
    struct http_buf res_body;
    const char *body_ext; /* a borrowed body (http_response_body_borrowed) */
    size_t body_ext_len;
    const char *content_type;
    int close_after; /* send "Connection: close" and close */
    /* deferred requests */
    http_abort_cb on_abort;
    void *abort_data;
    /* private */
    struct http_kv *qparams;
    size_t nqparams;
    int qparsed;
};

struct http_callbacks {
    /* Admission, once the request line and headers are in and before any
     * body byte is read or buffered: decide whether the request may go on
     * (authenticate it from its headers) and how big its body may be.
     * Returns 0 with *body_max set; or an HTTP status (401, 403, 413,
     * 429...) after filling req's response with the http_response_*
     * helpers: that answer is sent at once, the handler never runs, and a
     * request that announced a body is closed without reading it (no
     * "100 Continue" goes out). Or HTTP_DEFERRED: the application looks
     * something up off the loop and calls http_request_admit_resume(req)
     * once, which calls admit again (that call must not defer again);
     * meanwhile nothing more of the connection is read or parsed, and
     * req->on_abort (set by admit) runs if the client goes away. NULL:
     * every request may send HTTP_BODY_DEFAULT_MAX. */
    int (*admit)(void *app, struct http_request *req, size_t *body_max);
    /* Handle a complete request: HTTP_DONE or HTTP_DEFERRED. */
    int (*handle)(void *app, struct http_request *req);
    /* Called once per response just before it is written (metrics, logs). */
    void (*done)(void *app, struct http_request *req);
};

/* Zero fields take the defaults in brackets. */
struct http_limits {
    double header_timeout_s;    /* connect (or first byte of a later request) to the end
                                 * of the head; the body gets 3x. 408 or close after [10] */
    double idle_timeout_s;      /* keep-alive wait for the next request [30] */
    double write_timeout_s;     /* a client that does not read its response [30] */
    size_t max_conns;           /* new connections beyond are closed at once [10000] */
    size_t max_conns_per_client; /* the same per client address (an IPv6 /64). At either
                                  * cap a new connection replaces an idle one (of its
                                  * address; of the address holding the most, when that
                                  * holds more than its own), else it is closed at once.
                                  * SIZE_MAX: no cap [64] */
    size_t max_buffered;         /* bytes of unsent answers, over all connections; beyond,
                                  * the connection holding them longest without progress
                                  * is closed. Request bodies being read may hold 4 times
                                  * this; a body that does not fit is refused (503)
                                  * before it is read [64 MiB] */
    /* Reverse proxies ("127.0.0.1", "::1"; unused slots NULL; the strings
     * must outlive the server): their connections are not held to
     * max_conns_per_client, and their requests' client is the last address
     * of X-Forwarded-For. [none] */
    const char *trusted_proxies[HTTP_TRUSTED_PROXIES_MAX];
};

/* Start listening on host:port ("127.0.0.1", 8080; port 0 picks one).
 * Returns 0 and a server in *out, or -errno (-EINVAL: a bad address, a
 * trusted proxy's included). The server lives until
 * http_server_shutdown's callback has run. */
int http_server_start(uv_loop_t *loop, const char *host, int port, const struct http_limits *limits,
                      const struct http_callbacks *cb, void *app, struct http_server **out);

/* The bound port (useful after port 0). */
int http_server_port(struct http_server *srv);

/* Number of open connections. */
size_t http_server_conns(struct http_server *srv);

/* Connections refused so far: over the global cap, over a client's cap. */
void http_server_refused(struct http_server *srv, uint64_t *over_global, uint64_t *over_client);

/* Connections closed to make room so far: idle ones at a client's cap, idle
 * ones at the server's cap, stalled ones over the byte budget; and the
 * bytes buffered now. */
void http_server_shed(struct http_server *srv, uint64_t *idle_client, uint64_t *idle_global,
                      uint64_t *budget, size_t *buffered);

/* Times a connection's pipelined requests waited for the next turn of the
 * loop because every connection together had HTTP_TURN_REQUESTS handled in
 * this one (http_conn.h). */
uint64_t http_server_turn_waits(const struct http_server *srv);

/* Whether req announced a body (a Content-Length above 0, or chunked).
 * Meaningful from admission on. */
int http_request_has_body(const struct http_request *req);

/* Graceful stop: stop accepting, close idle connections, let in-flight
 * requests finish (each then closes), force-close what is left after
 * grace_s seconds, free the server and call done(arg) once. */
void http_server_shutdown(struct http_server *srv, double grace_s, void (*done)(void *arg),
                          void *arg);

/* 1 once shutdown began (deferred handlers should answer now). */
int http_server_stopping(struct http_server *srv);

/* Take req's body over: returns it (body_len bytes, NUL-terminated; the
 * caller frees it); req->body is "" from then on. For handlers that hand a large body to another thread without a copy.
 * Once per request, from its handler. */
char *http_request_body_take(struct http_request *req);

/* Go on with a request whose admission answered HTTP_DEFERRED: admit runs
 * again, then reading and parsing. Exactly once, on the loop thread, not
 * after req->on_abort ran. */
void http_request_admit_resume(struct http_request *req);

/* Finish a deferred request: write its response. Exactly once. */
void http_request_finish(struct http_request *req);

/* A deferred request held by the work that will answer it -- a reader or
 * writer job (server/reader.h, writer.h), or a parse on libuv's pool
 * followed by one (every deferred request but a parked claim, whose hook
 * also takes it off queue.c's wait list) -- which
 * may outlive the client: the work embeds a struct http_hold, starts it
 * when its handler defers, and ends it when done. Ending gives the request
 * back to be answered, or NULL when the client hung up meanwhile (then the
 * request's memory is gone with its connection: the work only cleans up).
 * Loop thread only. */
struct http_hold {
    struct http_request *req; /* NULL once the client went away, or once ended */
};

/* Hold req, which the caller's handler defers (returns HTTP_DEFERRED), in
 * h: req's abort hook (unset before) is h's until http_hold_end. */
void http_hold_start(struct http_hold *h, struct http_request *req);

/* End the hold: the request, its abort hook unset, for the caller to
 * answer and finish exactly once (or to hold again); or NULL when its
 * client went away. Once per http_hold_start. */
struct http_request *http_hold_end(struct http_hold *h);

/* Header value by case-insensitive name; NULL if absent. */
const char *http_request_header(const struct http_request *req, const char *name);

/* Decoded query parameter (first occurrence); NULL if absent. Pointers
 * stay valid until the response is finished. */
const char *http_request_query(struct http_request *req, const char *name);
/* 1 when the raw query names the parameter name (spelled as is, before any
 * %-decoding), whether or not its value decoded: a value that did not (a
 * %00, a bad %-escape) is dropped by http_request_query, and a caller that
 * must not fall back to a default for it tells the two apart here. */
int http_request_query_named(const struct http_request *req, const char *name);

/* Route parameter set by the router; NULL if absent. */
const char *http_request_param(const struct http_request *req, const char *name);

/* Value of cookie name from the Cookie headers, copied to buf (NUL-terminated).
 * Returns 0, -ENOENT when absent, -EEXIST when the name comes more than once
 * (one of them may have been planted: none is taken), -ENAMETOOLONG when it
 * does not fit. */
int http_request_cookie(const struct http_request *req, const char *name, char *buf, size_t len);

/* Response helpers. Each returns 0 or -ENOMEM (then the request gets a 500). */
void http_response_status(struct http_request *req, int status);
int http_response_header(struct http_request *req, const char *name, const char *value);
/* Body bytes (copied) with a content type (a string literal or static). */
int http_response_body(struct http_request *req, int status, const char *content_type,
                       const void *data, size_t len);
/* The body is len bytes at data, not copied: data must stay unchanged until
 * the handler returns HTTP_DONE (the bytes are written or copied before
 * anything else runs). For cached responses; not for deferred requests. */
void http_response_body_borrowed(struct http_request *req, int status, const char *content_type,
                                 const void *data, size_t len);
/* Append to the body (content type set separately or by http_response_body). */
int http_response_append(struct http_request *req, const void *data, size_t len);
/* printf-style append to the body. */
int http_response_printf(struct http_request *req, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Serialize json (borrowed, not stolen) as the body with status. */
int http_response_json(struct http_request *req, int status, const json_t *json);
/* {"error":{"code","message"}} with status; message is printf-style. */
int http_response_error(struct http_request *req, int status, const char *code, const char *fmt,
                        ...) __attribute__((format(printf, 4, 5)));
/* 303 (or status) redirect to location. */
int http_response_redirect(struct http_request *req, int status, const char *location);

/* Buffer helpers (also used by other modules). */
int http_buf_append(struct http_buf *b, const void *data, size_t len);
int http_buf_printf(struct http_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void http_buf_free(struct http_buf *b);

/* 1 if s (len bytes) is valid UTF-8 (no overlongs, no surrogates) without
 * NUL bytes; 0 otherwise. */
int http_utf8_valid(const char *s, size_t len);

/* Reason phrase for a status code ("Not Found"). */
const char *http_status_text(int status);

/* Percent-decode src (len bytes) into dst (at least len+1 bytes); plus=1
 * turns '+' into ' ' (query strings). Returns the decoded length, or -EINVAL
 * on a bad escape or a decoded NUL byte. */
long http_url_decode(const char *src, size_t len, char *dst, int plus);

#endif
