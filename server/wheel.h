/*
 * wheel.h - the student client as a wheel (PEP 427), built in memory from
 * the one module the server embeds (server/bundle.c), so that
 * `pip install <server>/client/cugrade-VERSION-py3-none-any.whl` works in a
 * fresh venv with no index and no build backend: a wheel is a zip that pip
 * unpacks; nothing is built on the student's side, and building it here
 * needs no Python on the machine that compiles the server.
 *
 * The zip stores its entries uncompressed, with a fixed date (1980-01-01),
 * so one module gives the same bytes on every start (the ETag is stable).
 * The metadata matches client/pyproject.toml: name cugrade, the module's
 * __version__, the console script `cugrade = cugrade:main`.
 */
#ifndef CUGRADE_WHEEL_H
#define CUGRADE_WHEEL_H

#include <stddef.h>

struct wheel {
    char name[96]; /* cugrade-0.2.0-py3-none-any.whl */
    unsigned char *data;
    size_t len;
};

/* Build the wheel of module (len bytes, the text of cugrade.py) at version
 * (letters, digits, '.', '+', '-'; a '-' is written '_' in the names, as
 * PEP 427 asks). Fills *w (free with wheel_free). 0, -EINVAL (an empty or
 * too long version, a character outside the set), -ENOMEM. */
int wheel_build(const char *module, size_t len, const char *version, struct wheel *w);

/* Release w's data (w itself may be reused). NULL-safe. */
void wheel_free(struct wheel *w);

#endif
