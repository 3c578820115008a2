"""The candidate's side of the attest bridge (docs/external-candidates.md).

One JSON object per line on the control channel (fd ATTEST_CHANNEL_FD, a stream socket); the
case's data region lives in the shared file ATTEST_SHM_FD, which attest grows and announces
("map": its size). Tensors are views into it, rebuilt only when the tensor table ("layout")
changes.
"""
import ctypes
import json
import mmap
import os
import socket
import sys
import traceback
import types

import numpy as np

from . import PROTOCOL

NUMPY_DTYPES = {"uint8": np.uint8, "int32": np.int32, "float32": np.float32,
                "bf16": np.uint16, "float64": np.float64}


class Fatal(Exception):
    """A candidate that cannot be served at all (attest reports it as bad input)."""

    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind
        self.message = message


class Channel:
    def __init__(self, sock, shm_fd):
        self.sock = sock
        self.rfile = sock.makefile("rb", buffering=65536)
        self.shm_fd = shm_fd

    @classmethod
    def from_environment(cls):
        try:
            version = int(os.environ["ATTEST_PROTOCOL"])
            chan = int(os.environ["ATTEST_CHANNEL_FD"])
            shm = int(os.environ["ATTEST_SHM_FD"])
        except (KeyError, ValueError):
            print("attest_candidate: not started by attest (ATTEST_PROTOCOL, ATTEST_CHANNEL_FD "
                  "and ATTEST_SHM_FD are not set); run it with attest run --candidate "
                  "py:PATH.py:NAME", file=sys.stderr)
            sys.exit(2)
        if version != PROTOCOL:
            print(f"attest_candidate: attest speaks protocol {version}, this package "
                  f"{PROTOCOL}", file=sys.stderr)
        return cls(socket.socket(fileno=chan), shm)

    def send(self, obj):
        self.sock.sendall(json.dumps(obj, separators=(",", ":")).encode() + b"\n")

    def fatal(self, kind, message):
        print(f"attest_candidate: {message}", file=sys.stderr)
        self.send({"attest": PROTOCOL, "op": "fatal", "kind": kind, "message": message})

    def receive(self):
        line = self.rfile.readline()
        return json.loads(line) if line else None


_PROT_NONE, _PROT_RW = 0, 3
_libc = None


def _mprotect(addr, length, prot):
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    if _libc.mprotect(addr, length, prot) != 0:
        raise OSError(ctypes.get_errno(), f"mprotect({addr:#x}, {length}) failed")


class HostViews:
    """numpy views of the shared region, cached per tensor table."""

    def __init__(self, shm_fd):
        self.shm_fd = shm_fd
        self.map = None
        self.map_size = 0
        self.base = None
        self.cache_key = None
        self.cached = None
        self.protected = []

    def region(self, msg):
        self.unprotect()
        if msg["map"] != self.map_size:
            self.map = mmap.mmap(self.shm_fd, msg["map"])
            self.map_size = msg["map"]
            self.base = np.frombuffer(self.map, dtype=np.uint8)
            self.cache_key = None
        self.protect(msg.get("unplaced", ()))
        return self.base[:msg["size"]]

    def protect(self, ranges):
        """A sparse pool's case (past 2^31 bytes): the region is gigabytes of which attest
        placed only the pages the case reaches; the rest ("unplaced", [offset, length] pairs)
        is made inaccessible for the run, as the arena is for a C candidate, so a kernel that
        reads there (a 32-bit offset that wrapped) dies of SIGSEGV: a CRASH, not a quiet read
        of zeros. Whole OS pages inside each range only."""
        if not ranges:
            return
        page = mmap.PAGESIZE
        addr = self.base.ctypes.data
        for offset, length in ranges:
            lo = -(-offset // page) * page
            hi = (offset + length) // page * page
            if hi > lo:
                _mprotect(addr + lo, hi - lo, _PROT_NONE)
                self.protected.append((lo, hi - lo))

    def unprotect(self):
        addr = self.base.ctypes.data if self.base is not None else 0
        for lo, length in self.protected:
            _mprotect(addr + lo, length, _PROT_RW)
        self.protected = []

    def tensors(self, table):
        """Views of the tensors of a table (the region mapped by region())."""
        if table.key != self.cache_key:
            views = {}
            for t in table.tensors:
                raw = self.base[t["offset"]:t["offset"] + t["nbytes"]]
                views[t["name"]] = raw.view(NUMPY_DTYPES[t["dtype"]]).reshape(t["shape"])
            self.cached = views
            self.cache_key = table.key
        return self.cached


class Table:
    """What a run message says about its case when the case's shapes or parameters changed:
    kept, and reused by the short messages that follow (re-runs, cases of the same shapes)."""

    def __init__(self, msg):
        self.key = msg["layout"]
        self.tensors = msg["tensors"]
        self.outputs = {t["name"] for t in self.tensors if t["role"] == "output"}
        self.params = _params(msg)


class OutputError(Exception):
    """An output the candidate handed back that cannot be written in place."""


def _params(msg):
    p = types.SimpleNamespace(**msg["params"])
    p.kernel = msg["kernel"]
    p.conventions = dict(kv.split("=", 1) for kv in msg["conventions"].split(",") if kv)
    return p


def _take_outputs(table, views, given, returned):
    """Copies outputs the candidate returned (or put in the mapping) into the views."""
    outputs = table.outputs
    pending = {}
    for name in outputs:
        if given.get(name) is not views[name]:
            pending[name] = given.get(name)
    if returned is not None:
        if not hasattr(returned, "items"):
            raise OutputError(f"returned {type(returned).__name__}, expected None or "
                              "{output name: array}")
        for name, value in returned.items():
            if name not in outputs:
                raise OutputError(f"returned '{name}', which is not an output "
                                  f"(outputs: {', '.join(sorted(outputs))})")
            pending[name] = value
    for name, value in pending.items():
        dst = views[name]
        if value is None:
            raise OutputError(f"removed output '{name}' from the tensors")
        if value is dst:
            continue
        if tuple(value.shape) != tuple(dst.shape) or str(value.dtype) != str(dst.dtype):
            raise OutputError(f"'{name}' is {value.dtype} {list(value.shape)}, expected "
                              f"{dst.dtype} {list(dst.shape)}")
        dst[...] = value


def serve_declared(decl, channel=None):
    channel = channel or Channel.from_environment()
    host = HostViews(channel.shm_fd)
    device = None
    if decl.device == "cuda":
        try:
            from ._device import DeviceViews
            device = DeviceViews()
        except Exception as e:
            traceback.print_exc()
            channel.fatal("format", f"device='cuda' needs torch with a GPU: "
                          f"{type(e).__name__}: {e}")
            return
    channel.send(decl.hello())
    table = None
    while True:
        msg = channel.receive()
        if msg is None or msg.get("op") == "stop":
            return
        if msg.get("op") != "run":
            channel.send({"op": "error", "case": msg.get("case", -1), "kind": "protocol",
                          "message": f"unknown op {msg.get('op')!r}"})
            continue
        case = msg["case"]
        try:
            if "tensors" in msg:
                table = Table(msg)
            elif table is None or table.key != msg["layout"]:
                channel.send({"op": "error", "case": case, "kind": "protocol",
                              "message": f"no table for layout {msg['layout']}"})
                continue
            p = table.params
            if msg["check_supports"] and decl.supports is not None and not decl.supports(p):
                channel.send({"op": "unsupported", "case": case})
                continue
            if device is not None and "unplaced" in msg:
                # Staging copies the whole region to the GPU: gigabytes here, and it would
                # read the unplaced pages.
                channel.send({"op": "unsupported", "case": case,
                              "message": "device='cuda' does not stage a sparse pool (past 2^31 "
                              "bytes)"})
                continue
            host.region(msg)
            if device is None:
                views = host.tensors(table)
                given = dict(views)
                returned = decl.fn(given, p)
                _take_outputs(table, views, given, returned)
            else:
                device.run(decl.fn, msg, table, host, p, _take_outputs)
        except OutputError as e:
            channel.send({"op": "error", "case": case, "kind": "output", "message": str(e)})
            continue
        except Exception as e:
            traceback.print_exc()
            channel.send({"op": "error", "case": case, "kind": "exception",
                          "message": f"{type(e).__name__}: {e}"[:400]})
            continue
        channel.sock.sendall(b'{"op":"done","case":%d}\n' % case)
