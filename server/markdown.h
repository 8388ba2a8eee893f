/*
 * markdown.h - GitHub-flavoured Markdown to safe HTML, for the texts that
 * course staff and the grader write for students: lab handouts (README.md)
 * and feedback (hints). Rendered by Debian's libcmark-gfm, the library
 * GitHub itself uses, with the table, strikethrough, autolink and tagfilter
 * extensions and fenced code.
 *
 * Safety: raw HTML is never passed through (libcmark-gfm's safe default: no
 * CMARK_OPT_UNSAFE, so an HTML block or tag becomes "<!-- raw HTML omitted
 * -->"), links and images with javascript:, vbscript:, file: or data: URLs
 * (but data:image) get an empty address, and every text byte is escaped. The
 * tagfilter extension stays on as a second line should the safe mode ever be
 * turned off. The only markup this module adds itself is written here.
 *
 * Presentation, for the pages: headings move one level down (the page owns
 * its <h1>), and every table and code block sits in a keyboard-focusable box
 * (<div class="scroll" tabindex="0" role="region">) that scrolls on its own
 * on a narrow screen instead of widening the page.
 *
 * Out of memory: libcmark-gfm's allocator aborts the process (its contract);
 * appends to the html_buf follow html.h's sticky-failure rule.
 */
#ifndef CUGRADE_MARKDOWN_H
#define CUGRADE_MARKDOWN_H

#include "html.h"

/* Append the HTML of the Markdown document md (NULL or "" = nothing) to b:
 * block elements (<h2>..., <p>, <ul>, <table>, <pre>). */
void markdown_render(struct html_buf *b, const char *md);

/* Append the HTML of a short feedback text md (one hint, one message) to b,
 * for use inside an element such as <li>: a text that is a single paragraph
 * comes without its <p>...</p>; anything longer renders as blocks. */
void markdown_render_inline(struct html_buf *b, const char *md);

#endif
