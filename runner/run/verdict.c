/*
 * verdict.c - see verdict.h.
 */
#include "runner/run/verdict.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

/* The length of the valid UTF-8 character at p (n bytes left), 0 when the
 * bytes there are not one (a stray continuation byte, an overlong form, a
 * surrogate, past U+10FFFF, or cut short). */
static size_t utf8_char_len(const unsigned char *p, size_t n)
{
    size_t k;
    if (p[0] < 0x80)
        k = 1;
    else if (p[0] >= 0xc2 && p[0] <= 0xdf)
        k = 2;
    else if (p[0] >= 0xe0 && p[0] <= 0xef)
        k = 3;
    else if (p[0] >= 0xf0 && p[0] <= 0xf4)
        k = 4;
    else
        return 0;
    if (k > n)
        return 0;
    for (size_t i = 1; i < k; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    if ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] > 0x9f) ||
        (p[0] == 0xf0 && p[1] < 0x90) || (p[0] == 0xf4 && p[1] > 0x8f))
        return 0;
    return k;
}

/* The bytes of a terminal escape sequence at p (p[0] is ESC): CSI
 * "ESC [ ... final", OSC "ESC ] ... BEL or ESC \", else ESC and one more. */
static size_t escape_len(const unsigned char *p, size_t n)
{
    size_t i = 2;
    if (n < 2)
        return n;
    if (p[1] == '[') {
        while (i < n && !(p[i] >= 0x40 && p[i] <= 0x7e))
            i++;
        return i < n ? i + 1 : n;
    }
    if (p[1] == ']') {
        while (i < n && p[i] != 0x07 && !(p[i] == 0x1b && i + 1 < n && p[i + 1] == '\\'))
            i++;
        return i >= n ? n : p[i] == 0x07 ? i + 1 : i + 2;
    }
    return 2;
}

size_t score_text_clean(char *dst, size_t len, const char *src, size_t srclen, int flat)
{
    const unsigned char *s = (const unsigned char *)src;
    size_t o = 0, i = 0;
    assert(dst && len > 0 && (src || srclen == 0));
    while (i < srclen && s[i]) {
        size_t k = utf8_char_len(s + i, srclen - i);
        unsigned c = s[i];
        if (c == 0x1b) {
            i += escape_len(s + i, srclen - i);
            continue;
        }
        if (k == 2 && c == 0xc2 && s[i + 1] < 0xa0) { /* C1 controls U+0080..U+009F */
            i += 2;
            continue;
        }
        if (k == 1 && (c < 0x20 || c == 0x7f) && c != '\n' && c != '\t') {
            i++;
            continue;
        }
        char one = 0; /* a byte written in place of the character, or 0: the character */
        if (k == 0)
            one = '?';
        else if (flat && (c == '\n' || c == '\t'))
            one = ' ';
        else if (flat && c == '`')
            one = '\'';
        size_t w = one ? 1 : k;
        if (o + w >= len)
            break; /* never half a character */
        if (one)
            dst[o] = one;
        else
            memmove(dst + o, s + i, w);
        o += w;
        i += k ? k : 1;
    }
    dst[o] = '\0';
    return i < srclen && s[i];
}

void score_cases_free(struct score_case *cases, size_t n)
{
    if (!cases)
        return;
    for (size_t i = 0; i < n; i++) {
        free(cases[i].name);
        free(cases[i].message);
    }
    free(cases);
}

void score_finding_clear(struct score_finding *f)
{
    free(f->file);
    free(f->message);
    free(f->hint);
    f->file = f->message = f->hint = NULL;
}

void score_sanitizer_clear(struct score_sanitizer *s)
{
    for (size_t i = 0; i < s->nfindings; i++)
        score_finding_clear(&s->findings[i]);
    free(s->findings);
    s->findings = NULL;
    s->nfindings = 0;
}
