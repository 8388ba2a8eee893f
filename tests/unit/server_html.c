/*
 * server_html.c - unit tests for server/html.c: escaping, URL encoding, the
 * template conversions, the Markdown subset, source listings and charts.
 * Prints TAP lines.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/html.h"

static int failures;

static void check(int cond, const char *name, const char *got)
{
    printf("%s - %s\n", cond ? "ok" : "not ok", name);
    if (!cond) {
        printf("#   got: %s\n", got ? got : "(null)");
        failures++;
    }
}

/* Run one rendering into a fresh buffer and return the text (caller frees). */
#define RENDER(stmt)                                                                               \
    ({                                                                                             \
        struct html_buf b_;                                                                        \
        html_buf_init(&b_);                                                                        \
        {                                                                                          \
            struct html_buf *b = &b_;                                                              \
            stmt;                                                                                  \
        }                                                                                          \
        html_buf_take(&b_, NULL);                                                                  \
    })

static void expect_eq(const char *got, const char *want, const char *name)
{
    check(got && strcmp(got, want) == 0, name, got);
}

static void expect_has(const char *got, const char *needle, const char *name)
{
    check(got && strstr(got, needle) != NULL, name, got);
}

static void expect_not(const char *got, const char *needle, const char *name)
{
    check(got && strstr(got, needle) == NULL, name, got);
}

int main(void)
{
    char *s;

    s = RENDER(html_text(b, "<script>alert(1)</script>"));
    expect_eq(s, "&lt;script&gt;alert(1)&lt;/script&gt;", "text escapes a script tag");
    free(s);

    s = RENDER(html_attr(b, "x\" onmouseover='alert(1)' a=\"&"));
    expect_eq(s, "x&quot; onmouseover=&#39;alert(1)&#39; a=&quot;&amp;",
              "attribute escaping closes no quote");
    free(s);

    s = RENDER(html_textn(b, "a\0b\x1b[31mc\x7f", 10));
    expect_eq(s, "ab[31mc", "NUL, ESC and DEL are dropped");
    free(s);

    s = RENDER(html_text(b, "caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80"));
    expect_eq(s, "caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80", "valid UTF-8 passes unchanged");
    free(s);

    s = RENDER(html_text(b, "a\xc0<\xff\xe2\x9c"));
    expect_eq(s, "a\xEF\xBF\xBD&lt;\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD",
              "invalid UTF-8 becomes U+FFFD and cannot swallow the next '<'");
    free(s);

    s = RENDER(html_text(b, "\xed\xa0\x80"));
    expect_eq(s, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD", "UTF-8 surrogates are refused");
    free(s);

    s = RENDER(html_text(b, NULL));
    expect_eq(s, "", "NULL text prints nothing");
    free(s);

    s = RENDER(html_url(b, "a b/../\"<x>&?=#.cu"));
    expect_eq(s, "a%20b%2F..%2F%22%3Cx%3E%26%3F%3D%23.cu", "URL encoding of a segment");
    free(s);

    s = RENDER(html_fmt(b, "<a href=\"/u/%u\" title=\"%s\">%s</a> %d %ld %lld %zu %.1f %f %% %R",
                        "a b", "\"q\"", "<b>", -3, 40L, 5000000000LL, (size_t)7, 2.25, 1.0 / 3,
                        "<br>"));
    expect_eq(s, "<a href=\"/u/a%20b\" title=\"&quot;q&quot;\">&lt;b&gt;</a> -3 40 5000000000 7 2.2 0.33 % <br>",
              "html_fmt: %s escapes, %u encodes, %R is raw, numbers print");
    free(s);

    s = RENDER(html_fmt(b, "%f|%.0f", NAN, INFINITY));
    expect_eq(s, "-|-", "non-finite doubles print as a dash");
    free(s);

    {
        int marks[] = {2};
        s = RENDER(html_source(b, "int main() {\n  return \"</td><script>\";\n}\n", marks, 1));
        expect_has(s, "id=\"L1\"", "source line 1 has an anchor");
        expect_has(s, "<tr class=\"mark\"><td class=\"ln\" id=\"L2\">", "marked line is highlighted");
        expect_has(s, "return &quot;&lt;/td&gt;&lt;script&gt;&quot;;", "source text is escaped");
        expect_not(s, "id=\"L4\"", "no phantom line after the final newline");
        free(s);
    }

    {
        struct html_bar bars[] = {{"you <me>", 2.0, 1}, {"reference (optimized)", 1.0, 0},
                                  {"cuBLAS", NAN, 0}};
        s = RENDER(html_svg_bars(b, "Time \"ms\"", bars, 3, "ms"));
        expect_has(s, "<svg class=\"chart bars\"", "bar chart is an inline svg");
        expect_has(s, "you &lt;me&gt;", "bar labels are escaped");
        expect_has(s, "<title>Time &quot;ms&quot;</title>", "chart title is escaped");
        expect_has(s, "class=\"bar me\"", "the student's bar is highlighted");
        expect_has(s, "width=\"330\"", "the largest bar takes the full width");
        expect_has(s, "width=\"165\"", "half the value is half the width");
        expect_has(s, ">n/a</text>", "a missing value says n/a");
        free(s);
    }

    {
        struct html_bar bars[] = {{"your kernel", 0.4, 1}, {"CPU <x>", 106, 0}, {"cuBLAS", NAN, 0}};
        s = RENDER(html_svg_bars_log(b, "Time", bars, 3, "ms"));
        expect_has(s, "<svg class=\"chart bars log\"", "log bar chart is an inline svg");
        expect_has(s, "CPU &lt;x&gt;", "log chart labels are escaped");
        expect_has(s, "width=\"190\"", "log chart: the largest bar takes the full width");
        expect_has(s, "width=\"38\"", "log chart: 265x less is a fifth of it, still visible");
        expect_has(s, "(log scale)", "log chart says its scale");
        if (strstr(s, "n/a") != NULL)
            expect_has("", "n/a", "log chart: a missing value draws no n/a");
        free(s);
    }

    {
        double v[] = {0, 10, 20, 30, 100, 100, NAN};
        s = RENDER(html_svg_histogram(b, "Scores", v, 7, 10, 0, 100, "score"));
        expect_has(s, "(6 values)", "histogram counts finite values");
        expect_has(s, "<title>90.0 to 100: 2</title>", "top bin holds the maximum values");
        expect_has(s, "<title>0 to 10.0: 1</title>", "first bin");
        free(s);
    }

    {
        struct html_buf b;
        size_t len = 0;
        html_buf_init(&b);
        for (int i = 0; i < 100000; i++)
            html_raw(&b, "0123456789");
        s = html_buf_take(&b, &len);
        check(s && len == 1000000 && strlen(s) == len, "buffer grows to a megabyte", NULL);
        free(s);
    }

    printf("# %d failure(s)\n", failures);
    return failures ? 1 : 0;
}
