/*
 * channel_limits.h - the one limit on the string fields of a result-channel
 * record (docs/formats.md), written here once and used by every writer and
 * reader: the CUDA harness (harness_common.cu), the Python owner (owner.py
 * reads this file), the judges (judge_parse.h; reference/pipeline/judge.py
 * reads this file too) and the runner's channel reader.
 *
 * A field's length is counted in bytes after JSON unescaping, as the judge
 * stores it (a \uXXXX escape is one byte there). A field longer than
 * CHANNEL_FIELD_MAX is cut to exactly CHANNEL_FIELD_MAX bytes, the last of
 * which are CHANNEL_CUT_MARK: by its writer, and by every reader when a
 * writer did not (a student's process can write any record). A long field is
 * never a malformed record: a malformed record ends the judge's reading, and
 * every case after it would be "not run".
 *
 * Plain C and C++ (nvcc), one #define per line: owner.py parses the lines.
 */
#ifndef CUGRADE_CHANNEL_LIMITS_H
#define CUGRADE_CHANNEL_LIMITS_H

#define CHANNEL_FIELD_MAX 4000
#define CHANNEL_CUT_MARK " [cut]"

#endif
