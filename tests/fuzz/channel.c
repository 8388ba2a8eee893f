/*
 * channel.c - libFuzzer target: runner/run/channel.c, the harness's result
 * channel, which a process holding student code writes. The input is the
 * channel file's content (in a memfd, read as the runner reads the real
 * file). channel_next must never read past the file or accept a payload
 * that is not all there; channel_read_all must keep its one-record-each
 * promises.
 */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "labs/common/judge_parse.h"
#include "runner/run/channel.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int fd = -1;
static struct jd_obj obj;

/* Every line of the input through the judge's parser. */
static void judge_lines(const uint8_t *data, size_t size)
{
    size_t start = 0;
    for (size_t i = 0; i <= size; i++) {
        if (i < size && data[i] != '\n')
            continue;
        jd_obj_clear(&obj);
        if (jd_parse_obj((const char *)data + start, i - start, &obj) == 0) {
            assert(obj.n >= 0 && obj.n <= JD_MAX_KEYS);
            const struct jd_val *t = jd_get(&obj, "type", JD_STR);
            assert(!t || strlen(t->str) <= CHANNEL_FIELD_MAX);
            for (int k = 0; k < obj.n; k++) {
                size_t l = strnlen(obj.v[k].str, sizeof obj.v[k].str);
                assert(l <= CHANNEL_FIELD_MAX);
                assert(obj.v[k].type != JD_ARR || obj.v[k].narr <= JD_MAX_ARRAY);
            }
        }
        start = i + 1;
    }
    jd_obj_clear(&obj);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (fd < 0)
        fd = memfd_create("channel", MFD_CLOEXEC);
    assert(fd >= 0);
    assert(ftruncate(fd, 0) == 0);
    assert(pwrite(fd, data, size, 0) == (ssize_t)size);

    /* Record by record, as the progress watcher reads it. */
    struct channel ch = {fd, 0};
    json_t *h;
    int r;
    while ((r = channel_next(&ch, &h)) == 1) {
        assert(json_is_object(h) && json_is_string(json_object_get(h, "type")));
        assert(ch.pos > 0 && (size_t)ch.pos <= size);
        json_t *off = json_object_get(h, "_offset"), *bytes = json_object_get(h, "bytes");
        if (bytes) {
            assert(json_is_integer(off));
            json_int_t o = json_integer_value(off), b = json_integer_value(bytes);
            assert(o > 0 && b >= 0 && (size_t)o <= size && (size_t)b <= size - (size_t)o);
            assert(o + b == ch.pos);
        }
        json_decref(h);
    }
    assert(r == 0 || r == -EBADMSG);
    assert((size_t)ch.pos <= size);

    /* The whole file, as the runner judges a finished run. */
    struct channel_info ci;
    r = channel_read_all(fd, &ci);
    assert(r == 0 || r == -EBADMSG);
    assert(ci.case_errors && json_is_object(ci.case_errors));
    assert(ci.ncases >= 0 && json_object_size(ci.case_errors) <= (size_t)ci.ncases);
    assert(!ci.device || json_is_object(ci.device));
    assert(!ci.timing || json_is_object(ci.timing));
    assert(!ci.harness_error || strlen(ci.harness_error) <= 400);
    channel_info_clear(&ci);

    judge_lines(data, size);
    return 0;
}
