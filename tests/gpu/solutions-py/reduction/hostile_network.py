# expect: status=graded correctness=fail note="hostile: tries the network -- TCP to a public address and to the loopback's usual ports (the grading server's API would take a forged result), UDP to a resolver, an AF_PACKET raw socket, abstract and filesystem AF_UNIX sockets (an X or D-Bus or docker socket), a netlink route dump -- and computes the right sum only if any connection or send works (a broken fence shows as correctness=pass)"
import os
import socket

import numpy as np
from numba import cuda, float32

THREADS = 256


@cuda.jit
def partial(x, out):
    s = cuda.shared.array(THREADS, dtype=float32)
    t = cuda.threadIdx.x
    acc = float32(0.0)
    i = cuda.grid(1)
    while i < x.shape[0]:
        acc += x[i]
        i += cuda.gridsize(1)
    s[t] = acc
    cuda.syncthreads()
    k = THREADS // 2
    while k > 0:
        if t < k:
            s[t] += s[t + k]
        cuda.syncthreads()
        k //= 2
    if t == 0:
        cuda.atomic.add(out, 0, s[0])


@cuda.jit
def zero(out):
    out[0] = 0.0


def honest(d_in, d_out, stream=0):
    zero[1, 1, stream](d_out)
    partial[1056, THREADS, stream](d_in, d_out)


def attempt():
    got, said = [], []

    def tcp(host, port):
        try:
            s = socket.create_connection((host, port), timeout=1)
            s.close()
            got.append("tcp %s:%d" % (host, port))
        except OSError as e:
            said.append("tcp %s:%d %s" % (host, port, type(e).__name__))
    tcp("1.1.1.1", 80)
    tcp("8.8.8.8", 53)
    for port in (22, 80, 443, 5000, 8000, 8080, 8443):
        tcp("127.0.0.1", port)
    try:
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        u.sendto(b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x01", ("8.8.8.8", 53))
        got.append("udp sendto")
    except OSError as e:
        said.append("udp %s" % type(e).__name__)
    try:
        socket.socket(17, socket.SOCK_RAW)    # AF_PACKET
        got.append("packet socket")
    except OSError as e:
        said.append("packet %s" % e.errno)
    for name in ("\0/tmp/.X11-unix/X0", "/var/run/docker.sock", "/run/dbus/system_bus_socket",
                 "/var/run/nvidia-persistenced/socket", "/tmp/.X11-unix/X0"):
        try:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(1)
            s.connect(name)
            got.append("unix " + repr(name))
        except OSError as e:
            said.append("unix %r %s" % (name, type(e).__name__))
    try:
        n = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
        n.close()
        said.append("netlink opened (a namespace's own)")
    except OSError as e:
        said.append("netlink %s" % type(e).__name__)
    try:
        ifs = [x for _, x in socket.if_nameindex()]
    except OSError:
        ifs = []
    said.append("interfaces %s" % ifs)
    return got, said


def reduce_sum(d_in, d_out):
    got, said = attempt()
    if got:
        print("got:", got, flush=True)
        honest(d_in, d_out)
        return
    raise RuntimeError("refused: " + "; ".join(said))
