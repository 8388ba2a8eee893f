/*
 * http_frame.c - the line framing of a connection's input (RFC 9112 2.2,
 * 5.2, 7.1), checked on the raw bytes before http-parser sees them.
 * http-parser (built without HTTP_PARSER_STRICT) takes a bare LF for a line
 * end, unfolds obs-fold lines and ends a chunk extension at a bare LF: a
 * proxy in front of us that reads the same bytes strictly sees other
 * headers or another body (request smuggling). Here every line of the head,
 * of the chunk framing and of the trailer must end in CRLF, a CR must be
 * followed by LF, and a field line may not begin with a space or tab.
 *
 * The scanner runs ahead of the parser but never past the end of a head:
 * only once the parser has read the head (on_headers_complete calls
 * frame_body) is the body's framing known -- Content-Length bytes to skip,
 * or chunks -- and scanning goes on.
 */
#include "server/http.h"

#include <assert.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "server/http_conn.h"

enum {
    FR_HEAD = 0,   /* request line and field lines */
    FR_WAIT,       /* the head is scanned; the parser has not read it yet */
    FR_BODY,       /* fr_remain bytes of a Content-Length body */
    FR_SIZE,       /* a chunk-size line, extensions included */
    FR_DATA,       /* fr_remain bytes of chunk data */
    FR_DATA_CR,    /* the CR after chunk data */
    FR_DATA_LF,    /* ...and its LF */
    FR_TRAILER,    /* trailer field lines after the last chunk */
};

/* Flags in fr_line. */
#define FL_CR 1       /* the previous byte was a CR */
#define FL_START 2    /* at the start of a line */
#define FL_FIELD 4    /* past the request line (FR_HEAD) */
#define FL_DIGITS 8   /* FR_SIZE: hex digits seen */
#define FL_EXT 16     /* FR_SIZE: past the digits */

static size_t frame_fail(struct http_conn *c, size_t at, const char *why)
{
    c->fr_bad = why;
    return at;
}

static int hexval(unsigned char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

/* Whether the request line just read ends in SP "HTTP/" DIGIT "." DIGIT
 * (RFC 9112 3). http-parser, not strict, takes any byte for most of
 * "HTTP/": "GET / H" CRLF CRLF was a version to it that went on past the
 * end of the head we had seen, and the server aborted on the disagreement. */
static int request_line_version_ok(const struct http_conn *c)
{
    const char *t = c->fr_tail;
    return c->fr_tail_n == sizeof(c->fr_tail) && memcmp(t, " HTTP/", 6) == 0 && t[6] >= '0' &&
           t[6] <= '9' && t[7] == '.' && t[8] >= '0' && t[8] <= '9';
}

/* One byte of a line of the head or trailer. Returns 1 at the empty line
 * that ends it, 0 to go on, -1 on a framing error (c->fr_bad set). */
static int frame_line_byte(struct http_conn *c, unsigned char ch)
{
    unsigned f = c->fr_line;
    if (f & FL_CR) {
        if (ch != '\n') {
            c->fr_bad = "A CR in the request head is not followed by LF.";
            return -1;
        }
        if (f & FL_START) { /* CRLF alone: the empty line */
            if (c->fr_state == FR_HEAD && !(f & FL_FIELD)) {
                c->fr_line = FL_START; /* an empty line before the request line */
                return 0;
            }
            return 1;
        }
        if (c->fr_state == FR_HEAD && !(f & FL_FIELD) && !request_line_version_ok(c)) {
            c->fr_bad = "The request line does not end in an HTTP version (HTTP/1.1).";
            return -1;
        }
        c->fr_tail_n = 0;
        c->fr_line = FL_START | FL_FIELD;
        return 0;
    }
    if (ch == '\n') {
        c->fr_bad = "A line of the request head ends in a bare LF, not CRLF.";
        return -1;
    }
    if (ch == '\r') {
        c->fr_line = f | FL_CR;
        return 0;
    }
    if ((f & FL_START) && (f & FL_FIELD) && (ch == ' ' || ch == '\t')) {
        c->fr_bad = "A header line starts with white space (obs-fold): "
                    "send each field on one line.";
        return -1;
    }
    if (c->fr_state == FR_HEAD && !(f & FL_FIELD)) { /* the request line's last bytes */
        if (c->fr_tail_n == sizeof(c->fr_tail))
            memmove(c->fr_tail, c->fr_tail + 1, --c->fr_tail_n);
        c->fr_tail[c->fr_tail_n++] = (char)ch;
    }
    c->fr_line = f & ~(unsigned)FL_START;
    return 0;
}

/* One byte of a chunk-size line ("1a;name=value" CRLF). 0 to go on, -1. */
static int frame_size_byte(struct http_conn *c, unsigned char ch)
{
    unsigned f = c->fr_line;
    if (f & FL_CR) {
        if (ch != '\n' || !(f & FL_DIGITS)) {
            c->fr_bad = ch != '\n' ? "A CR in the chunk framing is not followed by LF."
                                   : "A chunk-size line has no size.";
            return -1;
        }
        c->fr_line = FL_START;
        c->fr_state = c->fr_remain ? FR_DATA : FR_TRAILER;
        if (c->fr_state == FR_TRAILER)
            c->fr_line = FL_START | FL_FIELD;
        return 0;
    }
    if (ch == '\n') {
        c->fr_bad = "A chunk-size line ends in a bare LF, not CRLF.";
        return -1;
    }
    if (ch == '\r') {
        c->fr_line = f | FL_CR;
        return 0;
    }
    int h = hexval(ch);
    if (h >= 0 && !(f & FL_EXT)) {
        if (c->fr_remain > (UINT64_MAX >> 4)) {
            c->fr_bad = "A chunk size is too large.";
            return -1;
        }
        c->fr_remain = (c->fr_remain << 4) | (uint64_t)h;
        c->fr_line = f | FL_DIGITS;
        return 0;
    }
    /* After the digits, only what http-parser also takes for the start of
     * an extension: its hex table reads a byte >= 0x80 as the digit 0
     * ("2" 0xff 0xff was a chunk of 512 bytes to it, of 2 here), and any
     * other byte is its error. */
    if (!(f & FL_EXT) && ch != ';' && ch != ' ') {
        c->fr_bad = "A chunk size has a byte that is neither a hex digit nor the start of an "
                    "extension (';').";
        return -1;
    }
    c->fr_line = f | FL_EXT; /* white space and extensions: http-parser reads them */
    return 0;
}

size_t frame_scan(struct http_conn *c, const char *data, size_t len)
{
    size_t i = c->fr_ahead;
    assert(i <= len);
    while (i < len && !c->fr_bad) {
        unsigned char ch = (unsigned char)data[i];
        switch (c->fr_state) {
        case FR_WAIT:
            return i;
        case FR_HEAD:
        case FR_TRAILER: {
            int r = frame_line_byte(c, ch);
            if (r < 0)
                return frame_fail(c, i, c->fr_bad);
            i++;
            if (r > 0) {
                c->fr_line = FL_START;
                c->fr_state = c->fr_state == FR_HEAD ? FR_WAIT : FR_HEAD;
            }
            break;
        }
        case FR_BODY:
        case FR_DATA: {
            size_t n = len - i;
            if ((uint64_t)n > c->fr_remain)
                n = (size_t)c->fr_remain;
            i += n;
            c->fr_remain -= n;
            if (c->fr_remain == 0)
                c->fr_state = c->fr_state == FR_BODY ? FR_HEAD : FR_DATA_CR;
            c->fr_line = FL_START;
            break;
        }
        case FR_DATA_CR:
        case FR_DATA_LF:
            if (ch != (c->fr_state == FR_DATA_CR ? '\r' : '\n'))
                return frame_fail(c, i, "Chunk data is not followed by CRLF.");
            i++;
            c->fr_state = c->fr_state == FR_DATA_CR ? FR_DATA_LF : FR_SIZE;
            c->fr_line = 0;
            break;
        case FR_SIZE:
            if (frame_size_byte(c, ch))
                return frame_fail(c, i, c->fr_bad);
            i++;
            break;
        default:
            assert(0);
        }
    }
    return i;
}

void frame_body(struct http_conn *c, const http_parser *p)
{
    c->fr_line = FL_START;
    c->fr_remain = 0;
    if (p->flags & F_CHUNKED) {
        c->fr_state = FR_SIZE;
        c->fr_line = 0;
    } else if ((p->flags & F_CONTENTLENGTH) && p->content_length > 0 &&
               p->content_length != ULLONG_MAX) {
        c->fr_state = FR_BODY;
        c->fr_remain = p->content_length;
    } else {
        c->fr_state = FR_HEAD;
    }
}

void frame_reset(struct http_conn *c)
{
    c->fr_state = FR_HEAD;
    c->fr_line = FL_START;
    c->fr_remain = 0;
    c->fr_ahead = 0;
    c->fr_bad = NULL;
    c->fr_tail_n = 0;
}
