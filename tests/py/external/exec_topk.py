"""An exec: top-k candidate: a script that serves the numpy example itself. With the argument
`no-order` it speaks the protocol by hand and sends a hello without the order it must declare."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "python",
                                "examples"))
import attest_candidate as ac  # noqa: E402
from numpy_topk import topk  # noqa: E402

if sys.argv[1:] == ["no-order"]:
    hello = {"attest": ac.PROTOCOL, "op": "hello", "family": "topk", "name": "no-order",
             "domain": "host", "outputs": "both", "short_row": "by-score"}
    os.write(int(os.environ["ATTEST_CHANNEL_FD"]), json.dumps(hello).encode() + b"\n")
    sys.exit(0)
ac.serve(topk)
