/*
 * server_parsers.c - unit tests (TAP) for the request-body parsers of the
 * server: multipart/form-data, the roster CSV and JSON bodies.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/app.h"
#include "server/multipart.h"
#include "server/roster.h"

#include "tests/unit/tap.h"

static int parse(const char *body, const char *boundary, struct multipart_part *parts, size_t *n,
                 char *err)
{
    return multipart_parse(body, strlen(body), boundary, parts, MULTIPART_MAX_PARTS, n, err, 200);
}

static void test_multipart(void)
{
    char b[80], err[200];
    struct multipart_part parts[MULTIPART_MAX_PARTS];
    size_t n;

    ok(multipart_boundary("multipart/form-data; boundary=----abc123", b, sizeof(b)) == 0 &&
           strcmp(b, "----abc123") == 0,
       "boundary: curl's plain form");
    ok(multipart_boundary("multipart/form-data; charset=utf-8; boundary=\"a b:c\"", b, sizeof(b)) ==
               0 &&
           strcmp(b, "a b:c") == 0,
       "boundary: quoted, after another parameter");
    ok(multipart_boundary("Multipart/Form-Data;boundary=x", b, sizeof(b)) == 0 &&
           strcmp(b, "x") == 0,
       "boundary: type is case-insensitive");
    ok(multipart_boundary("multipart/form-data", b, sizeof(b)) == -EINVAL,
       "boundary: missing is -EINVAL");
    ok(multipart_boundary("multipart/form-data; boundary=", b, sizeof(b)) == -EINVAL,
       "boundary: empty is -EINVAL");
    char longb[120] = "multipart/form-data; boundary=";
    memset(longb + strlen(longb), 'a', 71);
    ok(multipart_boundary(longb, b, sizeof(b)) == -EINVAL, "boundary: 71 characters is too long");
    ok(multipart_boundary("multipart/form-data; boundary=a\x01z", b, sizeof(b)) == -EINVAL,
       "boundary: control characters refused");
    ok(multipart_boundary("text/plain", b, sizeof(b)) == -ENOENT,
       "boundary: not multipart is -ENOENT");

    const char *body = "--XyZ\r\n"
                       "Content-Disposition: form-data; name=\"note\"\r\n\r\n"
                       "hello\r\n"
                       "--XyZ\r\n"
                       "Content-Disposition: form-data; name=\"file\"; filename=\"kernel.cu\"\r\n"
                       "Content-Type: application/octet-stream\r\n\r\n"
                       "__global__ void k() {}\r\nx--XyZ not a delimiter\n\r\n"
                       "--XyZ--\r\n";
    ok(parse(body, "XyZ", parts, &n, err) == 0 && n == 2, "two parts parse (%s)", err);
    const struct multipart_part *f = multipart_find(parts, n, "file");
    ok(f && strcmp(f->filename, "kernel.cu") == 0 && f->has_filename, "file part and its filename");
    ok(f && f->len == strlen("__global__ void k() {}\r\nx--XyZ not a delimiter\n") &&
           memcmp(f->data, "__global__ void k() {}", 22) == 0,
       "file data ends before CRLF--boundary; --boundary not after CRLF is data");
    ok(f && strcmp(f->content_type, "application/octet-stream") == 0, "part content type");
    ok(multipart_find(parts, n, "note") && parts[0].len == 5 && !parts[0].has_filename,
       "plain field");

    ok(parse("preamble\r\n--B\r\nContent-Disposition: form-data; name=\"file\"; "
             "filename=\"a.cu\"\r\n\r\nx\r\n--B--",
             "B", parts, &n, err) == 0 &&
           n == 1 && parts[0].len == 1,
       "a preamble before the first boundary is skipped");
    ok(parse("--B\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\nabc", "B", parts, &n,
             err) == -EINVAL,
       "no closing boundary: -EINVAL (%s)", err);
    ok(parse("--B\r\nContent-Disposition: form-data; name=\"file\"", "B", parts, &n, err) ==
           -EINVAL,
       "truncated headers: -EINVAL (%s)", err);
    ok(parse("--A\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\nx\r\n--A--", "B", parts,
             &n, err) == -EINVAL,
       "a different boundary: -EINVAL (%s)", err);
    ok(parse("", "B", parts, &n, err) == -EINVAL, "empty body: -EINVAL");
    ok(parse("--B--\r\n", "B", parts, &n, err) == -EINVAL, "no parts: -EINVAL");
    ok(parse("--B\r\nContent-Type: text/plain\r\n\r\nx\r\n--B--", "B", parts, &n, err) == -EINVAL,
       "a part without Content-Disposition: -EINVAL (%s)", err);
    ok(parse("--B\r\nContent-Disposition: attachment; name=\"file\"\r\n\r\nx\r\n--B--", "B", parts,
             &n, err) == -EINVAL,
       "Content-Disposition not form-data: -EINVAL");
    ok(parse("--B\r\nContent-Disposition: form-data; name=\"file\"; "
             "filename*=UTF-8''..%2Fx.cu\r\n\r\nx\r\n--B--",
             "B", parts, &n, err) == -EINVAL,
       "filename* (RFC 5987) is refused: encoded slashes stay out");
    ok(parse("--B\r\nContent-Disposition: form-data; name=\"file\"; "
             "filename=\"unterminated\r\n\r\nx\r\n--B--",
             "B", parts, &n, err) == -EINVAL,
       "an unterminated quoted filename: -EINVAL");
    ok(parse("--B\r\nContent-Disposition: form-data; name=\"file\"; "
             "filename=\"a\\\"b.cu\"\r\n\r\nx\r\n--B--",
             "B", parts, &n, err) == 0 &&
           strcmp(parts[0].filename, "a\"b.cu") == 0,
       "an escaped quote in a filename is unescaped (and then fails the name check)");
    char many[4096] = "";
    for (int i = 0; i < MULTIPART_MAX_PARTS + 1; i++)
        strcat(many, "--B\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\ny\r\n");
    strcat(many, "--B--");
    ok(parse(many, "B", parts, &n, err) == -EINVAL, "more parts than the cap: -EINVAL (%s)", err);
    /* binary bytes inside the file part are data, including NUL */
    const char bin[] = "--B\r\nContent-Disposition: form-data; name=\"file\"; "
                       "filename=\"a.cu\"\r\n\r\n\x00\xff\x01\r\n--B--";
    ok(multipart_parse(bin, sizeof(bin) - 1, "B", parts, MULTIPART_MAX_PARTS, &n, err, 200) == 0 &&
           parts[0].len == 3,
       "binary data with NUL parses (the source check refuses it later)");

    ok(multipart_filename_valid("kernel.cu"), "filename kernel.cu ok");
    ok(multipart_filename_valid("my_kernel-v2.cu"), "filename my_kernel-v2.cu ok");
    ok(!multipart_filename_valid("../../etc/passwd.cu"), "filename ../../etc/passwd.cu refused");
    ok(!multipart_filename_valid("a/b.cu"), "filename with a slash refused");
    ok(!multipart_filename_valid("C:\\x\\k.cu"), "filename with backslashes refused");
    ok(!multipart_filename_valid(".hidden.cu"), "hidden filename refused");
    ok(!multipart_filename_valid("--dryrun.cu") && !multipart_filename_valid("-o.py") &&
           multipart_filename_valid("a-b.cu"),
       "a filename starting with '-' refused (nvcc would read it as an option)");
    ok(!multipart_filename_valid("kernel.c"), "filename not ending in .cu refused");
    ok(!multipart_filename_valid(".cu"), "filename .cu alone refused");
    ok(!multipart_filename_valid("k\xc3\xa9.cu"), "non-ASCII filename refused");
    char longname[80];
    memset(longname, 'a', 62);
    strcpy(longname + 62, ".cu");
    ok(!multipart_filename_valid(longname), "65-character filename refused");
    longname[61] = '\0';
    strcat(longname, ".cu");
    ok(multipart_filename_valid(longname), "64-character filename ok");
}

static void test_roster(void)
{
    struct roster_row *rows;
    size_t n;
    char err[256];
    const char *csv = "name,role,display_name\r\n"
                      "alice,student,Alice Liddell\r\n"
                      "\r\n"
                      "bob,ta,\"Bob, \"\"the builder\"\"\"\r\n"
                      "carol,student\n"
                      "dave,admin,\"two\nlines\"\n"
                      "erin,runner,";
    ok(roster_parse(csv, strlen(csv), &rows, &n, err, sizeof(err)) == 0 && n == 5,
       "roster with header, quotes, blank line, CRLF and LF (%s)", err);
    if (n == 5) {
        ok(strcmp(rows[0].name, "alice") == 0 && strcmp(rows[0].role, "student") == 0 &&
               strcmp(rows[0].display_name, "Alice Liddell") == 0 && rows[0].line == 2,
           "row 1 fields and line number");
        ok(strcmp(rows[1].display_name, "Bob, \"the builder\"") == 0,
           "quoted comma and doubled quotes");
        ok(rows[2].display_name[0] == '\0' && rows[2].line == 5,
           "two fields: empty display_name, line 5");
        ok(strcmp(rows[3].display_name, "two\nlines") == 0, "a newline inside quotes");
        ok(strcmp(rows[4].role, "runner") == 0, "last line without newline");
    }
    free(rows);
    const char *nohdr = "\xef\xbb\xbf"
                        "zed,student,Zed\n";
    ok(roster_parse(nohdr, strlen(nohdr), &rows, &n, err, sizeof(err)) == 0 && n == 1 &&
           strcmp(rows[0].name, "zed") == 0,
       "no header, with a UTF-8 BOM");
    free(rows);
    const char *badrole = "a,student\nb,professor\n";
    ok(roster_parse(badrole, strlen(badrole), &rows, &n, err, sizeof(err)) == -EINVAL &&
           strstr(err, "line 2") && strstr(err, "professor"),
       "a bad role names its line: %s", err);
    const char *badname = "name,role\nok,student\n../x,student\n";
    ok(roster_parse(badname, strlen(badname), &rows, &n, err, sizeof(err)) == -EINVAL &&
           strstr(err, "line 3"),
       "a bad name names its line: %s", err);
    const char *dup = "a,student\nb,student\na,ta\n";
    ok(roster_parse(dup, strlen(dup), &rows, &n, err, sizeof(err)) == -EINVAL &&
           strstr(err, "line 3") && strstr(err, "line 1"),
       "a duplicate name names both lines: %s", err);
    const char *fields = "a,student,A,extra\n";
    ok(roster_parse(fields, strlen(fields), &rows, &n, err, sizeof(err)) == -EINVAL &&
           strstr(err, "line 1"),
       "four fields refused: %s", err);
    const char *unterminated = "a,student,\"open\n";
    ok(roster_parse(unterminated, strlen(unterminated), &rows, &n, err, sizeof(err)) == -EINVAL,
       "an unterminated quote refused: %s", err);
    const char *midquote = "a,stu\"dent\n";
    ok(roster_parse(midquote, strlen(midquote), &rows, &n, err, sizeof(err)) == -EINVAL,
       "a quote inside an unquoted field refused: %s", err);
    ok(roster_parse("", 0, &rows, &n, err, sizeof(err)) == -EINVAL, "empty roster refused: %s",
       err);
    ok(roster_parse("name,role\n", 10, &rows, &n, err, sizeof(err)) == -EINVAL,
       "header only refused");
    const char nul[] = "a,student\nb\0,student\n";
    ok(roster_parse(nul, sizeof(nul) - 1, &rows, &n, err, sizeof(err)) == -EINVAL,
       "a NUL byte refused");
}

static void test_json(void)
{
    struct api_error e;
    json_t *j;
    ok(api_json_parse("{\"a\":1}", 7, 0, &j, &e) == 0 &&
           json_integer_value(json_object_get(j, "a")) == 1,
       "json: an object parses");
    json_decref(j);
    ok(api_json_parse("  ", 2, 1, &j, &e) == 0 && json_is_object(j) && json_object_size(j) == 0,
       "json: empty body allowed becomes {}");
    json_decref(j);
    ok(api_json_parse("", 0, 0, &j, &e) == -EINVAL && e.status == 400 &&
           strcmp(e.code, "malformed_json") == 0,
       "json: empty body refused when required");
    ok(api_json_parse("{\"a\":", 5, 0, &j, &e) == -EINVAL &&
           strcmp(e.code, "malformed_json") == 0 && strstr(e.message, "line 1"),
       "json: truncated names the place: %s", e.message);
    ok(api_json_parse("[1,2]", 5, 0, &j, &e) == -EINVAL && strstr(e.message, "object"),
       "json: an array is not an object");
    ok(api_json_parse("{\"a\":1,\"a\":2}", 13, 0, &j, &e) == -EINVAL,
       "json: duplicate keys refused");
    ok(api_json_parse("{\"a\":\"\\u0000\"}", 14, 0, &j, &e) == -EINVAL,
       "json: NUL escapes refused");
    /* Inside a string, where only the bytes are wrong: a bare \xff value
     * is no JSON token, refused whatever the decoder makes of the byte. */
    const char junk[] = "{\"a\":\"\xff\"}";
    ok(api_json_parse(junk, sizeof(junk) - 1, 0, &j, &e) == -EINVAL &&
           strcmp(e.code, "malformed_json") == 0,
       "json: invalid UTF-8 in a string refused");
}

static void test_utf8(void)
{
    const char *text = "int x; // caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80";
    ok(http_utf8_valid(text, strlen(text)), "utf8: ASCII, 2-, 3- and 4-byte sequences are text");
    ok(!http_utf8_valid("a\0b", 3), "utf8: a NUL byte is binary");
    ok(!http_utf8_valid("\xff", 1), "utf8: 0xff is not UTF-8");
    ok(!http_utf8_valid("\xc0\xaf", 2), "utf8: an overlong '/' is refused");
    ok(!http_utf8_valid("\xed\xa0\x80", 3), "utf8: a surrogate is refused");
    ok(!http_utf8_valid("\xe2\x82", 2), "utf8: a truncated sequence is refused");
    ok(!http_utf8_valid("\xf4\x90\x80\x80", 4), "utf8: beyond U+10FFFF is refused");
    struct roster_row *rows;
    size_t n;
    char err[256];
    const char bad[] = "a,student,\xff\xfe\n";
    ok(roster_parse(bad, sizeof(bad) - 1, &rows, &n, err, sizeof(err)) == -EINVAL &&
           strstr(err, "UTF-8"),
       "roster: a display_name that is not UTF-8 is refused: %s", err);
}

int main(void)
{
    test_utf8();
    test_multipart();
    test_roster();
    test_json();
    printf("1..%d\n", count);
    return failures ? 1 : 0;
}
