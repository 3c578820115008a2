"""Candidates that make the other choice of each convention, declared rightly and wrongly, for
tests/py/test_external.py: the reference must follow what each one declares."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "python",
                                "examples"))
import attest_candidate as ac  # noqa: E402
import numpy_indexer  # noqa: E402
import numpy_mla_decode  # noqa: E402


def nan_propagating(t, p):
    numpy_indexer.compute(t, p, relu=np.maximum)


def lonely_neg_inf(t, p):
    numpy_mla_decode.compute(t, p, lonely_lse=-np.inf)


def ends_list(t, p):
    numpy_mla_decode.compute(t, p, ends_list=True)


def declared(fn, family, name, **conv):
    def wrapper(t, p):
        fn(t, p)
    return ac.candidate(family=family, name=name, conventions=conv)(wrapper)


relu_propagates = declared(nan_propagating, "indexer", "relu-propagates", relu_nan="propagates")
relu_propagates_undeclared = declared(nan_propagating, "indexer", "relu-propagates-undeclared")
lonely_declared = declared(lonely_neg_inf, "mla-decode", "lonely-neg-inf", lonely_lse="-inf")
lonely_undeclared = declared(lonely_neg_inf, "mla-decode", "lonely-neg-inf-undeclared")
ends_declared = declared(ends_list, "mla-decode", "ends-list", minus_one="ends_list")
ends_undeclared = declared(ends_list, "mla-decode", "ends-list-undeclared")
