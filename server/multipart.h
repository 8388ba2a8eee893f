/*
 * multipart.h - multipart/form-data (RFC 7578) parser for submissions made
 * with `curl -F file=@kernel.cu` or the web form. Parses a complete body in
 * memory (the body cap bounds it); part data points into the body.
 */
#ifndef CUGRADE_MULTIPART_H
#define CUGRADE_MULTIPART_H

#include <stddef.h>

#define MULTIPART_MAX_PARTS 16

struct multipart_part {
    char name[64];      /* form field name */
    char filename[256]; /* "" when the part has no filename */
    int has_filename;
    char content_type[128]; /* "" when absent */
    const char *data;       /* into the body; not NUL-terminated */
    size_t len;
};

/* Extract the boundary parameter from a Content-Type header value
 * ("multipart/form-data; boundary=xyz"). Validates it per RFC 2046 (1..70
 * characters from the allowed set). Returns 0, -ENOENT when the type is not
 * multipart/form-data, -EINVAL when the boundary is missing or invalid. */
int multipart_boundary(const char *content_type, char *out, size_t len);

/* Parse body into at most max parts. Returns 0 and *nparts, or -EINVAL with
 * a sentence in err ("the body does not start with the boundary"). */
int multipart_parse(const char *body, size_t len, const char *boundary,
                    struct multipart_part *parts, size_t max, size_t *nparts, char *err,
                    size_t errlen);

/* The first part named name, or NULL. */
const struct multipart_part *multipart_find(const struct multipart_part *parts, size_t n,
                                            const char *name);

/* A submitted file name: ^[A-Za-z0-9_.-]{1,64}$ ending in ".cu" or ".py", not
 * starting with '.', so no directory parts and no hidden files (path
 * traversal: "../../etc/passwd", "C:\\x.cu", "a/b.cu"). Returns 1 or 0. */
int multipart_filename_valid(const char *name);

#endif
