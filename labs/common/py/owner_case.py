"""labs/common/py/owner_case.py - one case's buffers in a Python run's owner
(owner.py): the inputs generated from the case's seed, the outputs
poisoned, each followed by a guard, allocated by the backend
(owner_gpu.py) and shared with the tenant. Trusted: imported by owners
only."""
import gen

POISON = 0x7FDEADED
GUARD_F32 = 0x7FC0FFEE
GUARD_BYTES = 4 << 20
CHUNK = 1 << 24


def guard_word(m):
    """What an input's guard holds: 0 after int64 data, else GUARD_F32."""
    return 0 if m["dtype"] == "int64" else GUARD_F32


class Case:
    """One case's buffers: inputs (filled from the seed), outputs (poisoned),
    each followed by a guard, shared with the tenant."""

    serials = 0

    def __init__(self, be, lab, params, case_seed, guard):
        Case.serials += 1
        self.serial = Case.serials   # never reused, unlike id(): the tenant keys its mappings on it
        self.be, self.lab, self.params = be, lab, params
        self.guard = GUARD_BYTES if guard else 0
        self.bufs, self.views, self.meta = {}, {}, []
        try:
            for name, dtype, shape, genname, k in lab["INPUTS"]:
                self._add(name, dtype, shape(params), "in", (genname, k))
            for name, dtype, shape in lab["OUTPUTS"]:
                self._add(name, dtype, shape(params), "out", None)
        except BaseException:   # out of memory half way: nothing kept (owner.py new_case)
            self.free()
            raise
        self.fill(case_seed)

    def _add(self, name, dtype, shape, role, how):
        np = self.be.np
        count = int(np.prod(shape))
        itemsize = np.dtype(dtype).itemsize
        buf = self.be.alloc(count * itemsize + self.guard)
        self.bufs[name] = buf
        self.views[name] = self.be.view(buf, dtype, count)
        self.meta.append({"name": name, "dtype": dtype, "shape": list(shape), "role": role,
                          "how": how, "count": count, "itemsize": itemsize})

    def _inputs(self):
        """Each input: its description, its view and its chunks (start,
        count): fill and inputs_modified walk the same ones."""
        for m in self.meta:
            if m["role"] == "in":
                yield m, self.views[m["name"]], [(s, min(CHUNK, m["count"] - s))
                                                 for s in range(0, m["count"], CHUNK)]

    def _guard_view(self, m):
        return self.be.view(self.bufs[m["name"]], "uint32", self.guard // 4,
                            m["count"] * m["itemsize"])

    def _gen(self, m, seed, start, count, out=None):
        genname, k = m["how"]
        xp = self.be.xp
        own = (self.lab.get("GEN") or {}).get(genname)   # a lab's own generator (lab.py GEN)
        return gen.generate(xp, genname, gen.stream(seed, k), start, count, self.params, own,
                            out=out)

    def fill(self, case_seed, sync=True):
        """Inputs from case_seed (chunk by chunk: on a GPU each chunk is
        generated in place, gen.generate's out), guards set; then waits for
        the GPU unless told not to (a batch's fill waits once, time_sample)."""
        for m, v, chunks in self._inputs():
            for s, c in chunks:
                dst = v[s:s + c]
                got = self._gen(m, case_seed, s, c, out=dst)
                if got is not dst:
                    dst[...] = got
            if self.guard:
                self.be.fill_word(self._guard_view(m), guard_word(m), sync=False)
        if sync:
            self.be.sync()

    def poison(self, sync=True):
        for m in self.meta:
            if m["role"] == "out":
                self.be.fill_word(self.views[m["name"]].view("uint32"), POISON, sync=False)
                if self.guard:
                    self.be.fill_word(self._guard_view(m), POISON, sync=False)
        if sync:
            self.be.sync()

    def inputs_modified(self, case_seed):
        bad = 0
        for m, v, chunks in self._inputs():
            for s, c in chunks:
                want = self._gen(m, case_seed, s, c)
                bad += self.be.count_ne(v[s:s + c].view(want.dtype), want)
            if self.guard:
                bad += self.be.count_ne_word(self._guard_view(m), guard_word(m))
        return bad

    def oob_writes(self):
        bad = 0
        for m in self.meta:
            if m["role"] == "out" and self.guard:
                bad += self.be.count_ne_word(self._guard_view(m), POISON)
        return bad

    def out_view(self):
        """The output buffer (one per lab), on the device."""
        outs = [m for m in self.meta if m["role"] == "out"]
        assert len(outs) == 1
        return self.views[outs[0]["name"]]

    def output(self):
        """The output as float32 host bytes."""
        return self.be.to_host(self.out_view()).astype("float32", copy=False)

    def outs(self):
        return [m for m in self.meta if m["role"] == "out"]

    def sample_arg(self):
        """What lab.py's sample_ok gets: the output view, or (a lab with
        several outputs) the views by name."""
        outs = self.outs()
        return self.out_view() if len(outs) == 1 else {m["name"]: self.views[m["name"]]
                                                        for m in outs}

    def record(self):
        """The case record's output fields and payload: one output as float32
        (the CUDA harnesses' format); several as their raw bytes, one after
        the other in lab.py's order, described in "outputs"."""
        outs = self.outs()
        if len(outs) == 1:
            out = self.output()
            return {"dtype": "f32", "count": int(out.size)}, out.tobytes()
        parts = [self.be.to_host(self.views[m["name"]]).tobytes() for m in outs]
        desc = [{"name": m["name"], "dtype": m["dtype"], "count": m["count"]} for m in outs]
        return {"dtype": "mixed", "count": sum(m["count"] for m in outs), "outputs": desc}, \
            b"".join(parts)

    def describe(self):
        """What the tenant is sent: per buffer its shape, dtype and how to map
        it; the descriptors go beside the message (SCM_RIGHTS)."""
        args, fds = [], []
        for m in self.meta:
            d, f = self.be.export(self.bufs[m["name"]])
            d.update({"name": m["name"], "dtype": m["dtype"], "shape": m["shape"],
                      "role": m["role"]})
            if f:
                d["fd_index"] = len(fds)
                fds.extend(f)
            args.append(d)
        order = {n: i for i, n in enumerate(m["name"] for m in self.meta)}
        return {"op": "call", "args": [args[order[n]] for n in self.lab["ARGS"]],
                "buffers_id": self.serial}, fds

    def free(self):
        self.views.clear()
        for b in self.bufs.values():
            self.be.free(b)
        self.bufs.clear()
