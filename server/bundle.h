/*
 * bundle.h - what the server hands a student to work with on their own
 * machine: the client itself (GET /client/cugrade.py, its wheel at
 * GET /client/cugrade-VERSION-py3-none-any.whl, GET /client/version)
 * and a lab's public bundle (GET /api/labs/{lab}/bundle), the files that
 * labs/bundle.json lets ship (the harness, the generator, the owner and its
 * checks, the local runner) and the lab's public cases only.
 *
 * What never ships: a case whose rubric line is not "visible" (its name and
 * parameters), the generated cases.h (it lists every case), anything under
 * reference/ (reference kernels, the judges), seeds (they are drawn per run
 * by the runner and by the local runner). docs/client.md has the format.
 */
#ifndef CUGRADE_BUNDLE_H
#define CUGRADE_BUNDLE_H

#include <stddef.h>

#include "server/app.h"
#include "server/http.h"

/* The address students use for this server, without a trailing slash:
 * $CUGRADE_PUBLIC_URL when set (a deployment behind a proxy sets it),
 * else http(s)://<Host header of req> (https when X-Forwarded-Proto says
 * so), else http://127.0.0.1:8080. Characters that could break out of the
 * HTML or a shell line are refused (then the fallback). Writes into buf
 * (len bytes) and returns buf. */
const char *bundle_base_url(const struct http_request *req, char *buf, size_t len);

/* text with every "{{server}}" replaced by bundle_base_url(req) and every
 * "{{wheel}}" by the client wheel's file name (bundle_client_wheel_name):
 * how a handout (labs/LAB/README.md) shows its copyable lines with this
 * server's address and its client's version. malloc'd (caller frees); NULL when text is NULL or out of
 * memory. */
char *bundle_handout(const struct http_request *req, const char *text);

/* The served client's version (its __version__ line), e.g. "0.2.0";
 * "unknown" when the embedded file has none. Static storage. */
const char *bundle_client_version(void);

/* The file name of the served client's wheel (GET /client/NAME, server/
 * wheel.h), e.g. "cugrade-0.2.0-py3-none-any.whl"; NULL when it cannot be
 * built. Static storage. */
const char *bundle_client_wheel_name(void);

/* Lab's public bundle as a JSON document (docs/client.md):
 * {"lab","version","client_version","files":{PATH:{"sha256","text"}},
 *  "public_cases":[NAME...]}. Returns 0 and a new reference in *out, or
 * -errno with e filled (404 no such lab or no labs/bundle.json, 500 a
 * listed file that cannot be read). */
int bundle_build(struct app *app, const char *lab, json_t **out, struct api_error *e);

#endif
