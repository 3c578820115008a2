"""Imports at load (attest reads the declaration) but fails in every serving process."""
import os

import attest_candidate as ac

STATE = os.environ["ATTEST_TEST_STATE"]
if os.path.exists(STATE):
    raise ImportError("the second import fails")
open(STATE, "w").close()


@ac.candidate(family="indexer", name="import-once")
def cand(t, p):
    pass
