/*
 * bundle.c - the client and the labs' public bundles. See bundle.h.
 */
#include "server/bundle.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/api.h"
#include "server/auth.h"
#include "server/views.h"
#include "server/wheel.h"

/* The client, linked in like the stylesheet (server/page.c): a server
 * always serves the client of its own version, whatever is installed
 * beside it. The Makefile makes bundle.o depend on client/cugrade.py. */
__asm__(".section .rodata\n"
        ".balign 16\n"
        ".hidden bundle__client_py\n.globl bundle__client_py\nbundle__client_py:\n"
        ".incbin \"client/cugrade.py\"\n"
        ".hidden bundle__client_py_end\n.globl bundle__client_py_end\nbundle__client_py_end:\n"
        ".byte 0\n"
        ".previous\n");

extern const char bundle__client_py[], bundle__client_py_end[];

#define BUNDLE_FILE_MAX (1024 * 1024) /* one shipped file */
#define BUNDLE_FILES_MAX 64

static size_t client_len(void)
{
    return (size_t)(bundle__client_py_end - bundle__client_py);
}

const char *bundle_client_version(void)
{
    static char version[32];
    const char *key = "\n__version__ = \"";
    if (version[0])
        return version;
    const char *p = memmem(bundle__client_py, client_len(), key, strlen(key));
    size_t n = 0;
    if (p) {
        p += strlen(key);
        while (p + n < bundle__client_py_end && p[n] != '"' && n + 1 < sizeof(version) &&
               (isalnum((unsigned char)p[n]) || p[n] == '.' || p[n] == '-' || p[n] == '+'))
            n++;
    }
    if (!p || n == 0 || p[n] != '"')
        snprintf(version, sizeof(version), "unknown");
    else
        snprintf(version, sizeof(version), "%.*s", (int)n, p);
    return version;
}

/* 1 when s (a host[:port] or a URL) holds only characters that are safe in
 * an HTML attribute, a shell line and a URL. */
static int url_chars_ok(const char *s, int url)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && !strchr(url ? ".-:[]/_~%" : ".-:[]", *s))
            return 0;
    return 1;
}

const char *bundle_base_url(const struct http_request *req, char *buf, size_t len)
{
    const char *env = getenv("CUGRADE_PUBLIC_URL");
    const char *host = req ? http_request_header(req, "Host") : NULL;
    const char *proto = req ? http_request_header(req, "X-Forwarded-Proto") : NULL;
    assert(buf && len > 0);
    if (env && (strncmp(env, "http://", 7) == 0 || strncmp(env, "https://", 8) == 0) &&
        url_chars_ok(env, 1) && strlen(env) < len) {
        snprintf(buf, len, "%s", env);
        size_t n = strlen(buf);
        while (n > 0 && buf[n - 1] == '/')
            buf[--n] = '\0';
        return buf;
    }
    if (host && url_chars_ok(host, 0) && strlen(host) + 9 < len)
        snprintf(buf, len, "%s://%s", proto && strcmp(proto, "https") == 0 ? "https" : "http",
                 host);
    else
        snprintf(buf, len, "http://127.0.0.1:8080");
    return buf;
}

/* text with each key[k] replaced by val[k] (nkeys pairs). malloc'd; NULL
 * when out of memory. */
static char *replace_keys(const char *text, const char *const *key, const char *const *val,
                          size_t nkeys)
{
    size_t len = strlen(text) + 1;
    for (size_t k = 0; k < nkeys; k++)
        for (const char *p = strstr(text, key[k]); p; p = strstr(p + strlen(key[k]), key[k]))
            len += strlen(val[k]);
    char *out = malloc(len), *o = out;
    if (!out)
        return NULL;
    for (const char *p = text; *p;) {
        size_t k = 0;
        while (k < nkeys && strncmp(p, key[k], strlen(key[k])) != 0)
            k++;
        if (k < nkeys) {
            memcpy(o, val[k], strlen(val[k]));
            o += strlen(val[k]);
            p += strlen(key[k]);
        } else {
            *o++ = *p++;
        }
    }
    *o = '\0';
    assert((size_t)(o - out) < len);
    return out;
}

static const struct wheel *client_wheel(void);

char *bundle_handout(const struct http_request *req, const char *text)
{
    static const char *const key[] = {"{{server}}", "{{wheel}}"};
    char base[256];
    const struct wheel *w = client_wheel();
    const char *val[] = {bundle_base_url(req, base, sizeof(base)), w ? w->name : "cugrade.py"};
    if (!text)
        return NULL;
    return replace_keys(text, key, val, 2);
}

/* GET /client/cugrade.py: the client, anyone may fetch it (it holds no
 * secret, and a student needs it before signing in). */
/* One of the client's files (data lives as long as the process): its
 * ETag (the first 16 hex digits of its SHA-256, computed once into etag),
 * 304 when the client has it, else the bytes, borrowed. */
static int send_client_file(struct http_request *req, char etag[20], const void *data,
                            size_t len, const char *type)
{
    if (!etag[0]) {
        char hex[65];
        auth_sha256_hex(data, len, hex);
        snprintf(etag, 20, "\"%.16s\"", hex);
    }
    const char *inm = http_request_header(req, "If-None-Match");
    http_response_header(req, "X-Content-Type-Options", "nosniff");
    http_response_header(req, "X-Cugrade-Client-Version", bundle_client_version());
    http_response_header(req, "ETag", etag);
    http_response_header(req, "Cache-Control", "no-cache");
    if (inm && strstr(inm, etag)) {
        http_response_status(req, 304);
        return HTTP_DONE;
    }
    http_response_body_borrowed(req, 200, type, data, len);
    return HTTP_DONE;
}

static int r_client_py(struct app *app, struct http_request *req)
{
    static char etag[20];
    (void)app;
    return send_client_file(req, etag, bundle__client_py, client_len(),
                            "text/x-python; charset=utf-8");
}

/* The wheel of the embedded client, built on first use and kept for the
 * life of the process (the module never changes under a running server).
 * NULL when it cannot be built (out of memory, a version a wheel cannot
 * carry). */
static const struct wheel *client_wheel(void)
{
    static struct wheel w;
    static int state; /* 0 not yet, 1 built, -1 failed */
    if (state == 0)
        state = wheel_build(bundle__client_py, client_len(), bundle_client_version(), &w) ? -1 : 1;
    return state == 1 ? &w : NULL;
}

const char *bundle_client_wheel_name(void)
{
    const struct wheel *w = client_wheel();
    return w ? w->name : NULL;
}

/* GET /client/{file}: the client's wheel under its own name
 * (cugrade-VERSION-py3-none-any.whl), to anyone, like the module; any other
 * name is the 404 page. */
static int r_client_file(struct app *app, struct http_request *req)
{
    static char etag[20];
    const struct wheel *w = client_wheel();
    const char *file = http_request_param(req, "file");
    (void)app;
    if (!w || !file || strcmp(file, w->name) != 0) {
        static const char msg[] = "Not found: this server serves /client/cugrade.py and its wheel "
                                  "(see /client/version).\n";
        http_response_body(req, 404, "text/plain; charset=utf-8", msg, sizeof(msg) - 1);
        return HTTP_DONE;
    }
    return send_client_file(req, etag, w->data, w->len, "application/zip");
}

/* GET /client/version: {"version","sha256","url","wheel"}: what the client
 * compares its own __version__ with; wheel is the URL to pip install (null
 * when the wheel cannot be built). */
static int r_client_version(struct app *app, struct http_request *req)
{
    char base[256], url[300], whl[400], hex[65];
    const struct wheel *w = client_wheel();
    (void)app;
    auth_sha256_hex(bundle__client_py, client_len(), hex);
    bundle_base_url(req, base, sizeof(base));
    snprintf(url, sizeof(url), "%s/client/cugrade.py", base);
    if (w)
        snprintf(whl, sizeof(whl), "%s/client/%s", base, w->name);
    http_response_header(req, "Cache-Control", "no-cache");
    return api_send_json(req, 200, json_pack("{s:s,s:s,s:s,s:s?}", "version",
                                             bundle_client_version(), "sha256", hex, "url", url,
                                             "wheel", w ? whl : NULL));
}

/* 1 when case name is one a student sees from the start: its rubric line
 * says "visible" (cases without a line, or after_due_date ones, stay out:
 * a bundle must not change with the date, nor leak a case early). */
static int case_public(const struct app_lab *l, const char *name)
{
    for (size_t k = 0; l->has_rubric && k < l->rubric.ncorrectness; k++) {
        const struct rubric_line *rl = &l->rubric.correctness[k];
        if (strcmp(rl->case_name, name) == 0)
            return rl->visibility == NULL || strcmp(rl->visibility, "visible") == 0;
    }
    return 0;
}

/* A malloc'd copy of file path (at most BUNDLE_FILE_MAX bytes) in *out,
 * its length in *len. 0, -ENOENT, -EFBIG or -errno. */
static int read_file(const char *path, char **out, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -errno;
    char *buf = malloc(BUNDLE_FILE_MAX + 1);
    if (!buf) {
        fclose(f);
        return -ENOMEM;
    }
    size_t n = fread(buf, 1, BUNDLE_FILE_MAX + 1, f);
    int err = ferror(f);
    fclose(f);
    if (err || n > BUNDLE_FILE_MAX) {
        free(buf);
        return err ? -EIO : -EFBIG;
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return 0;
}

/* Add one file (text, n bytes) under path to files, with its SHA-256. */
static int add_file(json_t *files, const char *path, const char *text, size_t n)
{
    char hex[65];
    auth_sha256_hex(text, n, hex);
    json_t *t = json_stringn(text, n); /* NULL: not UTF-8 (only text ships) */
    if (!t)
        return -EILSEQ;
    return json_object_set_new(files, path, json_pack("{s:s,s:o}", "sha256", hex, "text", t))
               ? -ENOMEM
               : 0;
}

/* The lab's lab.json as a student may see it: the keys the manifest's
 * "lab_keys" lists, the public cases only, timing_case and sanitize_case
 * only when they are public. Adds the names to names. New reference or
 * NULL (-errno in *rc). */
static json_t *public_lab_doc(const struct app_lab *l, const json_t *manifest, json_t *names,
                              int *rc)
{
    char path[1024];
    json_error_t je;
    snprintf(path, sizeof(path), "%s/lab.json", l->lab.dir);
    json_t *doc = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    json_t *pub = json_object(), *cases = json_array(), *keys = json_object_get(manifest, "lab_keys");
    size_t i;
    json_t *v;
    *rc = (!doc || !pub || !cases) ? (doc ? -ENOMEM : -EIO) : 0;
    json_array_foreach(keys, i, v)
    {
        const char *k = json_string_value(v);
        json_t *x = k ? json_object_get(doc, k) : NULL;
        if (!*rc && x && strcmp(k, "cases") != 0 && json_object_set(pub, k, x))
            *rc = -ENOMEM;
    }
    /* The allow-list ships whole (labs/common/py/local.py reads it): a
     * "base" naming labs/common/allow.json's shared list is merged in. */
    json_t *allow = NULL;
    if (!*rc && json_object_get(pub, "allow")) {
        char why[256];
        *rc = lab_allow_resolve(l->lab.dir, json_object_get(pub, "allow"), &allow, why, sizeof why);
        if (!*rc && json_object_set_new(pub, "allow", allow))
            *rc = -ENOMEM;
    }
    json_array_foreach(json_object_get(doc, "cases"), i, v)
    {
        const char *name = json_string_value(json_object_get(v, "name"));
        if (!*rc && name && case_public(l, name) &&
            (json_array_append(cases, v) || json_array_append_new(names, json_string(name))))
            *rc = -ENOMEM;
    }
    const char *special[] = {"timing_case", "sanitize_case"};
    for (size_t s = 0; !*rc && s < 2; s++) {
        const char *name = json_string_value(json_object_get(pub, special[s]));
        if (name && !case_public(l, name))
            json_object_del(pub, special[s]);
    }
    if (!*rc && json_object_set(pub, "cases", cases))
        *rc = -ENOMEM;
    json_decref(doc);
    json_decref(cases);
    if (*rc) {
        json_decref(pub);
        return NULL;
    }
    return pub;
}

/* A manifest path is relative to labs/, "{lab}" standing for the lab's
 * folder; no "..", no absolute path, no generated cases.h. Writes the
 * file's path on disk into disk and its bundle path into rel. 0 or
 * -EINVAL. */
static int manifest_path(struct app *app, const struct app_lab *l, const char *pat, char *disk,
                         size_t dlen, char *rel, size_t rlen)
{
    const char *brace = strstr(pat, "{lab}");
    /* lab.json ships filtered (public_lab_doc), never as it is; the
     * generated cases.h lists every case. */
    if (pat[0] == '/' || strstr(pat, "..") || strstr(pat, "cases.generated") ||
        strstr(pat, "lab.json"))
        return -EINVAL;
    if (brace)
        snprintf(rel, rlen, "labs/%.*s%s%s", (int)(brace - pat), pat, l->lab.name, brace + 5);
    else
        snprintf(rel, rlen, "labs/%s", pat);
    snprintf(disk, dlen, "%s/%s", app->cfg.labs_dir, rel + 5);
    return 0;
}

/* The manifest's files that exist, into files. 0 or -errno (e filled). */
static int bundle_files(struct app *app, const struct app_lab *l, const json_t *manifest,
                        json_t *files, struct api_error *e)
{
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(manifest, "files"), i, v)
    {
        char disk[1024], rel[512], *text = NULL;
        size_t n = 0;
        const char *pat = json_string_value(v);
        if (!pat || i >= BUNDLE_FILES_MAX ||
            manifest_path(app, l, pat, disk, sizeof(disk), rel, sizeof(rel)))
            return api_fail(e, 500, "internal",
                            "labs/bundle.json: files[%zu] is not a path under labs/ that may ship.",
                            i);
        int rc = read_file(disk, &text, &n);
        if (rc == -ENOENT)
            continue; /* e.g. a lab without a Python interface: no lab.py */
        if (!rc)
            rc = add_file(files, rel, text, n);
        free(text);
        if (rc)
            return api_fail(e, 500, "internal", "The lab bundle's file %s cannot be shipped (%s).",
                            rel, strerror(-rc));
    }
    return 0;
}

/* version: SHA-256 of the lines "PATH SHA256\n" in the order of the sorted
 * paths; the client computes the same over what it received. */
static int bundle_version(json_t *files, char hex[65])
{
    const char *keys[BUNDLE_FILES_MAX + 1];
    size_t n = 0;
    const char *k;
    json_t *v;
    json_object_foreach(files, k, v)
    {
        if (n == BUNDLE_FILES_MAX + 1)
            return -E2BIG;
        keys[n++] = k;
    }
    for (size_t i = 1; i < n; i++) /* insertion sort: a few dozen names */
        for (size_t j = i; j > 0 && strcmp(keys[j - 1], keys[j]) > 0; j--) {
            const char *t = keys[j];
            keys[j] = keys[j - 1];
            keys[j - 1] = t;
        }
    struct http_buf b = {0};
    int rc = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        const char *sha = json_string_value(json_object_get(json_object_get(files, keys[i]), "sha256"));
        rc = http_buf_printf(&b, "%s %s\n", keys[i], sha);
    }
    if (!rc)
        auth_sha256_hex(b.data ? b.data : "", b.len, hex);
    http_buf_free(&b);
    return rc;
}

int bundle_build(struct app *app, const char *lab, json_t **out, struct api_error *e)
{
    char mpath[1024], hex[65];
    const struct app_lab *l = app_lab_find(app, lab);
    json_t *manifest = NULL, *doc = NULL, *files = json_object(), *names = json_array(), *pub;
    int rc;

    *out = NULL;
    if (!l) {
        rc = api_fail(e, 404, "not_found", "There is no lab called '%.64s'.", lab);
        goto fail;
    }
    snprintf(mpath, sizeof(mpath), "%s/bundle.json", app->cfg.labs_dir);
    manifest = json_load_file(mpath, JSON_REJECT_DUPLICATES, NULL);
    if (!manifest) {
        rc = api_fail(e, 404, "no_bundle",
                      "This server ships no lab bundles (no labs/bundle.json): local tests are "
                      "not available; submit to be graded.");
        goto fail;
    }
    if (!files || !names) {
        rc = api_internal(e, -ENOMEM);
        goto fail;
    }
    pub = public_lab_doc(l, manifest, names, &rc);
    if (!pub) {
        rc = api_internal(e, rc);
        goto fail;
    }
    char *text = json_dumps(pub, JSON_COMPACT | JSON_SORT_KEYS);
    char rel[300];
    json_decref(pub);
    snprintf(rel, sizeof(rel), "labs/%s/lab.json", l->lab.name);
    rc = text ? add_file(files, rel, text, strlen(text)) : -ENOMEM;
    free(text);
    if (rc || (rc = bundle_files(app, l, manifest, files, e)) != 0) {
        if (e->status == 0 || rc == -ENOMEM)
            rc = api_internal(e, rc);
        goto fail;
    }
    if ((rc = bundle_version(files, hex)) != 0) {
        rc = api_internal(e, rc);
        goto fail;
    }
    doc = json_pack("{s:s,s:s,s:s,s:O,s:O}", "lab", l->lab.name, "version", hex, "client_version",
                    bundle_client_version(), "public_cases", names, "files", files);
    if (!doc)
        rc = api_internal(e, -ENOMEM);
    *out = doc;
fail:
    json_decref(manifest);
    json_decref(files);
    json_decref(names);
    return doc ? 0 : rc;
}

/* GET /api/labs/{lab}/bundle: any signed-in person; ?have=VERSION answers
 * 304 when the student's cached copy is current. */
static int h_lab_bundle(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e = {0};
    json_t *doc;
    if (api_need(app, req, &u, HUMANS))
        return HTTP_DONE;
    if (bundle_build(app, http_request_param(req, "lab"), &doc, &e))
        return api_send_err(req, &e);
    const char *have = http_request_query(req, "have");
    const char *version = json_string_value(json_object_get(doc, "version"));
    http_response_header(req, "X-Cugrade-Bundle-Version", version);
    http_response_header(req, "X-Cugrade-Client-Version", bundle_client_version());
    if (have && strcmp(have, version) == 0) {
        json_decref(doc);
        http_response_status(req, 304);
        return HTTP_DONE;
    }
    return api_send_json(req, 200, doc);
}

const struct route bundle_routes[] = {
    {HTTP_GET, "/client/cugrade.py", r_client_py, 0, NULL, NULL, 0},
    {HTTP_GET, "/client/version", r_client_version, 0, NULL, NULL, 0},
    {HTTP_GET, "/client/{file}", r_client_file, 0, NULL, NULL, 0},
    {HTTP_GET, "/api/labs/{lab}/bundle", h_lab_bundle, 0, NULL, NULL, 0},
};
const size_t bundle_nroutes = sizeof(bundle_routes) / sizeof(bundle_routes[0]);
