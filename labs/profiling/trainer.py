"""trainer.py - the process that runs a train() for the profiling lab's owner
(labs/profiling/lab.py; docs/python.md, docs/labs.md "The profiling lab").

    python3 -I -B trainer.py FILE FD     (FILE "-": named by "load")

One trainer runs the starter (the baseline: trusted code, started before any
student code runs in the sandbox), another the student's file (untrusted
once imported). The owner sends one JSON message per request on the socket
FD (SOCK_SEQPACKET) and believes nothing of the answers but "look now":

  {"op":"imports"}  import NumPy, PyTorch and torch._dynamo, nothing more:
                    no device, no CUDA context (a warm run of the runner's
                    pool, lab.py --pool, before its job is known)
  {"op":"runtime","warm":bool}
                    import PyTorch, pick the device (CUDA when there is one);
                    with "warm", train a throwaway model of the lab's shape
                    for a few steps (warm): our code, before any student code
  {"op":"load","path":P}
                    import FILE (or P: a warm trainer's, started with "-"),
                    find train()
  {"op":"call","steps":S,"profile":bool,"layout":{...}} + 2 descriptors:
                    the inputs (memfd: X, Y, order, initial weights) and the
                    outputs (memfd, poisoned with NaN by the owner): load the
                    weights into the model, make the optimizer, call
                    train(model, optimizer, data, S), write the S losses and
                    the final weights into the outputs, answer. With
                    "profile", train() runs under torch.profiler and the
                    answer carries the events it recorded, by name: the
                    owner counts the syncs and copies from them. Those
                    counts come from this process, so a hostile file can
                    forge them (docs/labs.md says what that means).
"""
import importlib.util
import json
import mmap
import os
import socket
import sys
import time
import traceback

MAX_MSG = 1 << 16
MAX_NAMES = 300


def where(e, path):
    """The traceback's frames in the student's file, paths cut to its name."""
    base = os.path.basename(path)
    lines = []
    for fr in traceback.extract_tb(e.__traceback__):
        if fr.filename == path:
            lines.append("%s line %d in %s: %s" % (base, fr.lineno, fr.name,
                                                     (fr.line or "").strip()))
    msg = "".join(traceback.format_exception_only(type(e), e)).strip()
    msg = msg.replace(os.path.dirname(path) + "/", "")
    return "; ".join(lines[-4:]) or base, msg[:600]


class Data:
    """What train() gets as `data`."""

    def __init__(self, X, Y, order, device):
        self.X, self.Y, self.order, self.device = X, Y, order, device


def build_model(torch, cfg, device):
    nn = torch.nn
    d, h, c = cfg["features"], cfg["hidden"], cfg["classes"]
    return nn.Sequential(nn.Linear(d, h), nn.ReLU(), nn.Linear(h, h), nn.ReLU(),
                         nn.Linear(h, c)).to(device)


def warm(torch, cfg, device):
    """A few steps of our own training on the device, on a throwaway model
    and made-up data: the CUDA kernels a training step uses get loaded and
    cuBLAS and the caching allocator set up in this process, before any of
    the student's code runs. Otherwise the student's first call paid for
    them inside the GPU's exclusive hold: 7.1 s of an 11.3 s hold on an
    H200 (docs/log/2026-12-01-hold-priority.md). Both the device-side path
    (the data moved once, batches gathered there) and the starter's (rows
    stacked on the host and copied) are taken, and a loss read back.
    Returns the seconds it took."""
    t0 = time.perf_counter()
    F = torch.nn.functional
    g = torch.Generator().manual_seed(0)
    n, b = 4 * cfg["batch"], cfg["batch"]
    X = torch.randn(n, cfg["features"], generator=g)
    Y = torch.randint(0, cfg["classes"], (n,), generator=g)
    order = torch.randint(0, n, (2, b), generator=g)
    model = build_model(torch, cfg, device)
    opt = torch.optim.SGD(model.parameters(), lr=cfg["lr"], momentum=cfg["momentum"])
    Xd, Yd, od = X.to(device), Y.to(device), order.to(device)
    losses = torch.empty(3, device=device)
    model.train()
    for s in range(3):
        if s < 2:
            x, y = Xd[od[s]], Yd[od[s]]
        else:
            x = torch.stack([X[i] for i in order[0].tolist()]).to(device)
            y = Y[order[0]].to(device)
        out = model(x)
        loss = F.cross_entropy(out, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses[s] = loss.detach()
        float(loss.item())
        (out.argmax(dim=1) == y).float().mean().cpu()
    losses.cpu()
    if device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - t0


def views(np, torch, mm, lay):
    """Tensors over the input mapping (a private, copy-on-write mapping: the
    student's writes stay in this process)."""
    out = {}
    for name, (off, dtype, shape) in lay.items():
        n = 1
        for s in shape:
            n *= s
        a = np.frombuffer(mm, dtype=dtype, count=n, offset=off).reshape(shape)
        out[name] = torch.from_numpy(a)
    return out


def event_counts(prof):
    """{"cpu": {name: n}, "top": {name: n}, "dev": {name: n}} of the
    profile's events: host side (aten ops, CUDA runtime calls), the host
    ops called by train()'s own Python code (no aten op above them), and
    device side (kernels, memcpys). Read from the profiler's raw event list
    (raw_events); PyTorch's own list (prof.events()) is the fallback where
    that list is not there. Both give the same counts
    (tests/labs/profiling_events.t)."""
    try:
        evs = raw_events(prof)
    except Exception:  # noqa: B902 - a PyTorch without that list: its own, as before
        evs = tree_events(prof)
    cpu, top, dev = {}, {}, {}
    for name, kind, is_top in evs:
        name = name[:80]
        d = cpu if kind.endswith("CPU") else dev
        d[name] = d.get(name, 0) + 1
        if d is cpu and is_top:
            top[name] = top.get(name, 0) + 1
    trim = lambda d: dict(sorted(d.items(), key=lambda kv: -kv[1])[:MAX_NAMES])  # noqa: E731
    return {"cpu": trim(cpu), "top": trim(top), "dev": trim(dev)}


def tree_events(prof):
    """raw_events' list from PyTorch's own (FunctionEvent objects)."""
    return [(str(e.name), str(getattr(e, "device_type", "CPU")),
             getattr(e, "cpu_parent", None) is None) for e in prof.events()]


def raw_events(prof):
    """[(name, device kind, no CPU parent)] of a finished profile, as
    prof.events() lists them, from the profiler's raw (Kineto) events.
    prof.events() makes a Python object of every event with its shapes and
    stack, then a tree: 1.9-2.7 s of CPU for the starter's 40 profiled
    steps on an H200 host, inside the check run, 0.5 s for a fast loop
    (docs/log/2026-12-02-bytecode.md). This does only what the counts
    need, the same way PyTorch does it (torch/autograd/profiler.py
    _parse_kineto_results, profiler_util.py EventList._build_tree): drop
    the names PyTorch filters out; give a runtime call the thread of the op
    it belongs to; nest each thread's synchronous CPU events by their
    [start, end); then drop an event that is its parent's only child and
    has its parent's name (EventList._remove_dup_nodes). Raises where this
    PyTorch keeps no raw list or names its parts otherwise: event_counts
    then takes prof.events(), so our code never fails the student's call."""
    import torch
    from torch.autograd.profiler_util import _filter_name
    cpu_type = torch.autograd.DeviceType.CPU
    ev = []
    for e in prof.profiler.kineto_results.events():
        name = e.name()
        if _filter_name(name) or getattr(e, "is_hidden_event", lambda: False)():
            continue
        if hasattr(e, "start_ns"):
            t0, t1 = e.start_ns(), e.end_ns()
        else:  # PyTorch 1.x (Debian's, CI): whole microseconds, as its tree has them
            t0 = e.start_us()
            t1 = t0 + e.duration_us()
        dt = e.device_type()
        sync = dt == cpu_type and not e.is_async() and e.start_thread_id() == e.end_thread_id()
        ev.append([name, str(dt), t0, t1, e.start_thread_id(), sync, e.correlation_id(),
                   e.linked_correlation_id()])
    return nest(ev)


def nest(ev):
    """raw_events' list from its events, each [name, kind, start, end,
    thread, synchronous CPU event, correlation id, the correlation id of
    the op it belongs to (0: none)], in the profiler's order."""
    link = {e[6]: e[4] for e in ev if e[7] == 0 and e[5]}
    for e in ev:
        if e[0].startswith("ProfilerStep#"):
            e[0] = "ProfilerStep*"
        if e[7] > 0 and e[7] in link:
            e[4] = link[e[7]]
    order = sorted(range(len(ev)), key=lambda i: (ev[i][2], -ev[i][3]))
    parent = [None] * len(ev)
    kids = [[] for _ in ev]
    stacks = {}
    for i in order:
        if not ev[i][5]:
            continue
        st = stacks.setdefault(ev[i][4], [])
        while st:
            p = st[-1]
            if ev[i][2] >= ev[p][3] or ev[i][3] > ev[p][3]:
                st.pop()
            else:
                parent[i] = p
                kids[p].append(i)
                break
        st.append(i)
    while True:
        gone = set()
        for i in order:
            p = parent[i]
            if p is not None and ev[p][0] == ev[i][0] and len(kids[p]) == 1:
                kids[p] = kids[i]
                for k in kids[i]:
                    parent[k] = p
                gone.add(i)
        if not gone:
            break
        order = [i for i in order if i not in gone]
    return [(ev[i][0], ev[i][1], parent[i] is None) for i in order]


def losses_of(np, torch, ret, steps):
    if isinstance(ret, torch.Tensor):
        v = ret.detach().double().cpu().reshape(-1).numpy()
    else:
        v = np.array([float(x.detach().double().cpu()) if isinstance(x, torch.Tensor) else
                      float(x) for x in ret], dtype=np.float64)
    if v.shape[0] != steps:
        raise ValueError("train() returned %d losses for %d steps: return the loss of every "
                         "step" % (v.shape[0], steps))
    return v


def call(st, msg, fds):
    np, torch = st["np"], st["torch"]
    lay = msg["layout"]
    mi = mmap.mmap(fds[0], msg["in_bytes"], flags=mmap.MAP_PRIVATE,
                   prot=mmap.PROT_READ | mmap.PROT_WRITE)
    mo = mmap.mmap(fds[1], msg["out_bytes"], flags=mmap.MAP_SHARED,
                   prot=mmap.PROT_READ | mmap.PROT_WRITE)
    t = views(np, torch, mi, lay["in"])
    model = st["model"]
    with torch.no_grad():
        for k, p in enumerate(model.parameters()):
            p.copy_(t["p%d" % k])
    cfg = st["cfg"]
    opt = torch.optim.SGD(model.parameters(), lr=cfg["lr"], momentum=cfg["momentum"])
    data = Data(t["X"], t["Y"], t["order"], st["device"])
    steps = msg["steps"]
    counts = None
    if msg.get("profile"):
        from torch.profiler import ProfilerActivity, profile
        acts = [ProfilerActivity.CPU]
        if st["device"].type == "cuda":
            acts.append(ProfilerActivity.CUDA)
        # (Leaving the profile synchronizes the device itself: one
        # cudaDeviceSynchronize in every count, the starter's too.)
        with profile(activities=acts) as prof:
            ret = st["fn"](model, opt, data, steps)
        counts = event_counts(prof)
    else:
        ret = st["fn"](model, opt, data, steps)
    o = views(np, torch, mo, lay["out"])
    o["losses"].copy_(torch.from_numpy(losses_of(np, torch, ret, steps)))
    with torch.no_grad():
        for k, p in enumerate(model.parameters()):
            o["p%d" % k].copy_(p.detach().cpu().reshape(o["p%d" % k].shape))
    mo.flush()
    return counts


def import_dynamo():
    """PyTorch 2's optimizer.step() imports torch._dynamo at its first call:
    1.1 s of CPU on an H200 host with the venv's bytecode (6 s without),
    which the job's first training step paid under its reservation. A warm
    trainer imports it before its job instead: no device, no CUDA context
    (checked on an H200: torch.cuda.is_initialized() stays False and
    nvidia-smi lists no process). True when imported; a PyTorch without it
    (Debian's 1.13) or one that refuses it only loses the saving."""
    try:
        importlib.import_module("torch._dynamo")
    except Exception:  # noqa: BLE001 - ImportError, or a RuntimeError of an unsupported Python
        return False
    return True


def main():
    path, fd = sys.argv[1], int(sys.argv[2])
    sock = socket.socket(fileno=fd)
    st = {}
    while True:
        try:
            data, fds, _, _ = socket.recv_fds(sock, MAX_MSG, 4)
        except OSError:
            return
        if not data:
            return
        msg = json.loads(data)
        ans = {"ok": True}
        try:
            if msg["op"] == "imports":
                # A warm trainer's start-up (lab.py --pool): the imports,
                # which take seconds, before the job; no CUDA context, so
                # no GPU memory is taken before the job's reservation.
                import numpy  # noqa: F401
                import torch
                ans["torch"] = torch.__version__
                ans["dynamo"] = import_dynamo()
            elif msg["op"] == "runtime":
                # Before any of the student's code: PyTorch and the device.
                import numpy as np
                import torch
                st.update(np=np, torch=torch, cfg=msg["cfg"])
                st["device"] = torch.device("cuda" if torch.cuda.is_available() else "cpu")
                st["model"] = build_model(torch, msg["cfg"], st["device"])
                if msg.get("warm"):
                    # Only a saving: a warm-up that fails (ours, before any
                    # student code) leaves the first call to pay, as before.
                    try:
                        ans["warm_s"] = round(warm(torch, msg["cfg"], st["device"]), 4)
                    except Exception as e:  # noqa: B902
                        ans["warm_error"] = str(e)[:300]
                ans.update(device=st["device"].type, torch=torch.__version__,
                           name=torch.cuda.get_device_name() if st["device"].type == "cuda"
                           else "cpu")
            elif msg["op"] == "load":
                path = msg.get("path") or path
                spec = importlib.util.spec_from_file_location("submission", path)
                mod = importlib.util.module_from_spec(spec)
                sys.modules["submission"] = mod
                spec.loader.exec_module(mod)
                st["fn"] = getattr(mod, "train", None)
                if not callable(st["fn"]):
                    ans = {"ok": False, "error": "your file defines no function train(...)",
                           "where": "define it at the top level of your file, as in starter.py"}
            elif msg["op"] == "call":
                counts = call(st, msg, fds)
                if counts is not None:
                    ans["counts"] = counts
        except BaseException as e:  # noqa: B902 - everything after load is the student's
            w, m = where(e, path)
            ans = {"ok": False, "error": m, "where": w}
        finally:
            for f in fds:
                try:
                    os.close(f)
                except OSError:
                    pass
        out = json.dumps(ans).encode()
        if len(out) > MAX_MSG:
            ans.pop("counts", None)
            ans["truncated"] = True
            out = json.dumps(ans).encode()
        sock.send(out)


if __name__ == "__main__":
    main()
