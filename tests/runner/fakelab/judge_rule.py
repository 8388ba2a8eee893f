"""The real judges' rules for a channel's records, for CI's stand-in judges
(tests/runner/simjudge.py for the Python labs, fakelab/judge.py for the fake
CUDA lab): a record the real judge refuses, they refuse too, so that a
record a harness or an owner changes is checked against what the GPU
host's judge reads, not against Python's json."""

import json

# labs/common/judge_common.cu jd_read_channel: the types it reads or skips;
# any other is "a record of unknown type".
KNOWN = ("device", "case", "timing", "hold", "done", "harness_error")


def flat(rec):
    """labs/common/judge_parse.h jd_parse_obj: an object of at most 32 keys
    whose values are strings, numbers, booleans, null or arrays of numbers.
    Anything else is a malformed record, and the judge reads no further."""
    def num(x):
        return isinstance(x, (int, float)) and not isinstance(x, bool)
    return isinstance(rec, dict) and len(rec) <= 32 and all(
        v is None or isinstance(v, (str, bool)) or num(v) or
        (isinstance(v, list) and all(num(x) for x in v)) for v in rec.values())


def next_record(data, pos, errors):
    """The record whose line starts at data[pos]: (record, the position after
    its line), or (None, None) where the real judge stops reading -- the
    channel ends mid-line, or the line is not a flat record -- with the
    judge's error appended to errors. A record of a type the judge does not
    know is returned with its error appended (the judge reads on unless it
    carries bytes: then its framing cannot be trusted)."""
    nl = data.find(b"\n", pos)
    if nl < 0:
        errors.append("the channel ends in the middle of a record")
        return None, None
    try:
        rec = json.loads(data[pos:nl])
    except ValueError:
        rec = None
    if not flat(rec):
        errors.append("a malformed record in the channel")
        return None, None
    t = rec.get("type")
    if t not in KNOWN:
        errors.append("a record without a type" if t is None else "a record of unknown type")
        if "bytes" in rec:
            return None, None
    return rec, nl + 1
