"""Serve a Python kernel to attest as a candidate.

    import attest_candidate as ac

    @ac.candidate(family="indexer", name="my-indexer", conventions={"masking": "-inf"})
    def my_indexer(t, p):
        t["logits"][...] = ...          # write the outputs in place

attest runs it with ``attest run --candidate py:my_file.py:my_indexer``. ``t`` maps the case's
tensor names (docs/case-format.md) to numpy arrays that are views of the shared memory attest
placed the case in (no copy); with ``device="cuda"`` they are torch tensors on the GPU. ``p``
holds the case's parameters as attributes (``p.b``, ``p.max_len``, ``p.sm_scale``...). bf16
tensors are uint16 bit patterns in numpy (``attest_candidate.numerics`` converts them) and
``torch.bfloat16`` on the GPU. The function may instead return ``{name: array}`` for some
outputs; attest_candidate copies them in after checking dtype and shape exactly.

The protocol is in docs/external-candidates.md; ``serve(fn)`` speaks it for a script started
with ``--candidate exec:python3 my_script.py``.
"""

__version__ = "0.1.0"

#: The control-message version this package speaks (attest refuses any other).
PROTOCOL = 1

FAMILIES = ("indexer", "mla-decode", "topk")
DEVICES = ("host", "cuda")
#: What a top-k candidate declares (docs/topk.md, "The contract a candidate declares").
TOPK_ORDERS = ("sorted", "any")
TOPK_OUTPUTS = ("logical", "physical", "both")
TOPK_SHORT_ROWS = ("by-score", "identity")


class Declaration:
    """What a candidate declares: kernel family, name, conventions and memory domain."""

    def __init__(self, fn, family, name, conventions, device, description, supports,
                 topk=None):
        self.fn = fn
        self.topk = topk or {}
        self.family = family
        self.name = name
        self.conventions = dict(conventions or {})
        self.device = device
        self.description = description
        self.supports = supports

    def hello(self):
        return {"attest": PROTOCOL, "op": "hello", "family": self.family, "name": self.name,
                "domain": self.device, "description": self.description,
                "conventions": self.conventions, **self.topk}


def candidate(family, name=None, conventions=None, device="host", description="",
              supports=None, order="sorted", outputs="both", short_row="by-score"):
    """Declares a function ``fn(tensors, params)`` as an attest candidate.

    family: "indexer", "mla-decode" or "topk". name: what results files record (default: the
    function's name). conventions: {"masking": "-inf" | "0.0" | "unspecified"} for an indexer,
    {"lse": "excludes_sink" | "includes_sink"} for mla-decode, and the other keys of
    docs/conventions.md; attest's reference follows them. device: "host" (numpy views) or
    "cuda" (torch tensors on the GPU). supports: optional ``supports(params) -> bool``; False
    makes the case UNSUPPORTED (for "topk", which has no such verdict, a failed "run" check).
    A "topk" candidate also declares its contract (docs/topk.md): order "sorted" (scores never
    rise along the slots) or "any"; outputs "logical" (topk_indices), "physical"
    (topk_physical) or "both"; short_row "by-score" or "identity" (a row no longer than k is
    0..len-1). The function is returned unchanged, with the declaration in ``fn.__attest__``.
    """
    if family not in FAMILIES:
        raise ValueError(f"family must be one of {FAMILIES}, not {family!r}")
    if device not in DEVICES:
        raise ValueError(f"device must be one of {DEVICES}, not {device!r}")
    topk = None
    if family == "topk":
        for what, value, allowed in (("order", order, TOPK_ORDERS),
                                     ("outputs", outputs, TOPK_OUTPUTS),
                                     ("short_row", short_row, TOPK_SHORT_ROWS)):
            if value not in allowed:
                raise ValueError(f"{what} must be one of {allowed}, not {value!r}")
        topk = {"order": order, "outputs": outputs, "short_row": short_row}

    def wrap(fn):
        fn.__attest__ = Declaration(fn, family, name or fn.__name__, conventions, device,
                                    description, supports, topk)
        return fn

    return wrap


def serve(fn):
    """Serves a declared candidate on the channel attest opened (never returns)."""
    from ._bridge import serve_declared
    decl = getattr(fn, "__attest__", None)
    if decl is None:
        raise TypeError(f"{fn!r} is not declared with @attest_candidate.candidate(...)")
    serve_declared(decl)
