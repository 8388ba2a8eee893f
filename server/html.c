/*
 * html.c - safe HTML output: see html.h for the rules.
 */
#include "html.h"

#include <assert.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void html_buf_init(struct html_buf *b)
{
    memset(b, 0, sizeof(*b));
}

void html_buf_free(struct html_buf *b)
{
    free(b->data);
    html_buf_init(b);
}

int html_buf_failed(const struct html_buf *b)
{
    return b->failed;
}

char *html_buf_take(struct html_buf *b, size_t *len)
{
    char *out = NULL;

    if (!b->failed) {
        if (b->data == NULL) {
            out = calloc(1, 1);
        } else {
            out = b->data;
            b->data = NULL;
        }
        if (len)
            *len = out ? b->len : 0;
    } else if (len) {
        *len = 0;
    }
    html_buf_free(b);
    return out;
}

/* Make room for n more bytes plus the NUL. Returns 0, or -1 (and marks the
 * buffer failed) when memory ran out. Growth doubles so a page of N bytes
 * costs O(N) copies. */
static int buf_reserve(struct html_buf *b, size_t n)
{
    size_t need, cap;
    char *p;

    if (b->failed)
        return -1;
    if (n > SIZE_MAX / 2 - b->len - 1)
        goto fail;
    need = b->len + n + 1;
    if (need <= b->cap)
        return 0;
    cap = b->cap ? b->cap : 1024;
    while (cap < need)
        cap *= 2;
    p = realloc(b->data, cap);
    if (p == NULL)
        goto fail;
    b->data = p;
    b->cap = cap;
    return 0;
fail:
    b->failed = 1;
    return -1;
}

void html_rawn(struct html_buf *b, const char *s, size_t n)
{
    if (s == NULL || n == 0 || buf_reserve(b, n) < 0)
        return;
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void html_raw(struct html_buf *b, const char *s)
{
    if (s)
        html_rawn(b, s, strlen(s));
}

static void buf_putc(struct html_buf *b, char c)
{
    html_rawn(b, &c, 1);
}

/* Length of the valid UTF-8 sequence starting at s (at most n bytes), or 0
 * when it is invalid (overlong, surrogate, past U+10FFFF, truncated). */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len, i;
    uint32_t cp;

    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2; cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3; cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4; cp = c & 0x07;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    for (i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

void html_textn(struct html_buf *b, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, run = 0, k;

    if (s == NULL)
        return;
    /* Copy runs of plain bytes in one go; stop at anything that needs care. */
    while (i < n) {
        unsigned char c = p[i];
        const char *rep = NULL;

        switch (c) {
        case '&': rep = "&amp;"; break;
        case '<': rep = "&lt;"; break;
        case '>': rep = "&gt;"; break;
        case '"': rep = "&quot;"; break;
        case '\'': rep = "&#39;"; break;
        default: break;
        }
        if (rep == NULL && c >= 0x20 && c != 0x7F && c < 0x80) {
            i++; run++;
            continue;
        }
        if (rep == NULL && (c == '\t' || c == '\n' || c == '\r')) {
            i++; run++;
            continue;
        }
        if (rep == NULL && c >= 0x80 && (k = utf8_seq(p + i, n - i)) > 0) {
            i += k; run += k;
            continue;
        }
        html_rawn(b, s + i - run, run);
        run = 0;
        if (rep) {
            html_raw(b, rep);
        } else if (c >= 0x80) {
            /* A broken byte: show the replacement character rather than
             * pass bytes that some decoder might merge with our markup. */
            html_raw(b, "\xEF\xBF\xBD");
        }
        /* else: a control byte (NUL, ESC, DEL...) is dropped: terminal
         * escapes in compiler output have no meaning in a page. */
        i++;
    }
    html_rawn(b, s + i - run, run);
}

void html_text(struct html_buf *b, const char *s)
{
    if (s)
        html_textn(b, s, strlen(s));
}

void html_url(struct html_buf *b, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    const unsigned char *p = (const unsigned char *)s;

    if (s == NULL)
        return;
    for (; *p; p++) {
        if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
            *p == '_' || *p == '.' || *p == '~' || *p == '-') {
            buf_putc(b, (char)*p);
        } else {
            char e[3] = {'%', hex[*p >> 4], hex[*p & 15]};
            html_rawn(b, e, 3);
        }
    }
}

static void fmt_double(struct html_buf *b, double v, int prec)
{
    char tmp[64];

    if (!isfinite(v)) {
        buf_putc(b, '-');
        return;
    }
    snprintf(tmp, sizeof(tmp), "%.*f", prec, v);
    html_raw(b, tmp);
}

void html_vfmt(struct html_buf *b, const char *fmt, va_list ap)
{
    const char *p = fmt, *start = fmt;
    char tmp[32];

    while (*p) {
        int prec = 2;

        if (*p != '%') {
            p++;
            continue;
        }
        html_rawn(b, start, (size_t)(p - start));
        p++;
        if (*p == '.') {
            prec = 0;
            p++;
            while (*p >= '0' && *p <= '9')
                prec = prec * 10 + (*p++ - '0');
            if (prec > 17)
                prec = 17;
        }
        switch (*p) {
        case 's': html_text(b, va_arg(ap, const char *)); break;
        case 'u': html_url(b, va_arg(ap, const char *)); break;
        case 'R': html_raw(b, va_arg(ap, const char *)); break;
        case 'd':
            snprintf(tmp, sizeof(tmp), "%d", va_arg(ap, int));
            html_raw(b, tmp);
            break;
        case 'f': fmt_double(b, va_arg(ap, double), prec); break;
        case 'z':
            assert(p[1] == 'u');
            if (p[1] == 'u')
                p++;
            snprintf(tmp, sizeof(tmp), "%zu", va_arg(ap, size_t));
            html_raw(b, tmp);
            break;
        case 'l':
            if (p[1] == 'l' && p[2] == 'd') {
                p += 2;
                snprintf(tmp, sizeof(tmp), "%lld", va_arg(ap, long long));
            } else {
                assert(p[1] == 'd');
                if (p[1] == 'd')
                    p++;
                snprintf(tmp, sizeof(tmp), "%ld", va_arg(ap, long));
            }
            html_raw(b, tmp);
            break;
        case '%': buf_putc(b, '%'); break;
        default:
            assert(!"html_fmt: unknown conversion");
            html_raw(b, "?");
            if (*p == '\0')
                return;
            break;
        }
        p++;
        start = p;
    }
    html_rawn(b, start, (size_t)(p - start));
}

void html_fmt(struct html_buf *b, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    html_vfmt(b, fmt, ap);
    va_end(ap);
}

/* ---- source listing -------------------------------------------------- */

/* One line at a time; returns the line's length (without the newline) and
 * sets *next to the start of the following line. */
static size_t line_next(const char *s, const char **next)
{
    const char *nl = strchr(s, '\n');
    size_t len = nl ? (size_t)(nl - s) : strlen(s);

    *next = nl ? nl + 1 : s + len;
    if (len && s[len - 1] == '\r')
        len--;
    return len;
}

static int is_marked(int line, const int *marks, size_t nmarks)
{
    for (size_t i = 0; i < nmarks; i++)
        if (marks[i] == line)
            return 1;
    return 0;
}

void html_source(struct html_buf *b, const char *src, const int *marks, size_t nmarks)
{
    const char *p = src ? src : "", *next;
    int line = 1;

    html_raw(b, "<table class=\"src\"><tbody>\n");
    while (*p || line == 1) {
        size_t n = line_next(p, &next);

        html_fmt(b, "<tr%R><td class=\"ln\" id=\"L%d\"><a href=\"#L%d\">%d</a></td><td class=\"code\">",
                 is_marked(line, marks, nmarks) ? " class=\"mark\"" : "", line, line, line);
        html_textn(b, p, n);
        html_raw(b, "</td></tr>\n");
        line++;
        if (*next == '\0')
            break;
        p = next;
    }
    html_raw(b, "</tbody></table>\n");
}

/* ---- SVG charts ------------------------------------------------------ */

/* Print a value with 3 significant digits, the way a person reads timings. */
static void fmt_sig(char *buf, size_t len, double v)
{
    if (!isfinite(v))
        snprintf(buf, len, "n/a");
    else if (fabs(v) >= 100)
        snprintf(buf, len, "%.0f", v);
    else if (fabs(v) >= 10)
        snprintf(buf, len, "%.1f", v);
    else if (fabs(v) >= 1)
        snprintf(buf, len, "%.2f", v);
    else
        snprintf(buf, len, "%.3g", v);
}

void html_svg_bars(struct html_buf *b, const char *title, const struct html_bar *bars,
                   size_t nbars, const char *unit)
{
    const int label_w = 150, bar_w = 330, row_h = 28, pad = 8;
    int height = (int)nbars * row_h + 2 * pad;
    double max = 0;
    char num[32];

    for (size_t i = 0; i < nbars; i++)
        if (isfinite(bars[i].value) && bars[i].value > max)
            max = bars[i].value;
    html_fmt(b,
             "<svg class=\"chart bars\" role=\"img\" xmlns=\"http://www.w3.org/2000/svg\" "
             "viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\"><title>%s</title>\n",
             label_w + bar_w + 90, height, label_w + bar_w + 90, height, title);
    for (size_t i = 0; i < nbars; i++) {
        int y = pad + (int)i * row_h;
        double v = bars[i].value;
        int ok = isfinite(v) && v > 0 && max > 0;
        int w = ok ? (int)(bar_w * v / max + 0.5) : 0;

        if (ok && w < 2)
            w = 2;
        html_fmt(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\" class=\"lbl\">%s</text>",
                 label_w - 6, y + row_h / 2 + 4, bars[i].label);
        if (ok) {
            fmt_sig(num, sizeof(num), v);
            html_fmt(b, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" class=\"%R\"/>",
                     label_w, y + 4, w, row_h - 8, bars[i].highlight ? "bar me" : "bar");
            html_fmt(b, "<text x=\"%d\" y=\"%d\" class=\"val\">%s %s</text>\n", label_w + w + 6,
                     y + row_h / 2 + 4, num, unit);
        } else {
            html_fmt(b, "<text x=\"%d\" y=\"%d\" class=\"val na\">n/a</text>\n", label_w + 6,
                     y + row_h / 2 + 4);
        }
    }
    html_raw(b, "</svg>\n");
}

void html_svg_bars_log(struct html_buf *b, const char *title, const struct html_bar *bars,
                       size_t nbars, const char *unit)
{
    /* Narrow enough that its 13 px labels stay readable on a 375 px phone. */
    const int label_w = 118, bar_w = 190, val_w = 82, row_h = 28, pad = 8;
    int height = (int)nbars * row_h + 2 * pad + 16;
    double lo = INFINITY, hi = 0;
    char num[32];

    for (size_t i = 0; i < nbars; i++) {
        double v = bars[i].value;
        if (isfinite(v) && v > 0) {
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
    }
    /* The shortest bar keeps a fifth of the width, so a 0.4 ms kernel next
     * to a 106 ms CPU still shows; each decade takes the same width. */
    double span = hi > 0 && hi > lo ? log10(hi / lo) / 0.8 : 1;
    double base = hi > 0 ? log10(hi) - span : 0;
    html_fmt(b,
             "<svg class=\"chart bars log\" role=\"img\" xmlns=\"http://www.w3.org/2000/svg\" "
             "viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\"><title>%s</title>\n",
             label_w + bar_w + val_w, height, label_w + bar_w + val_w, height, title);
    for (size_t i = 0; i < nbars; i++) {
        int y = pad + (int)i * row_h;
        double v = bars[i].value;
        int ok = isfinite(v) && v > 0;
        int w = ok ? (int)(bar_w * (log10(v) - base) / span + 0.5) : 0;
        if (ok && w < 2)
            w = 2;
        html_fmt(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\" class=\"lbl\">%s</text>",
                 label_w - 6, y + row_h / 2 + 4, bars[i].label);
        if (!ok)
            continue;
        fmt_sig(num, sizeof(num), v);
        html_fmt(b, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" class=\"%R\"/>",
                 label_w, y + 4, w, row_h - 8, bars[i].highlight ? "bar me" : "bar");
        html_fmt(b, "<text x=\"%d\" y=\"%d\" class=\"val\">%s %s</text>\n", label_w + w + 6,
                 y + row_h / 2 + 4, num, unit);
    }
    html_fmt(b, "<text x=\"%d\" y=\"%d\" class=\"tick\">(log scale)</text>\n</svg>\n", label_w,
             height - 6);
}

void html_svg_histogram(struct html_buf *b, const char *title, const double *values,
                        size_t n, size_t nbins, double lo, double hi, const char *xlabel)
{
    const int W = 480, H = 200, left = 36, bottom = 36, top = 10, right = 10;
    size_t counts[64] = {0}, maxc = 0, used = 0;
    char a[32], c[32];

    if (nbins == 0)
        nbins = 10;
    if (nbins > 64)
        nbins = 64;
    if (!(lo < hi)) {
        int first = 1;
        for (size_t i = 0; i < n; i++) {
            if (!isfinite(values[i]))
                continue;
            if (first || values[i] < lo) lo = values[i];
            if (first || values[i] > hi) hi = values[i];
            first = 0;
        }
        if (first) {
            lo = 0; hi = 1;
        }
        if (!(lo < hi))
            hi = lo + 1;
    }
    for (size_t i = 0; i < n; i++) {
        double v = values[i];
        long k;

        if (!isfinite(v))
            continue;
        k = (long)((v - lo) / (hi - lo) * (double)nbins);
        if (k < 0) k = 0;
        if (k >= (long)nbins) k = (long)nbins - 1;
        counts[k]++;
        used++;
    }
    for (size_t k = 0; k < nbins; k++)
        if (counts[k] > maxc)
            maxc = counts[k];
    html_fmt(b,
             "<svg class=\"chart hist\" role=\"img\" xmlns=\"http://www.w3.org/2000/svg\" "
             "viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\"><title>%s (%zu values)</title>\n",
             W, H, W, H, title, used);
    html_fmt(b, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" class=\"axis\"/>", left, H - bottom,
             W - right, H - bottom);
    html_fmt(b, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" class=\"axis\"/>\n", left, top, left,
             H - bottom);
    html_fmt(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\" class=\"tick\">%zu</text>", left - 4,
             top + 10, maxc);
    html_fmt(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\" class=\"tick\">0</text>\n", left - 4,
             H - bottom);
    for (size_t k = 0; k < nbins; k++) {
        double bw = (double)(W - left - right) / (double)nbins;
        int x = left + (int)(bw * (double)k) + 1;
        int h = maxc ? (int)((double)(H - bottom - top) * (double)counts[k] / (double)maxc + 0.5) : 0;

        fmt_sig(a, sizeof(a), lo + (hi - lo) * (double)k / (double)nbins);
        fmt_sig(c, sizeof(c), lo + (hi - lo) * (double)(k + 1) / (double)nbins);
        html_fmt(b, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" class=\"bar\">"
                    "<title>%s to %s: %zu</title></rect>\n",
                 x, H - bottom - h, (int)bw - 2 > 1 ? (int)bw - 2 : 1, h, a, c, counts[k]);
    }
    fmt_sig(a, sizeof(a), lo);
    fmt_sig(c, sizeof(c), hi);
    html_fmt(b, "<text x=\"%d\" y=\"%d\" class=\"tick\">%s</text>", left, H - bottom + 14, a);
    html_fmt(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\" class=\"tick\">%s</text>", W - right,
             H - bottom + 14, c);
    html_fmt(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" class=\"lbl\">%s</text>\n",
             (W + left) / 2, H - 6, xlabel);
    html_raw(b, "</svg>\n");
}
