/*
 * server_markdown.c - unit tests (TAP) for server/markdown.c: handouts and
 * feedback through libcmark-gfm. Pipe tables, fenced code, headings one
 * level down, raw HTML and javascript: links neutralised, math-like text
 * left alone, the repo's own handouts, and the one-paragraph feedback form.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "server/markdown.h"

#include "tests/unit/tap.h"

/* Render md (inline form when inl) into a new string; caller frees. */
static char *render(const char *md, int inl)
{
    struct html_buf b;

    html_buf_init(&b);
    if (inl)
        markdown_render_inline(&b, md);
    else
        markdown_render(&b, md);
    return html_buf_take(&b, NULL);
}

static int has(const char *s, const char *needle)
{
    return s && strstr(s, needle) != NULL;
}

static size_t occurrences(const char *s, const char *needle)
{
    size_t n = 0;

    for (const char *p = s; p && (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

/* Print the rendering as TAP comments when a check on it failed. */
static void show_if_failed(int before, const char *s)
{
    if (failures == before || s == NULL)
        return;
    for (const char *p = s; *p;) {
        const char *nl = strchr(p, '\n');
        int n = nl ? (int)(nl - p) : (int)strlen(p);
        printf("#   %.*s\n", n, p);
        p += n + (nl != NULL);
    }
}

static void test_table(void)
{
    int before = failures;
    char *s = render("## Cases\n\n"
                     "| case | n | points |\n|---|---:|---|\n"
                     "| `1` | 1 | 5 |\n| `2^20+7` | 1 048 583 | 10 |\n| a \\| b | <i>x</i> | 3 |\n",
                     0);

    check(occurrences(s, "<table>") == 1 && occurrences(s, "</table>") == 1, "a pipe table renders as one <table>");
    check(has(s, "<th>case</th>") && has(s, "<th align=\"right\">n</th>"),
          "the header row becomes <th> cells, with the column's alignment");
    check(occurrences(s, "<tr>") == 4, "the table has the header row and three body rows");
    check(has(s, "<td><code>2^20+7</code></td>"), "inline code inside a cell");
    check(has(s, "<td>a | b</td>"), "an escaped pipe stays inside its cell");
    check(!has(s, "<i>"), "raw HTML inside a cell is not passed through");
    check(has(s, "<div class=\"scroll\" tabindex=\"0\" role=\"region\" aria-label=\"Table: Cases\">\n<table>"),
          "the table sits in a focusable scroll box labelled by the heading above it");
    check(has(s, "</table>\n</div>"), "the scroll box closes after the table");
    show_if_failed(before, s);
    free(s);
}

static void test_code_and_headings(void)
{
    int before = failures;
    char *s = render("# Lab <1>\n\n## Your function\n\n###### deep\n\n"
                     "```c\n#include <x>\nint a = b && c; // *not* emphasis\n```\n\n"
                     "Some *text*, **bold**, ~~gone~~ and `a<b`.\n",
                     0);

    check(has(s, "<h2>Lab &lt;1&gt;</h2>"), "a level-1 heading becomes <h2> (the page owns <h1>), escaped");
    check(has(s, "<h3>Your function</h3>"), "a level-2 heading becomes <h3>");
    check(has(s, "<h6>deep</h6>") && !has(s, "<h7"), "a level-6 heading stays <h6>");
    check(has(s, "<pre><code class=\"language-c\">#include &lt;x&gt;\nint a = b &amp;&amp; c; // *not* emphasis\n</code></pre>"),
          "a fenced code block keeps its text verbatim, escaped, with its language");
    check(has(s, "aria-label=\"Code: deep\">\n<pre>"),
          "the code block sits in a scroll box labelled by the last heading");
    check(has(s, "<p>Some <em>text</em>, <strong>bold</strong>, <del>gone</del> and <code>a&lt;b</code>.</p>"),
          "emphasis, strong, strikethrough and inline code");
    show_if_failed(before, s);
    free(s);
}

static void test_hostile(void)
{
    int before = failures;
    char *s = render("<script>alert(1)</script>\n\n"
                     "Text <script>alert(2)</script> <img src=x onerror=alert(3)> "
                     "<a href=\"javascript:alert(4)\">raw</a>\n\n"
                     "[click](javascript:alert(5)) [vb](VBScript:msgbox) ![img](javascript:alert(6)) "
                     "<javascript:alert(7)> [data](data:text/html;base64,PHNjcmlwdD4=)\n\n"
                     "<iframe src=\"https://evil.example\"></iframe>\n\n"
                     "[ok](https://example.com/a?b=1&c=\"2\") www.example.org\n",
                     0);

    check(!has(s, "<script") && !has(s, "alert(1)") && has(s, "<!-- raw HTML omitted -->alert(2)"),
          "raw <script> blocks are omitted; inline tags too, their words stay as text");
    check(!has(s, "<img src=\"x\"") && !has(s, "onerror"), "a raw <img> with an event handler is omitted");
    check(!has(s, "<iframe"), "a raw <iframe> is omitted");
    check(!has(s, "=\"javascript:") && !has(s, "=\"VBScript:") && !has(s, "=\"data:") &&
              occurrences(s, "href=\"\"") == 4 && has(s, "<img src=\"\" alt=\"img\" />"),
          "javascript:, vbscript: and data: addresses never reach an href or src");
    check(has(s, "<a href=\"\">click</a>"), "a javascript: link keeps its words and loses its address");
    check(has(s, "<a href=\"https://example.com/a?b=1&amp;c=%222%22\">ok</a>"),
          "an ordinary link is kept, its address escaped");
    check(has(s, "<a href=\"http://www.example.org\">www.example.org</a>"), "a bare www address is autolinked");
    show_if_failed(before, s);
    free(s);
}

/* Handouts are full of formulas written as plain text: none of it may turn
 * into tables, emphasis or markup by accident. */
static void test_math_like(void)
{
    int before = failures;
    char *s = render("## How close is close enough\n\n"
                     "Your answer passes when\n\n"
                     "    |your sum - reference| <= tau(n) * sum_i |x_i|\n"
                     "    tau(n) = 2^-23 * (2 * log2(n) + sqrt(n) / 8)\n\n"
                     "`2^-23` is float's epsilon; for n = 2^28, tau is about 2.4e-4 and "
                     "a_i + b_i < c_i holds for x_1 ... x_n with 0 < i <= n.\n\n"
                     "|C[i][j] - ref[i][j]| <= 1e-4 * sqrt( sum_k (A[i][k] * B[k][j])^2 )\n",
                     0);

    check(has(s, "<pre><code>|your sum - reference| &lt;= tau(n) * sum_i |x_i|\n"
                 "tau(n) = 2^-23 * (2 * log2(n) + sqrt(n) / 8)\n</code></pre>"),
          "an indented formula is a code block, verbatim");
    check(has(s, "a_i + b_i &lt; c_i holds for x_1 ... x_n with 0 &lt; i &lt;= n."),
          "underscores and < in running text stay as written (no emphasis, escaped)");
    check(!has(s, "<table"), "a line that starts and ends with | but has no delimiter row is not a table");
    check(has(s, "<p>|C[i][j] - ref[i][j]| &lt;= 1e-4 * sqrt( sum_k (A[i][k] * B[k][j])^2 )</p>"),
          "brackets and a lone * in a formula stay literal");
    show_if_failed(before, s);
    free(s);
}

static void test_feedback(void)
{
    int before = failures;
    char *s = render("A shared-memory race: put `__syncthreads()` between the writes (see *the handout*).", 1);

    check(s && strcmp(s, "A shared-memory race: put <code>__syncthreads()</code> between the writes "
                         "(see <em>the handout</em>).") == 0,
          "one-paragraph feedback renders inline, without <p>");
    show_if_failed(before, s);
    free(s);
    s = render("First.\n\nSecond <b>x</b>.", 1);
    check(has(s, "<p>First.</p>\n<p>Second <!-- raw HTML omitted -->x<!-- raw HTML omitted -->.</p>"),
          "feedback of two paragraphs keeps its blocks, raw HTML omitted");
    free(s);
    s = render(NULL, 1);
    check(s && *s == '\0', "no text renders as nothing");
    free(s);
}

/* The repo's own handouts (tests run from the repo root): every cases table
 * renders as a table with one row per case. */
static void test_repo_handouts(void)
{
    static const struct {
        const char *lab;
        size_t cases;
    } labs[] = {{"reduction", 6}, {"matmul", 9}, {"embedding", 7}};
    const char *root = getenv("CUGRADE_ROOT");

    for (size_t i = 0; i < sizeof(labs) / sizeof(labs[0]); i++) {
        char path[512], *md = NULL, *s;
        FILE *f;
        size_t n = 0;
        long len;

        snprintf(path, sizeof(path), "%s/labs/%s/README.md", root ? root : ".", labs[i].lab);
        f = fopen(path, "rb");
        if (f && fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0 &&
            (md = calloc(1, (size_t)len + 1)) != NULL)
            n = fread(md, 1, (size_t)len, f);
        if (f)
            fclose(f);
        ok(md && n > 0, "%s: the handout %s is readable", labs[i].lab, path);
        s = render(md ? md : "", 0);
        ok(occurrences(s, "<table>") == 1, "%s: its cases table renders as a <table>", labs[i].lab);
        ok(occurrences(s, "<tr>") == labs[i].cases + 1, "%s: the table has a header and %zu case rows (got %zu rows)",
           labs[i].lab, labs[i].cases, occurrences(s, "<tr>") ? occurrences(s, "<tr>") - 1 : 0);
        ok(!has(s, "| case |"), "%s: no raw pipes of the table are left in the page", labs[i].lab);
        free(md);
        free(s);
    }
}

/* Is every tag in html one that a Markdown renderer writes, with only the
 * attributes it writes, no script address in href/src, and divs only as our
 * scroll boxes? Returns NULL or the first offending tag. */
static const char *markup_bad(const char *html)
{
    static const char *const tags[] = {
        "p", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "code", "pre", "em", "strong",
        "del", "a", "img", "table", "thead", "tbody", "tr", "th", "td", "div", "blockquote",
        "br", "hr"};
    static const char *const attrs[] = {"href", "src", "alt", "title", "class", "align", "start",
                                        "tabindex", "role", "aria-label"};

    for (const char *p = strchr(html, '<'); p; p = strchr(p + 1, '<')) {
        const char *q = p + 1 + (p[1] == '/');
        size_t n = strspn(q, "abcdefghijklmnopqrstuvwxyz0123456789");
        int known = 0;

        if (strncmp(p, "<!-- raw HTML omitted -->", 25) == 0)
            continue;
        for (size_t i = 0; i < sizeof(tags) / sizeof(tags[0]); i++)
            known |= n == strlen(tags[i]) && strncmp(q, tags[i], n) == 0;
        if (!known)
            return p;
        if (strncmp(p, "<div", 4) == 0 &&
            strncmp(p, "<div class=\"scroll\" tabindex=\"0\" role=\"region\" aria-label=\"", 59) != 0)
            return p;
        q += n;
        /* Attributes: name="value", the value free of quotes (escaped). */
        while (*q == ' ') {
            size_t an = strspn(q + 1, "abcdefghijklmnopqrstuvwxyz-"), v;
            int ok_name = 0;

            for (size_t i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++)
                ok_name |= an == strlen(attrs[i]) && strncmp(q + 1, attrs[i], an) == 0;
            if (an == 0 && q[1] == '/')
                break;
            if (!ok_name || q[1 + an] != '=' || q[2 + an] != '"')
                return p;
            v = strcspn(q + 3 + an, "\"<>");
            if (q[3 + an + v] != '"')
                return p;
            if ((strncmp(q + 1, "href", 4) == 0 || strncmp(q + 1, "src", 3) == 0) &&
                (strncasecmp(q + 3 + an, "javascript:", 11) == 0 ||
                 strncasecmp(q + 3 + an, "vbscript:", 9) == 0 || strncasecmp(q + 3 + an, "data:", 5) == 0))
                return p;
            q += 3 + an + v + 1;
        }
        if (strncmp(q, ">", 1) != 0 && strncmp(q, " />", 3) != 0)
            return p;
    }
    return NULL;
}

/* Many documents built from Markdown's and HTML's sharp pieces, from a
 * fixed seed: none lets markup through, and the scroll boxes always close
 * (a raw "</div>" in a handout cannot end ours early or leave one open). */
static void test_random_documents(void)
{
    static const char *const piece[] = {
        "|", " | ", "---", "|---|---|\n", "`", "```", "```c\n", "<script>", "</script>", "[a](javascript:x)",
        "# ", "## ", "\n", "\n\n", "*", "_", "**", "<div>", "</div>", "x", " ", "~~", "    ", "- ",
        "1. ", "www.a.b", "&", "\"", "<img src=x onerror=y>", "> ", "\\", "<!--", "-->", "[b]: javascript:y\n",
        "[b]", "\t", "<a href=\"javascript:z\">", "</a>", "<", ">", "2^-23 * x_i", "| a | b |\n"};
    const size_t npiece = sizeof(piece) / sizeof(piece[0]);
    unsigned long long state = 0x9E3779B97F4A7C15ull;
    int bad = 0, unbalanced = 0;
    char doc[2048];

    for (int round = 0; round < 3000; round++) {
        size_t len = 0, n;
        char *s;

        state = state * 6364136223846793005ull + 1442695040888963407ull;
        n = 1 + (size_t)(state >> 58);
        for (size_t k = 0; k < n; k++) {
            const char *pc;

            state = state * 6364136223846793005ull + 1442695040888963407ull;
            pc = piece[(state >> 33) % npiece];
            if (len + strlen(pc) + 1 >= sizeof(doc))
                break;
            memcpy(doc + len, pc, strlen(pc));
            len += strlen(pc);
        }
        doc[len] = '\0';
        s = render(doc, round & 1);
        if (s == NULL || markup_bad(s) != NULL) {
            if (bad++ == 0)
                printf("#   leaked markup for: %s\n#   at: %.80s\n", doc, s ? markup_bad(s) : "(null)");
        }
        if (s && occurrences(s, "<div class=\"scroll\"") != occurrences(s, "</div>")) {
            if (unbalanced++ == 0)
                printf("#   unbalanced boxes for: %s\n", doc);
        }
        free(s);
    }
    ok(bad == 0, "3000 random documents of Markdown and HTML pieces: only a renderer's tags, no handler, no script address (%d leaked)", bad);
    ok(unbalanced == 0, "3000 random documents: every scroll box closes, and only ours (%d unbalanced)", unbalanced);
}

int main(void)
{
    test_table();
    test_code_and_headings();
    test_hostile();
    test_math_like();
    test_feedback();
    test_repo_handouts();
    check(markup_bad("<p>a <script>x</script></p>") && markup_bad("<img src=\"x\" onerror=\"y\" />") &&
              markup_bad("<a href=\"javascript:x\">") && markup_bad("<div>") &&
              markup_bad("<div class=\"scroll\" tabindex=\"0\" role=\"region\" aria-label=\"a\" onclick=\"x\">") &&
              !markup_bad("<p>&lt;script&gt; <a href=\"https://a\">a</a></p><!-- raw HTML omitted -->"),
          "the markup checker itself tells a raw tag, a handler, a script address and a bare div from safe HTML");
    test_random_documents();
    printf("1..%d\n", count);
    return failures ? 1 : 0;
}
