"""An exec: candidate: a script that serves a declared function itself."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "python",
                                "examples"))
import attest_candidate as ac  # noqa: E402
from numpy_indexer import indexer  # noqa: E402

ac.serve(indexer)
