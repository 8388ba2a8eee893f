/*
 * wheel.c - the client as a wheel, a zip written in memory. See wheel.h.
 */
#include "server/wheel.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/sha.h>

#define WHEEL_FILES 5 /* the module, METADATA, WHEEL, entry_points.txt, RECORD */
#define ZIP_DATE 0x0021 /* 1980-01-01, the earliest a zip can say */

struct zbuf {
    unsigned char *p;
    size_t len, cap;
    int err;
};

static void put(struct zbuf *b, const void *src, size_t n)
{
    if (b->err)
        return;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n)
            cap *= 2;
        unsigned char *q = realloc(b->p, cap);
        if (!q) {
            b->err = -ENOMEM;
            return;
        }
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->len, src, n);
    b->len += n;
}

static void put16(struct zbuf *b, unsigned v)
{
    unsigned char c[2] = {v & 255, (v >> 8) & 255};
    put(b, c, 2);
}

static void put32(struct zbuf *b, uint32_t v)
{
    unsigned char c[4] = {v & 255, (v >> 8) & 255, (v >> 16) & 255, v >> 24};
    put(b, c, 4);
}

static uint32_t crc32_of(const unsigned char *p, size_t n)
{
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1)));
    }
    return ~c;
}

struct entry {
    char name[96];
    const unsigned char *data;
    size_t len;
    uint32_t crc, offset;
};

/* The local header and data of e at the end of b (stored, no compression). */
static void put_local(struct zbuf *b, struct entry *e)
{
    e->crc = crc32_of(e->data, e->len);
    e->offset = (uint32_t)b->len;
    put32(b, 0x04034b50);
    put16(b, 20); /* version needed: 2.0 */
    put16(b, 0);  /* flags */
    put16(b, 0);  /* stored */
    put16(b, 0);  /* time */
    put16(b, ZIP_DATE);
    put32(b, e->crc);
    put32(b, (uint32_t)e->len);
    put32(b, (uint32_t)e->len);
    put16(b, (unsigned)strlen(e->name));
    put16(b, 0);
    put(b, e->name, strlen(e->name));
    put(b, e->data, e->len);
}

static void put_central(struct zbuf *b, const struct entry *e)
{
    put32(b, 0x02014b50);
    put16(b, 0x0314); /* made by: Unix, 2.0 */
    put16(b, 20);
    put16(b, 0);
    put16(b, 0);
    put16(b, 0);
    put16(b, ZIP_DATE);
    put32(b, e->crc);
    put32(b, (uint32_t)e->len);
    put32(b, (uint32_t)e->len);
    put16(b, (unsigned)strlen(e->name));
    put16(b, 0); /* extra */
    put16(b, 0); /* comment */
    put16(b, 0); /* disk */
    put16(b, 0); /* internal attributes */
    put32(b, 0100644u << 16); /* a regular file, rw-r--r-- */
    put32(b, e->offset);
    put(b, e->name, strlen(e->name));
}

/* One RECORD line for e: "path,sha256=<urlsafe base64, no padding>,size". */
static void put_record(struct zbuf *b, const struct entry *e)
{
    unsigned char md[SHA256_DIGEST_LENGTH];
    char b64[4 * ((SHA256_DIGEST_LENGTH + 2) / 3) + 1], line[768];
    SHA256(e->data, e->len, md);
    int n = EVP_EncodeBlock((unsigned char *)b64, md, SHA256_DIGEST_LENGTH);
    while (n > 0 && b64[n - 1] == '=')
        b64[--n] = '\0';
    for (int i = 0; i < n; i++)
        b64[i] = b64[i] == '+' ? '-' : b64[i] == '/' ? '_' : b64[i];
    snprintf(line, sizeof(line), "%s,sha256=%s,%zu\n", e->name, b64, e->len);
    put(b, line, strlen(line));
}

static int version_ok(const char *v)
{
    size_t n = strlen(v);
    if (n == 0 || n > 32)
        return 0;
    for (; *v; v++)
        if (!isalnum((unsigned char)*v) && !strchr(".+-", *v))
            return 0;
    return 1;
}

int wheel_build(const char *module, size_t len, const char *version, struct wheel *w)
{
    char ver[40], info[64], meta[512];
    static const char wheel_file[] = "Wheel-Version: 1.0\nGenerator: cugrade-server\n"
                                     "Root-Is-Purelib: true\nTag: py3-none-any\n";
    static const char entry_points[] = "[console_scripts]\ncugrade = cugrade:main\n";
    assert(module && version && w);
    memset(w, 0, sizeof(*w));
    if (!version_ok(version) || len > UINT32_MAX / 2)
        return -EINVAL;
    snprintf(ver, sizeof(ver), "%s", version);
    for (char *c = ver; *c; c++)
        if (*c == '-')
            *c = '_';
    snprintf(info, sizeof(info), "cugrade-%s.dist-info", ver);
    snprintf(w->name, sizeof(w->name), "cugrade-%s-py3-none-any.whl", ver);
    snprintf(meta, sizeof(meta),
             "Metadata-Version: 2.1\nName: cugrade\nVersion: %s\n"
             "Summary: Submit GPU kernels to a cugrade autograder from the terminal or a "
             "Jupyter notebook\nRequires-Python: >=3.7\n",
             version);
    struct entry e[WHEEL_FILES] = {
        {"cugrade.py", (const unsigned char *)module, len, 0, 0},
        {"", (const unsigned char *)meta, strlen(meta), 0, 0},
        {"", (const unsigned char *)wheel_file, sizeof(wheel_file) - 1, 0, 0},
        {"", (const unsigned char *)entry_points, sizeof(entry_points) - 1, 0, 0},
        {"", NULL, 0, 0, 0},
    };
    snprintf(e[1].name, sizeof(e[1].name), "%s/METADATA", info);
    snprintf(e[2].name, sizeof(e[2].name), "%s/WHEEL", info);
    snprintf(e[3].name, sizeof(e[3].name), "%s/entry_points.txt", info);
    snprintf(e[4].name, sizeof(e[4].name), "%s/RECORD", info);

    struct zbuf record = {0}, z = {0};
    for (int i = 0; i < WHEEL_FILES - 1; i++)
        put_record(&record, &e[i]);
    put(&record, e[4].name, strlen(e[4].name));
    put(&record, ",,\n", 3);
    e[4].data = record.p;
    e[4].len = record.len;
    for (int i = 0; !record.err && i < WHEEL_FILES; i++)
        put_local(&z, &e[i]);
    uint32_t cd = (uint32_t)z.len;
    for (int i = 0; !record.err && i < WHEEL_FILES; i++)
        put_central(&z, &e[i]);
    uint32_t cd_len = (uint32_t)z.len - cd;
    put32(&z, 0x06054b50);
    put16(&z, 0);
    put16(&z, 0);
    put16(&z, WHEEL_FILES);
    put16(&z, WHEEL_FILES);
    put32(&z, cd_len);
    put32(&z, cd);
    put16(&z, 0);
    int err = record.err ? record.err : z.err;
    free(record.p);
    if (err) {
        free(z.p);
        return err;
    }
    w->data = z.p;
    w->len = z.len;
    return 0;
}

void wheel_free(struct wheel *w)
{
    if (!w)
        return;
    free(w->data);
    w->data = NULL;
    w->len = 0;
}
