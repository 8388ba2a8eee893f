/*
 * html.h - building HTML safely: an output buffer, escaping for text and
 * attributes, a tiny printf-like template whose default conversion escapes,
 * source listings with line numbers, and inline SVG charts (bar chart,
 * histogram). Markdown (handouts, feedback) is markdown.h's.
 *
 * The rule the page code follows: every byte that came from a user, a lab
 * file, a runner or the database goes through html_text()/html_attr() or the
 * "%s" conversion of html_fmt(). Only string literals written in the page
 * files (page.c, <noun>_page.c) go through html_raw(). That is the whole
 * defence against stored XSS in file names, source code, compiler output
 * and display names.
 *
 * Out of memory is sticky (SQLite's style): appends after a failed growth do
 * nothing, and html_buf_failed() tells the caller at the end.
 */
#ifndef CUGRADE_HTML_H
#define CUGRADE_HTML_H

#include <stdarg.h>
#include <stddef.h>

struct html_buf {
    char *data;     /* NUL-terminated while ok; owned */
    size_t len;
    size_t cap;
    int failed;     /* 1 after an allocation failed */
};

/* Prepare an empty buffer (no allocation yet). */
void html_buf_init(struct html_buf *b);

/* Free the buffer's memory; the buffer may be reused after html_buf_init. */
void html_buf_free(struct html_buf *b);

/* Take the buffer's bytes: returns a malloc'd NUL-terminated string (caller
 * frees) and its length in *len, or NULL when an allocation failed earlier.
 * The buffer is left empty either way. */
char *html_buf_take(struct html_buf *b, size_t *len);

/* 1 if any append ran out of memory. */
int html_buf_failed(const struct html_buf *b);

/* Append trusted bytes verbatim: markup written in our own source only. */
void html_raw(struct html_buf *b, const char *s);
void html_rawn(struct html_buf *b, const char *s, size_t n);

/* Append s (NULL = nothing) escaped for an element's text content or a
 * quoted attribute value: & < > " ' become entities, NUL bytes and other C0
 * controls except \t \n \r are dropped, and invalid UTF-8 bytes become U+FFFD
 * (so a broken byte cannot swallow the following markup in lenient parsers). */
void html_text(struct html_buf *b, const char *s);
void html_textn(struct html_buf *b, const char *s, size_t n);
#define html_attr html_text

/* Append s percent-encoded for a URL path segment or query value: only
 * [A-Za-z0-9_.~-] pass; everything else is %XX. The result is also safe
 * inside a quoted attribute. */
void html_url(struct html_buf *b, const char *s);

/* printf-like append where the safe thing is the short thing:
 *   %s  string, HTML-escaped (NULL prints nothing)
 *   %u  string, URL-encoded (html_url)
 *   %R  string, raw (trusted markup only; NULL prints nothing)
 *   %d  int      %ld long     %lld long long     %zu size_t
 *   %f  double, "%.Nf" with an optional precision (default 2); NaN/inf print "-"
 *   %%  a percent sign
 * Any other conversion is a programming error (asserted) and prints "?". */
void html_fmt(struct html_buf *b, const char *fmt, ...);
void html_vfmt(struct html_buf *b, const char *fmt, va_list ap);

/* A source listing: a <table class="src"> with one row per line, the line
 * number in its own cell with id "L<n>" (so compile errors can link to
 * #L12), and the line escaped as text. Lines whose number is in marks[]
 * (nmarks entries) get class "mark". */
void html_source(struct html_buf *b, const char *src, const int *marks, size_t nmarks);

/* One bar of a bar chart. */
struct html_bar {
    const char *label;  /* escaped */
    double value;       /* bars with value <= 0 or NaN are drawn as "n/a" */
    int highlight;      /* 1: drawn in the accent colour (the student's own bar) */
};

/* An inline horizontal bar chart in SVG, with a <title> for screen readers,
 * each bar labelled with its value and unit ("1.23 ms"). */
void html_svg_bars(struct html_buf *b, const char *title, const struct html_bar *bars,
                   size_t nbars, const char *unit);

/* html_svg_bars on a logarithmic scale (times that differ 100x all show),
 * narrow enough for a phone, with a note that the scale is logarithmic.
 * Bars with value <= 0 or NaN are left out of the drawing, label only. */
void html_svg_bars_log(struct html_buf *b, const char *title, const struct html_bar *bars,
                       size_t nbars, const char *unit);

/* An inline SVG histogram of values (NaN values skipped) over nbins equal
 * bins spanning [lo, hi] (values outside are clamped into the end bins).
 * When lo >= hi the range is taken from the data. xlabel names the axis. */
void html_svg_histogram(struct html_buf *b, const char *title, const double *values,
                        size_t n, size_t nbins, double lo, double hi, const char *xlabel);

#endif
