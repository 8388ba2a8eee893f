/*
 * multipart.c - multipart/form-data parsing. See multipart.h.
 */
#include "server/multipart.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static int bchar(int ch)
{
    return isalnum(ch) || strchr("'()+_,-./:=? ", ch) != NULL;
}

int multipart_boundary(const char *ct, char *out, size_t len)
{
    while (*ct == ' ')
        ct++;
    if (strncasecmp(ct, "multipart/form-data", 19) != 0)
        return -ENOENT;
    const char *p = ct + 19;
    while (*p) {
        while (*p == ';' || *p == ' ' || *p == '\t')
            p++;
        if (strncasecmp(p, "boundary=", 9) == 0) {
            p += 9;
            size_t n = 0;
            if (*p == '"') {
                p++;
                while (p[n] && p[n] != '"')
                    n++;
                if (p[n] != '"')
                    return -EINVAL;
            } else {
                while (p[n] && p[n] != ';' && p[n] != ' ' && p[n] != '\t')
                    n++;
            }
            if (n == 0 || n > 70 || n + 1 > len || p[n - 1] == ' ')
                return -EINVAL;
            for (size_t i = 0; i < n; i++)
                if (!bchar((unsigned char)p[i]))
                    return -EINVAL;
            memcpy(out, p, n);
            out[n] = '\0';
            return 0;
        }
        while (*p && *p != ';')
            p++;
    }
    return -EINVAL;
}

static const char *find(const char *hay, size_t hlen, const char *needle, size_t nlen)
{
    return memmem(hay, hlen, needle, nlen);
}

/* Copy the value of param (name="x" or name=x) from a Content-Disposition
 * header into out. Returns 1 found, 0 absent, -1 malformed, -2 found
 * with a control byte in its value (out then holds it as sent). */
static int disposition_param(const char *h, size_t hlen, const char *param, char *out, size_t olen)
{
    size_t pl = strlen(param);
    size_t i = 0;
    while (i < hlen) {
        /* at a ';'-separated parameter */
        while (i < hlen && (h[i] == ';' || h[i] == ' ' || h[i] == '\t'))
            i++;
        size_t start = i;
        while (i < hlen && h[i] != '=' && h[i] != ';')
            i++;
        size_t klen = i - start;
        while (klen && (h[start + klen - 1] == ' '))
            klen--;
        if (i >= hlen || h[i] == ';')
            continue;
        i++; /* '=' */
        int match = klen == pl && strncasecmp(h + start, param, pl) == 0;
        int control = 0; /* a byte below ' ' or DEL in the value: refused, not cut at */
        size_t o = 0;
        if (i < hlen && h[i] == '"') {
            i++;
            while (i < hlen && h[i] != '"') {
                char ch = h[i];
                if (ch == '\\' && i + 1 < hlen)
                    ch = h[++i];
                control |= (unsigned char)ch < 0x20 || ch == 0x7f;
                if (match) {
                    if (o + 1 >= olen)
                        return -1;
                    out[o++] = ch;
                }
                i++;
            }
            if (i >= hlen)
                return -1; /* unterminated quote */
            i++;
        } else {
            while (i < hlen && h[i] != ';') {
                control |= (unsigned char)h[i] < 0x20 || h[i] == 0x7f;
                if (match) {
                    if (o + 1 >= olen)
                        return -1;
                    out[o++] = h[i];
                }
                i++;
            }
            while (match && o && out[o - 1] == ' ')
                o--;
        }
        if (match) {
            out[o] = '\0';
            return control ? -2 : 1;
        }
    }
    return 0;
}

static int part_headers(const char *h, size_t hlen, struct multipart_part *part, char *err,
                        size_t errlen)
{
    int have_cd = 0;
    size_t i = 0;
    while (i < hlen) {
        const char *eol = find(h + i, hlen - i, "\r\n", 2);
        size_t llen = eol ? (size_t)(eol - (h + i)) : hlen - i;
        const char *line = h + i;
        const char *colon = memchr(line, ':', llen);
        if (!colon) {
            snprintf(err, errlen, "a part header has no ':'.");
            return -EINVAL;
        }
        size_t nlen = (size_t)(colon - line);
        const char *v = colon + 1;
        size_t vlen = llen - nlen - 1;
        while (vlen && (*v == ' ' || *v == '\t')) {
            v++;
            vlen--;
        }
        if (nlen == 19 && strncasecmp(line, "Content-Disposition", 19) == 0) {
            have_cd = 1;
            if (vlen < 9 || strncasecmp(v, "form-data", 9) != 0) {
                snprintf(err, errlen, "a part's Content-Disposition is not form-data.");
                return -EINVAL;
            }
            int r = disposition_param(v + 9, vlen - 9, "name", part->name, sizeof(part->name));
            if (r <= 0) {
                snprintf(err, errlen, "a part has no valid name in its Content-Disposition.");
                return -EINVAL;
            }
            r = disposition_param(v + 9, vlen - 9, "filename", part->filename,
                                  sizeof(part->filename));
            if (r == -2) {
                snprintf(err, errlen,
                         "a part's filename has a control character in it (a NUL, "
                         "a newline, an escape): send a plain name such as kernel.cu.");
                return -EINVAL;
            }
            if (r < 0) {
                snprintf(err, errlen, "a part's filename is malformed or too long.");
                return -EINVAL;
            }
            part->has_filename = r == 1;
            char star[8];
            if (disposition_param(v + 9, vlen - 9, "filename*", star, sizeof(star)) != 0) {
                /* RFC 5987 names could smuggle encoded slashes past the check. */
                snprintf(err, errlen, "filename* is not supported; send a plain filename.");
                return -EINVAL;
            }
        } else if (nlen == 12 && strncasecmp(line, "Content-Type", 12) == 0) {
            size_t n =
                vlen < sizeof(part->content_type) - 1 ? vlen : sizeof(part->content_type) - 1;
            memcpy(part->content_type, v, n);
            part->content_type[n] = '\0';
        }
        if (!eol)
            break;
        i += llen + 2;
    }
    if (!have_cd) {
        snprintf(err, errlen, "a part has no Content-Disposition header.");
        return -EINVAL;
    }
    return 0;
}

int multipart_parse(const char *body, size_t len, const char *boundary,
                    struct multipart_part *parts, size_t max, size_t *nparts, char *err,
                    size_t errlen)
{
    char delim[80];
    size_t blen = strlen(boundary);
    *nparts = 0;
    if (blen == 0 || blen > 70) {
        snprintf(err, errlen, "the multipart boundary is invalid.");
        return -EINVAL;
    }
    /* delim = "\r\n--" boundary; the first one may come without the CRLF. */
    snprintf(delim, sizeof(delim), "\r\n--%s", boundary);
    size_t dlen = blen + 4;
    size_t pos;
    if (len >= dlen - 2 && memcmp(body, delim + 2, dlen - 2) == 0) {
        pos = dlen - 2;
    } else {
        const char *d = find(body, len, delim, dlen); /* skip a preamble */
        if (!d) {
            snprintf(err, errlen,
                     "the body does not contain the multipart boundary given in Content-Type.");
            return -EINVAL;
        }
        pos = (size_t)(d - body) + dlen;
    }
    for (;;) {
        /* after a delimiter: "--" ends, CRLF starts a part */
        if (len - pos >= 2 && body[pos] == '-' && body[pos + 1] == '-')
            break;
        while (pos < len && (body[pos] == ' ' || body[pos] == '\t'))
            pos++; /* transport padding */
        if (len - pos < 2 || body[pos] != '\r' || body[pos + 1] != '\n') {
            snprintf(err, errlen, "the multipart body is truncated or malformed after a boundary.");
            return -EINVAL;
        }
        pos += 2;
        const char *hend = find(body + pos, len - pos, "\r\n\r\n", 4);
        size_t hlen;
        size_t dstart;
        if (len - pos >= 2 && body[pos] == '\r' && body[pos + 1] == '\n') {
            hlen = 0; /* a part with no headers */
            dstart = pos + 2;
        } else {
            if (!hend) {
                snprintf(err, errlen, "a multipart part has no end of headers.");
                return -EINVAL;
            }
            hlen = (size_t)(hend - (body + pos));
            dstart = pos + hlen + 4;
        }
        if (*nparts == max) {
            snprintf(err, errlen, "the form has more than %zu parts.", max);
            return -EINVAL;
        }
        struct multipart_part *part = &parts[*nparts];
        memset(part, 0, sizeof(*part));
        if (part_headers(body + pos, hlen, part, err, errlen))
            return -EINVAL;
        const char *d = find(body + dstart, len - dstart, delim, dlen);
        if (!d) {
            snprintf(err, errlen, "the multipart body ends without a closing boundary.");
            return -EINVAL;
        }
        part->data = body + dstart;
        part->len = (size_t)(d - (body + dstart));
        (*nparts)++;
        pos = (size_t)(d - body) + dlen;
    }
    if (*nparts == 0) {
        snprintf(err, errlen, "the form has no parts.");
        return -EINVAL;
    }
    return 0;
}

const struct multipart_part *multipart_find(const struct multipart_part *parts, size_t n,
                                            const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(parts[i].name, name) == 0)
            return &parts[i];
    return NULL;
}

int multipart_filename_valid(const char *name)
{
    size_t n = strlen(name);
    /* Not '.' first (a hidden file), nor '-' (nvcc would read "--dryrun.cu"
     * as an option). */
    if (n < 4 || n > 64 || name[0] == '.' || name[0] == '-')
        return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)name[i];
        if (!isalnum(ch) && ch != '_' && ch != '.' && ch != '-')
            return 0;
    }
    /* The extension picks the language: CUDA C, or Python (docs/python.md). */
    return strcmp(name + n - 3, ".cu") == 0 || strcmp(name + n - 3, ".py") == 0;
}
