/*
 * multipart.c - libFuzzer target: server/multipart.c, as a submission
 * reaches it. The input's first line is the Content-Type header value
 * (multipart_boundary), the rest is the request body (multipart_parse),
 * held in a buffer of exactly its length so that any read past it is
 * caught. Every part found must lie inside the body and name a
 * NUL-terminated field.
 */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/multipart.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nl = memchr(data, '\n', size);
    if (!nl)
        return 0;
    size_t ctlen = (size_t)(nl - data);
    char *ct = malloc(ctlen + 1);
    size_t blen = size - ctlen - 1;
    char *body = malloc(blen ? blen : 1);
    assert(ct && body);
    memcpy(ct, data, ctlen);
    ct[ctlen] = '\0';
    memcpy(body, nl + 1, blen);

    char boundary[128], err[256];
    int rc = multipart_boundary(ct, boundary, sizeof(boundary));
    assert(rc == 0 || rc == -ENOENT || rc == -EINVAL);
    if (rc == 0) {
        size_t bl = strlen(boundary);
        assert(bl >= 1 && bl <= 70);
        struct multipart_part parts[MULTIPART_MAX_PARTS];
        size_t n = 0;
        err[0] = '\0';
        rc = multipart_parse(body, blen, boundary, parts, MULTIPART_MAX_PARTS, &n, err,
                             sizeof(err));
        assert(rc == 0 || rc == -EINVAL);
        if (rc == 0) {
            assert(n <= MULTIPART_MAX_PARTS);
            for (size_t i = 0; i < n; i++) {
                const struct multipart_part *p = &parts[i];
                assert(p->data >= body && p->len <= blen &&
                       (size_t)(p->data - body) <= blen - p->len);
                assert(memchr(p->name, '\0', sizeof(p->name)));
                assert(memchr(p->filename, '\0', sizeof(p->filename)));
                assert(memchr(p->content_type, '\0', sizeof(p->content_type)));
                if (multipart_filename_valid(p->filename))
                    assert(!strchr(p->filename, '/') && p->filename[0] != '.');
            }
            const struct multipart_part *f = multipart_find(parts, n, "file");
            assert(!f || strcmp(f->name, "file") == 0);
        } else {
            assert(err[0] != '\0'); /* the student is told what is wrong */
        }
    }
    free(ct);
    free(body);
    return 0;
}
