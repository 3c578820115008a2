"""device="cuda": the case's whole data region (every tensor with attest's canaries around it,
outputs already poisoned) is copied to one flat uint8 GPU buffer, the candidate gets torch views
of it, and after it returns and the GPU is synchronized the whole region is copied back. So an
output element the kernel never wrote still holds poison, a write past a tensor lands in a
canary, and a write into an input (a page table clamped in place) changes the input attest
checksums: each is judged by attest exactly as for a host candidate. Caches stay one flat uint8
tensor with their padded page strides: the kernel reads the production bytes."""
import os

import torch

TORCH_DTYPES = {"uint8": torch.uint8, "int32": torch.int32, "float32": torch.float32,
                "bf16": torch.bfloat16, "float64": torch.float64}


class DeviceViews:
    def __init__(self):
        # ATTEST_CANDIDATE_TORCH_DEVICE=cpu stages through CPU tensors instead: the same copies
        # and views, for trying a torch candidate (or Triton's interpreter) without a GPU.
        self.device = os.environ.get("ATTEST_CANDIDATE_TORCH_DEVICE", "cuda")
        if self.device == "cuda" and not torch.cuda.is_available():
            raise RuntimeError("torch.cuda.is_available() is False")
        self.dev = torch.empty(0, dtype=torch.uint8, device=self.device)
        self.cache_key = None
        self.views = None
        self.host_key = None
        self.host_t = None

    def _host_tensor(self, host, msg):
        region = host.region(msg)
        key = (host.map_size, msg["size"])
        if key != self.host_key:
            self.host_t = torch.from_numpy(region)  # zero-copy view of the shared region
            self.host_key = key
        return self.host_t

    def run(self, fn, msg, table, host, p, take_outputs):
        size = msg["size"]
        host_t = self._host_tensor(host, msg)
        if self.dev.numel() < size:
            self.dev = torch.empty(size, dtype=torch.uint8, device=self.device)
            self.cache_key = None
        if table.key != self.cache_key:
            views = {}
            for t in table.tensors:
                raw = self.dev[t["offset"]:t["offset"] + t["nbytes"]]
                views[t["name"]] = raw.view(TORCH_DTYPES[t["dtype"]]).view(t["shape"])
            self.views = views
            self.cache_key = table.key
        self.dev[:size].copy_(host_t)
        given = dict(self.views)
        returned = fn(given, p)
        take_outputs(table, self.views, given, returned)
        if self.device == "cuda":
            torch.cuda.synchronize()  # a fault in queued work surfaces here, as an exception
        host_t.copy_(self.dev[:size])
