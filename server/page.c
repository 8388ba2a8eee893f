/*
 * page.c - what every page shares: the embedded static files, struct page,
 * the layout, formatting, status words, forms and CSRF checks, and the
 * page runner the router calls for every page route. See page.h.
 */
#include "server/page.h"
#include "server/api.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "status.h"
#include "server/auth.h"
#include "server/html.h"
#include "server/multipart.h"
#include "server/reader.h"
#include "server/regrade.h"
#include "server/bundle.h"

/* Static files, embedded in the binary.
 * The stylesheet and script are linked in with .incbin, so the server
 * needs no files at run time and a deployment can never serve a stylesheet
 * from another version. (The Makefile makes page.o depend on
 * server/static/, since make cannot see an .incbin.) */
#define PAGES_EMBED(sym, file)                                                                     \
    __asm__(".section .rodata\n"                                                                   \
            ".balign 16\n"                                                                         \
            ".hidden " #sym "\n.globl " #sym "\n" #sym ":\n"                                       \
            ".incbin \"" file "\"\n"                                                               \
            ".hidden " #sym "_end\n.globl " #sym "_end\n" #sym "_end:\n"                           \
            ".byte 0\n"                                                                            \
            ".previous\n")

PAGES_EMBED(pages__style_css, "server/static/style.css");
PAGES_EMBED(pages__app_js, "server/static/app.js");
PAGES_EMBED(pages__favicon_svg, "server/static/favicon.svg");

extern const char pages__style_css[], pages__style_css_end[];
extern const char pages__app_js[], pages__app_js_end[];
extern const char pages__favicon_svg[], pages__favicon_svg_end[];

struct static_file {
    const char *path;
    const char *type;
    const char *data;
    const char *end;
    char etag[20];              /* "\"" + 16 hex + "\"" */
};

static struct static_file static_files[] = {
    {"/static/style.css", "text/css; charset=utf-8", pages__style_css, pages__style_css_end, ""},
    {"/static/app.js", "text/javascript; charset=utf-8", pages__app_js, pages__app_js_end, ""},
    /* The icon: linked from every page; /favicon.ico for browsers that ask
     * anyway (an SVG there too: no 404 on every page). */
    {"/static/favicon.svg", "image/svg+xml", pages__favicon_svg, pages__favicon_svg_end, ""},
    {"/favicon.ico", "image/svg+xml", pages__favicon_svg, pages__favicon_svg_end, ""},
};

/* The version tag of a static file (a hash of its bytes), used both as the
 * ETag and as ?v= in the page's links so browsers may cache it for a year. */
static const char *static_etag(struct static_file *f)
{
    if (f->etag[0] == '\0') {
        char hex[65];
        auth_sha256_hex(f->data, (size_t)(f->end - f->data), hex);
        snprintf(f->etag, sizeof(f->etag), "\"%.16s\"", hex);
    }
    return f->etag;
}

/* The link to a static file with its version: /static/app.js?v=0123abcd... */
static void static_link(struct html_buf *b, int idx)
{
    char v[17];

    memcpy(v, static_etag(&static_files[idx]) + 1, 16); /* the hex between the quotes */
    v[16] = '\0';
    html_fmt(b, "%s?v=%s", static_files[idx].path, v);
}

int page_is_staff(const struct page *p)
{
    return p->authed && auth_role_staff(p->user.role);
}

int page_is_admin(const struct page *p)
{
    return p->authed && p->user.role == AUTH_ADMIN;
}

/* Security headers for every answer of the web interface. */
void page_security_headers(struct http_request *req)
{
    /* No inline script or style at all: an injected <script> or on*=
     * attribute that slipped past escaping still does not run. */
    http_response_header(req, "Content-Security-Policy",
                         "default-src 'self'; script-src 'self'; style-src 'self'; "
                         "img-src 'self' data:; connect-src 'self'; object-src 'none'; "
                         "base-uri 'none'; form-action 'self'; frame-ancestors 'none'");
    /* A source file served as text must never be sniffed into HTML. */
    http_response_header(req, "X-Content-Type-Options", "nosniff");
    /* Clickjacking, for browsers that ignore frame-ancestors. */
    http_response_header(req, "X-Frame-Options", "DENY");
    /* Submission ids in URLs are nobody else's business. */
    http_response_header(req, "Referrer-Policy", "no-referrer");
}

void page_set_cookie(struct http_request *req, const char *name, const char *value, long max_age)
{
    char line[256];
    int https = auth_request_https(req); /* then cookies get the Secure flag */

    /* __Host- behind HTTPS; clearing it does not end the session (the
     * sign-out does, on the writer: signin_page.c). */
    if (strcmp(name, AUTH_SESSION_COOKIE) == 0)
        name = auth_session_cookie_name(req);
    /* HttpOnly: script (an XSS) cannot read the session. SameSite=Strict:
     * no other site can make the browser send it (CSRF, cross-site leaks). */
    snprintf(line, sizeof(line), "%s=%s; Path=/; Max-Age=%ld; HttpOnly; SameSite=Strict%s", name,
             value, max_age, https ? "; Secure" : "");
    http_response_header(req, "Set-Cookie", line);
}

void page_free(struct page *p)
{
    html_buf_free(&p->b);
    for (size_t i = 0; i < p->nfields; i++)
        free(p->fields[i].name);
    free(p->form_mem);
    free(p->part_mem);
}

/* Send the rendered buffer as the response with status. */
int page_send(struct page *p, int status)
{
    size_t len = 0;
    char *html = html_buf_take(&p->b, &len);

    page_security_headers(p->req);
    /* Pages show grades, tokens and sources: never store them in caches. */
    http_response_header(p->req, "Cache-Control", "no-store");
    if (html == NULL) {
        http_response_body(p->req, 500, "text/plain; charset=utf-8",
                           "The server ran out of memory; try again.\n", 41);
    } else {
        http_response_body(p->req, status, "text/html; charset=utf-8", html, len);
        free(html);
    }
    return HTTP_DONE;
}

int page_redirect(struct page *p, const char *location)
{
    page_security_headers(p->req);
    http_response_header(p->req, "Cache-Control", "no-store");
    http_response_redirect(p->req, 303, location);
    return HTTP_DONE;
}

static void page_fmt_time(char *buf, size_t len, double t)
{
    time_t s = (time_t)t;
    struct tm tm;

    if (t <= 0 || !gmtime_r(&s, &tm)) {
        snprintf(buf, len, "-");
        return;
    }
    strftime(buf, len, "%Y-%m-%d %H:%M UTC", &tm);
}

/* "in 3 days", "2 hours ago": what a person reads first. */
static void page_fmt_relative(char *buf, size_t len, double t, double now)
{
    double d = t - now, a = fabs(d);
    const char *unit;
    long n;

    if (a < 60) {
        snprintf(buf, len, d >= 0 ? "in under a minute" : "just now");
        return;
    }
    if (a < 3600) {
        n = (long)(a / 60); unit = "minute";
    } else if (a < 86400 * 2) {
        n = (long)(a / 3600); unit = "hour";
    } else {
        n = (long)(a / 86400); unit = "day";
    }
    snprintf(buf, len, d >= 0 ? "in %ld %s%s" : "%ld %s%s ago", n, unit, n == 1 ? "" : "s");
}

/* ISO string from the API to Unix seconds (0 when absent or bad). */
double page_iso_to_time(const char *s)
{
    double t = 0;

    if (s == NULL || *s == '\0' || rubric_time_parse(s, &t) != 0)
        return 0;
    return t;
}

void put_when(struct html_buf *b, double t)
{
    char abs_[40], rel[40];

    if (t <= 0) {
        html_raw(b, "<span class=\"muted\">-</span>");
        return;
    }
    page_fmt_time(abs_, sizeof(abs_), t);
    page_fmt_relative(rel, sizeof(rel), t, db_now());
    time_t s = (time_t)t;
    struct tm tm;
    char iso[48];
    if (!gmtime_r(&s, &tm) || !strftime(iso, sizeof(iso), "%Y-%m-%dT%H:%M:%SZ", &tm))
        snprintf(iso, sizeof(iso), "%s", abs_);
    /* UTC here; app.js writes the reader's own zone from datetime (the
     * title keeps UTC, and a page without JavaScript shows UTC). */
    html_fmt(b, "<time datetime=\"%s\" title=\"%s\">%s</time> <span class=\"muted small\">(%s)</span>",
             iso, abs_, abs_, rel);
}

void put_when_iso(struct html_buf *b, const char *iso)
{
    put_when(b, page_iso_to_time(iso));
}

/* A score: "72.5 / 100" with at most 2 decimals. */
void put_score(struct html_buf *b, json_t *score, json_t *max)
{
    char s[32], m[32];

    if (!json_is_number(score)) {
        html_raw(b, "<span class=\"muted\">-</span>");
        return;
    }
    snprintf(s, sizeof(s), "%.2f", json_number_value(score));
    /* 72.50 -> 72.5, 100.00 -> 100 */
    for (char *e = s + strlen(s) - 1; strchr(s, '.') && (*e == '0' || *e == '.'); e--) {
        int dot = *e == '.';
        *e = '\0';
        if (dot)
            break;
    }
    if (json_is_number(max)) {
        snprintf(m, sizeof(m), "%g", json_number_value(max));
        html_fmt(b, "%s / %s", s, m);
    } else {
        html_fmt(b, "%s", s);
    }
}

const char *page_jstr(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

double page_jnum(const json_t *o, const char *key, double dflt)
{
    json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : dflt;
}

static const char *page_status_class(const char *st)
{
    int s = status_parse(st);
    if (s == STATUS_GRADED)
        return "good";
    if (s >= STATUS_QUEUED && s <= STATUS_TIMING)
        return "busy";
    if (s == STATUS_SYSTEM_ERROR)
        return "warn";
    if (s == STATUS_SUPERSEDED)
        return ""; /* nobody's failure */
    return "bad";
}

const char *page_status_words(const char *st)
{
    static const char *const words[STATUS_COUNT] = {
        [STATUS_QUEUED] = "waiting in the queue",
        [STATUS_COMPILING] = "compiling",
        [STATUS_CHECKING] = "checking correctness",
        [STATUS_RUNNING] = "running the sanitizers",
        [STATUS_TIMING] = "timing",
        [STATUS_GRADED] = "graded",
        [STATUS_COMPILE_ERROR] = "did not compile",
        [STATUS_REJECTED] = "rejected",
        [STATUS_RUNTIME_ERROR] = "crashed while running",
        [STATUS_TIMEOUT] = "ran out of time",
        [STATUS_SYSTEM_ERROR] = "grading failed (our fault)",
        [STATUS_SUPERSEDED] = "replaced by a newer submission",
    };
    int s = status_parse(st);
    return s >= 0 ? words[s] : st;
}

void put_status(struct html_buf *b, const char *st)
{
    html_fmt(b, "<span class=\"badge %R\" data-status=\"%s\">%s</span>", page_status_class(st), st,
             page_status_words(st));
}

void page_begin(struct page *p, const char *title)
{
    struct html_buf *b = &p->b;

    html_raw(b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
                "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    html_fmt(b, "<title>%s - cugrade</title>\n<link rel=\"stylesheet\" href=\"", title);
    static_link(b, 0);
    html_raw(b, "\">\n<script src=\"");
    static_link(b, 1);
    html_raw(b, "\" defer></script>\n<link rel=\"icon\" type=\"image/svg+xml\" href=\"");
    static_link(b, 2);
    html_raw(b, "\">\n<meta name=\"color-scheme\" content=\"light dark\">\n");
    if (p->refresh > 0)
        html_fmt(b, "<noscript><meta http-equiv=\"refresh\" content=\"%d\"></noscript>\n",
                 p->refresh);
    html_raw(b, "</head>\n<body>\n<header class=\"top\"><a class=\"brand\" href=\"/\">cugrade</a>\n");
    if (p->authed) {
        html_raw(b, "<nav aria-label=\"main\"><a href=\"/labs\">Labs</a>");
        if (page_is_staff(p)) {
            /* The open requests' count is read where the page is built
             * off the loop (a reader's view: no reader of its own) or where
             * the loop reads anyway (a database in memory). A page the loop
             * draws itself (a refusal, a form's error) shows the link
             * without the count: a read there stalls every client. */
            int open = !p->app->reader || reader_sync(p->app->reader) ? regrade_open_count(p->app)
                                                                       : 0;
            html_raw(b, "<a href=\"/submissions\">Submissions</a><a href=\"/regrades\">Regrades");
            if (open > 0)
                html_fmt(b, " <span class=\"count\" title=\"open requests\">%d</span>", open);
            html_raw(b, "</a><a href=\"/audit\">Audit log</a>");
            if (!page_is_admin(p)) /* TAs open these two of the admin pages */
                html_raw(b, "<a href=\"/admin/queue\">Queue</a><a href=\"/admin/late-days\">Late days</a>");
        } else
            html_raw(b, "<a href=\"/submissions\">My submissions</a><a href=\"/me/late-days\">Late days</a>");
        if (page_is_admin(p))
            html_raw(b, "<a href=\"/admin/users\">Users</a><a href=\"/admin/deadlines\">Deadlines</a>"
                        "<a href=\"/admin/queue\">Queue</a><a href=\"/admin/late-days\">Late days</a>"
                        "<a href=\"/admin/exports\">Exports</a>");
        html_raw(b, "</nav>\n<div class=\"who\">");
        html_fmt(b, "<span>%s</span> <span class=\"role\">%s</span>",
                 p->user.display_name[0] ? p->user.display_name : p->user.name,
                 auth_role_name(p->user.role));
        if (p->user.via_session)
            html_fmt(b, "<form method=\"post\" action=\"/logout\"><input type=\"hidden\" name=\"csrf\" "
                        "value=\"%s\"><button type=\"submit\">Sign out</button></form>",
                     p->user.csrf);
        html_raw(b, "</div>");
    }
    html_raw(b, "</header>\n<main>\n");
}

int page_end(struct page *p, int status)
{
    html_raw(&p->b, "</main>\n<footer>cugrade &middot; times are UTC &middot; "
                    "<a href=\"/help\">help</a></footer>\n</body></html>\n");
    return page_send(p, status);
}

void page_csrf_field(struct page *p)
{
    html_fmt(&p->b, "<input type=\"hidden\" name=\"csrf\" value=\"%s\">", p->user.csrf);
}

/* An error page with a sentence that says what happened and what to do. */
int page_error(struct page *p, int status, const char *what, const char *todo)
{
    html_buf_free(&p->b);
    p->refresh = 0;
    page_begin(p, what);
    html_fmt(&p->b, "<h1>%s</h1>\n<div class=\"notice bad\"><p>%s</p></div>\n", what, todo);
    html_raw(&p->b, "<p><a href=\"/labs\">Back to the labs</a></p>\n");
    return page_end(p, status);
}

int page_api_error(struct page *p, const struct api_error *e)
{
    const char *what = e->status == 404   ? "Not found"
                       : e->status == 403 ? "Not allowed"
                       : e->status == 429 ? "Slow down"
                       : e->status >= 500 ? "Something broke on our side"
                                          : "That did not work";
    return page_error(p, e->status ? e->status : 500, what, e->message);
}

/* Parse an application/x-www-form-urlencoded body into p->fields. Returns 0
 * or -EINVAL (a bad escape) / -ENOMEM. */
static int form_parse_urlencoded(struct page *p, const char *body, size_t len)
{
    const char *s = body, *end = body + len;
    char *mem;
    size_t used = 0;

    mem = malloc(len + FORM_FIELDS_MAX + 1);
    if (mem == NULL)
        return -ENOMEM;
    p->form_mem = mem;
    while (s < end && p->nfields < FORM_FIELDS_MAX) {
        const char *amp = memchr(s, '&', (size_t)(end - s));
        const char *stop = amp ? amp : end;
        const char *eq = memchr(s, '=', (size_t)(stop - s));
        const char *kend = eq ? eq : stop;
        char name[64];
        long n;

        if (kend > s) {
            if ((size_t)(kend - s) >= sizeof(name))
                goto next;
            n = http_url_decode(s, (size_t)(kend - s), name, 1);
            if (n < 0)
                return -EINVAL;
            n = eq ? http_url_decode(eq + 1, (size_t)(stop - eq - 1), mem + used, 1) : 0;
            if (n < 0)
                return -EINVAL;
            mem[used + (size_t)n] = '\0';
            p->fields[p->nfields].name = strdup(name);
            if (p->fields[p->nfields].name == NULL)
                return -ENOMEM;
            p->fields[p->nfields].value = mem + used;
            p->fields[p->nfields].len = (size_t)n;
            p->nfields++;
            used += (size_t)n + 1;
        }
    next:
        s = stop + 1;
    }
    return 0;
}

/* Parse the POST body (urlencoded or multipart) into fields. Text parts of
 * a multipart body become fields too (copied, NUL-terminated); file parts
 * stay in p->parts. Returns 0 or -errno. */
int page_form_parse(struct page *p)
{
    const char *ct = http_request_header(p->req, "Content-Type");
    char boundary[128], err[160];
    size_t total = 0, used = 0;

    if (ct && strncasecmp(ct, "multipart/form-data", 19) == 0) {
        if (multipart_boundary(ct, boundary, sizeof(boundary)) != 0)
            return -EINVAL;
        if (multipart_parse(p->req->body, p->req->body_len, boundary, p->parts,
                            MULTIPART_MAX_PARTS, &p->nparts, err, sizeof(err)) != 0)
            return -EINVAL;
        for (size_t i = 0; i < p->nparts; i++)
            total += p->parts[i].len + 1;
        p->part_mem = malloc(total + 1);
        if (p->part_mem == NULL)
            return -ENOMEM;
        for (size_t i = 0; i < p->nparts && p->nfields < FORM_FIELDS_MAX; i++) {
            if (p->parts[i].has_filename)
                continue;
            memcpy(p->part_mem + used, p->parts[i].data, p->parts[i].len);
            p->part_mem[used + p->parts[i].len] = '\0';
            p->fields[p->nfields].name = strdup(p->parts[i].name);
            if (p->fields[p->nfields].name == NULL)
                return -ENOMEM;
            p->fields[p->nfields].value = p->part_mem + used;
            p->fields[p->nfields].len = p->parts[i].len;
            p->nfields++;
            used += p->parts[i].len + 1;
        }
        return 0;
    }
    return form_parse_urlencoded(p, p->req->body ? p->req->body : "", p->req->body_len);
}

const char *page_field(const struct page *p, const char *name)
{
    for (size_t i = 0; i < p->nfields; i++)
        if (strcmp(p->fields[i].name, name) == 0)
            return p->fields[i].value;
    return NULL;
}

const struct form_field *page_field_get(const struct page *p, const char *name)
{
    for (size_t i = 0; i < p->nfields; i++)
        if (strcmp(p->fields[i].name, name) == 0)
            return &p->fields[i];
    return NULL;
}

/* Check a POST: parse the body, then demand the session's CSRF token.
 * A request authenticated by a Bearer token is not exposed to CSRF (a
 * browser never adds that header by itself) and needs none. Returns 0 to go
 * on, or -EPERM after rendering the refusal (400/403/500): the caller then
 * returns HTTP_DONE without touching the response. */
int page_post_check(struct page *p)
{
    const char *csrf;
    int rc = page_form_parse(p);

    if (rc == -ENOMEM) {
        page_error(p, 500, "Out of memory", "The server ran out of memory; try again in a minute.");
        return -EPERM;
    }
    if (rc < 0) {
        page_error(p, 400, "That form did not arrive intact",
                   "The browser sent a form the server could not read. Reload the page and send it again.");
        return -EPERM;
    }
    if (!p->user.via_session)
        return 0;
    csrf = page_field(p, "csrf");
    /* Cross-site request forgery: another site can make the browser post a
     * form here, but it cannot read the token that is in our pages. */
    if (csrf == NULL || !auth_equal(csrf, p->user.csrf)) {
        page_error(p, 403, "This form has expired",
                   "The form was missing its security token, or it came from an old page. "
                   "Go back, reload the page, and send it again.");
        return -EPERM;
    }
    return 0;
}

/* The help page: the copyable lines with this server's own address
 * (bundle_base_url), so a student can paste them as they are. */
static int page_help(struct page *p)
{
    char base[256];
    const char *u = bundle_base_url(p->req, base, sizeof(base));
    const char *whl = bundle_client_wheel_name();
    page_begin(p, "Help");
    html_raw(&p->b, "<h1>Help</h1>\n<div class=\"handout\">\n"
        "<h2>Submitting</h2><p>Open a lab, choose your <code>.cu</code> file (or paste it) and press "
        "<em>Submit for grading</em>. You land on the submission's page, which updates by itself "
        "(or every few seconds without JavaScript). Your best score counts.</p>\n");
    html_fmt(&p->b,
        "<h2>From a terminal or a notebook</h2><p>Get the client from this server (one Python "
        "file, standard library only), sign in with your token, test on your own GPU, submit:</p>"
        "<pre><code>curl -O %s/client/cugrade.py\n"
        "python3 cugrade.py login %s\n"
        "python3 cugrade.py test LAB kernel.cu      # local, public cases only, not a grade\n"
        "python3 cugrade.py submit LAB kernel.cu --watch</code></pre>\n",
        u, u);
    if (whl)
        html_fmt(&p->b,
            "<p>Or install it as a <code>cugrade</code> command (a venv, the NGC container; "
            "nothing else is downloaded):</p><pre><code>pip install %s/client/%s\n"
            "cugrade login %s</code></pre>\n", u, whl, u);
    html_fmt(&p->b,
        "<p>In Jupyter: put <code>cugrade.py</code> beside the notebook (or install it), then "
        "<code>%%load_ext cugrade</code>, and a cell starting with <code>%%%%cugrade test LAB</code> "
        "or <code>%%%%cugrade submit LAB</code>. <code>cugrade test</code> fetches the lab's public "
        "harness and cases and runs your file on your machine; only a submission is graded.</p>\n"
        "<h2>With curl only</h2><pre><code>curl -H 'Authorization: Bearer YOUR_TOKEN' "
        "-F file=@kernel.cu \\\n     %s/api/labs/LAB/submissions\n"
        "curl -H 'Authorization: Bearer YOUR_TOKEN' %s/api/submissions/ID</code></pre>\n",
        u, u);
    html_raw(&p->b,
        "<h2>Statuses</h2><ul>"
        "<li><strong>waiting in the queue</strong>: a GPU will pick it up; you do not need to resubmit.</li>"
        "<li><strong>did not compile</strong>: the compiler output links each error to its line.</li>"
        "<li><strong>rejected</strong>: your code uses something the lab forbids; the reason says what.</li>"
        "<li><strong>crashed while running</strong> / <strong>ran out of time</strong>: see the cases and sanitizer findings.</li>"
        "<li><strong>grading failed (our fault)</strong>: not counted against you; staff will regrade.</li></ul>\n"
        "<h2>Scoreboard</h2><p>Other students see a pseudonym for you unless you choose to show your name "
        "(a button on the scoreboard page).</p></div>\n");
    return page_end(p, 200);
}

static int serve_static(struct http_request *req, struct static_file *f)
{
    const char *inm = http_request_header(req, "If-None-Match");
    const char *v = http_request_query(req, "v");
    const char *tag = static_etag(f);

    http_response_header(req, "X-Content-Type-Options", "nosniff");
    http_response_header(req, "ETag", tag);
    /* A versioned link (?v=hash of these bytes) never changes: cache it for
     * a year. Any other URL is revalidated with the ETag. */
    if (v && strlen(v) == 16 && strncmp(v, tag + 1, 16) == 0)
        http_response_header(req, "Cache-Control", "public, max-age=31536000, immutable");
    else
        http_response_header(req, "Cache-Control", "no-cache");
    if (inm && strstr(inm, tag)) {
        http_response_status(req, 304);
        return HTTP_DONE;
    }
    http_response_body(req, 200, f->type, f->data, (size_t)(f->end - f->data));
    return HTTP_DONE;
}

/* Split "/a/b/c" into at most max segments (pointers into buf). */
static size_t path_split(const char *path, char *buf, size_t len, char **seg, size_t max)
{
    size_t n = 0;
    char *s, *save = NULL;

    snprintf(buf, len, "%s", path);
    for (s = strtok_r(buf, "/", &save); s && n < max; s = strtok_r(NULL, "/", &save))
        seg[n++] = s;
    if (s)
        return max + 1; /* too deep */
    return n;
}

long long page_parse_id(const char *s)
{
    /* The API's one rule (api_parse_id): no leading zero, no sign, at most
     * 18 digits -- a page and its API never disagree on what names a row. */
    long long v = 0;
    return api_parse_id(s, &v) == 0 ? v : 0;
}

/* The sign-in page, with problem (NULL: none) and status. */
int page_login(struct page *p, const char *problem, int status)
{
    char token[65];

    /* Login CSRF: a double-submit cookie, since there is no session yet
     * (otherwise another site could sign a student in as the attacker and
     * collect what they submit). */
    if (auth_random_hex(32, token) != 0)
        return page_error(p, 500, "Something broke on our side", "No randomness; try again.");
    page_set_cookie(p->req, LOGIN_COOKIE, token, 3600);
    page_begin(p, "Sign in");
    html_raw(&p->b, "<div class=\"login\"><h1>Sign in</h1>\n");
    if (problem)
        html_fmt(&p->b, "<div class=\"notice bad\" role=\"alert\"><p>%s</p></div>\n", problem);
    if (http_request_query(p->req, "bye"))
        html_raw(&p->b, "<div class=\"notice good\"><p>You are signed out.</p></div>\n");
    html_raw(&p->b,
             "<form id=\"login\" class=\"stack\" method=\"post\" action=\"/login\">\n");
    html_fmt(&p->b, "<input type=\"hidden\" name=\"csrf\" value=\"%s\">\n", token);
    html_raw(&p->b,
             "<label for=\"token\">Your course token</label>\n"
             "<input type=\"password\" id=\"token\" name=\"token\" autocomplete=\"current-password\" "
             "required placeholder=\"cgs_...\" spellcheck=\"false\">\n"
             "<button type=\"submit\">Sign in</button>\n</form>\n"
             "<p class=\"muted small\">Your token came from the course staff (it starts with "
             "<code>cgs_</code> for students). The same token works with <code>curl</code>: "
             "<code>curl -H 'Authorization: Bearer cgs_...' -F file=@kernel.cu "
             "http://this-server/api/labs/LAB/submissions</code>.</p></div>\n");
    return page_end(p, status);
}


int page_login_again(struct page *p)
{
    return page_login(p, "Your session ended (sessions last 12 hours, and end at once "
                         "when your token is revoked). Sign in again, then send the "
                         "form again.", 401);
}


void page_open(struct page *p, struct app *app, struct http_request *req)
{
    assert(p && app && req);
    memset(p, 0, sizeof(*p));
    p->app = app;
    p->req = req;
    html_buf_init(&p->b);
    p->authed = app_auth(app, req, &p->user) == 0 && auth_role_human(p->user.role);
}

/* Not signed in (or the session expired): to the sign-in page. A POST from
 * an expired session says so instead of losing the form silently. */
static int page_signin_first(struct page *p)
{
    int get = p->req->method == HTTP_GET || p->req->method == HTTP_HEAD;
    return get ? page_redirect(p, "/login")
               : page_login_again(p);
}

void pages_warm(void)
{
    for (size_t i = 0; i < sizeof(static_files) / sizeof(static_files[0]); i++)
        static_etag(&static_files[i]);
    bundle_client_wheel_name();
}

/* An API route that only reads, on the reader: its handler on the view. */
static int api_run_here(struct app *app, struct http_request *req, const struct route *rt)
{
    return rt->fn(app, req);
}

int pages_run(struct app *app, struct http_request *req, const struct route *rt)
{
    assert(rt && (rt->page || rt->off_loop));
    if (!rt->page)
        return page_job_start(app, req, rt, api_run_here);
    if (rt->off_loop && (req->method == HTTP_GET || req->method == HTTP_HEAD))
        return page_job_start(app, req, rt, pages_run_here);
    return pages_run_here(app, req, rt);
}

int pages_run_here(struct app *app, struct http_request *req, const struct route *rt)
{
    struct page p;
    int rc;

    assert(rt && rt->page);
    page_open(&p, app, req);
    if (!p.authed)
        rc = page_signin_first(&p);
    else if (strncmp(rt->pattern, "/admin/", 7) == 0 && !page_is_staff(&p))
        rc = page_error(&p, 403, "Not allowed", "These pages are for course staff.");
    else if ((rc = rt->page(&p)) < 0)
        rc = page_error(&p, 404, "Page not found",
                        "There is no page at this address. Use the links at the top of the page.");
    page_free(&p);
    return rc == HTTP_DEFERRED ? HTTP_DEFERRED : HTTP_DONE;
}

/* 1 for the paths whose pages need a session: an unknown one of them sends
 * a signed-out visitor to the sign-in page rather than to a 404. */
static int page_path_known(const char *path)
{
    return strcmp(path, "/") == 0 || strncmp(path, "/labs", 5) == 0 ||
           strncmp(path, "/submissions", 12) == 0 || strncmp(path, "/admin", 6) == 0 ||
           strcmp(path, "/audit") == 0 || strncmp(path, "/me", 3) == 0 ||
           strncmp(path, "/regrades", 9) == 0 || strcmp(path, "/help") == 0;
}

int pages_handle(struct app *app, struct http_request *req)
{
    struct page p;
    char buf[512], *seg[6];
    size_t n;
    int rc, get = req->method == HTTP_GET || req->method == HTTP_HEAD;

    for (size_t i = 0; i < sizeof(static_files) / sizeof(static_files[0]); i++)
        if (strcmp(req->path, static_files[i].path) == 0)
            return get ? serve_static(req, &static_files[i])
                       : (http_response_body(req, 405, "text/plain; charset=utf-8", "GET only\n", 9), HTTP_DONE);

    memset(&p, 0, sizeof(p));
    p.app = app;
    p.req = req;
    html_buf_init(&p.b);
    if (!get && req->method != HTTP_POST) {
        http_response_header(req, "Allow", "GET, HEAD, POST");
        rc = page_error(&p, 405, "Method not allowed", "Pages take GET and POST only.");
        goto out;
    }
    page_free(&p);
    page_open(&p, app, req);
    if (!p.authed) {
        if (get && !page_path_known(req->path))
            rc = page_error(&p, 404, "Page not found", "There is no page at this address. Start from the sign-in page.");
        else
            rc = page_signin_first(&p);
        goto out;
    }
    n = path_split(req->path, buf, sizeof(buf), seg, 5);
    if (n >= 2 && n <= 5 && strcmp(seg[0], "admin") == 0 && !page_is_staff(&p))
        rc = page_error(&p, 403, "Not allowed", "These pages are for course staff.");
    else
        rc = page_error(&p, 404, "Page not found",
                        "There is no page at this address. Use the links at the top of the page.");
out:
    page_free(&p);
    (void)rc;
    return HTTP_DONE;
}

static int r_root(struct page *p)
{
    return page_redirect(p, "/labs");
}

static int r_style_css(struct app *app, struct http_request *req)
{
    return serve_static(req, &static_files[0]);
}

static int r_app_js(struct app *app, struct http_request *req)
{
    return serve_static(req, &static_files[1]);
}

const struct route page_routes[] = {
    {HTTP_GET, "/static/style.css", r_style_css, 0, NULL, NULL, 0},
    {HTTP_GET, "/static/app.js", r_app_js, 0, NULL, NULL, 0},
    PAGE_ROUTE(HTTP_GET, "/", r_root),
    PAGE_ROUTE(HTTP_GET, "/help", page_help),
};
const size_t page_nroutes = sizeof(page_routes) / sizeof(page_routes[0]);
