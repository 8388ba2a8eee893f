"""The real judges' rules for a channel's records, for CI's stand-in judges
(tests/runner/simjudge.py for the Python labs, fakelab/judge.py for the fake
CUDA lab): a record the real judge refuses, they refuse too, so that a
record a harness or an owner changes is checked against what the GPU
host's judge reads, not against Python's json."""

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
