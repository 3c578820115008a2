#!/usr/bin/env python3
"""--junit and --json of attest run, campaign and check, read back by a JUnit parser from PyPI
(junitparser) and by json: every count equals the run's own printed summary, every failing case is
a <failure> carrying its replay command, an unreadable fixture is an <error>, a declined case is
<skipped>; files appear only when the run ends and an unwritable path is a one-line error."""
import json
import os
import re
import shutil
import sys
import tempfile

from attest_testlib import CLI, check, run, summary

try:
    from junitparser import Error, Failure, JUnitXml, Skipped
except ImportError:
    JUnitXml = None


def printed_verdicts(out):
    m = re.search(r"^  verdicts:(.*)$", out, re.M)
    check(m is not None, f"no verdicts line in\n{out[-800:]}")
    words = m.group(1).replace(",", " ").split() if m else []
    return {words[i]: int(words[i + 1]) for i in range(0, len(words) - 1, 2)}


def read_junit(path):
    """Returns [(suite, [(classname, name, kind, type, message, text)])]."""
    suites = []
    if JUnitXml is None:
        import xml.etree.ElementTree as ET
        root = ET.parse(path).getroot()
        for s in root.iter("testsuite"):
            cases = []
            for c in s.iter("testcase"):
                kind = typ = msg = text = None
                for child in c:
                    kind, typ = child.tag, child.get("type")
                    msg, text = child.get("message"), child.text
                cases.append((c.get("classname"), c.get("name"), kind, typ, msg, text))
            suites.append(({k: s.get(k) for k in ("name", "tests", "failures", "errors",
                                                   "skipped")}, cases))
        return suites
    xml = JUnitXml.fromfile(path)
    for s in xml:
        cases = []
        for c in s:
            kind = typ = msg = text = None
            for r in c.result:
                kind = {Failure: "failure", Error: "error", Skipped: "skipped"}.get(type(r))
                typ, msg, text = r.type, r.message, r.text
            cases.append((c.classname, c.name, kind, typ, msg, text))
        suites.append(({"name": s.name, "tests": s.tests, "failures": s.failures,
                        "errors": s.errors, "skipped": s.skipped}, cases))
    return suites


def check_counts(where, junit, js, out, expect_cases):
    suites = read_junit(junit)
    check(len(suites) == 1, f"{where}: {len(suites)} test suites")
    if not suites:
        return []
    head, cases = suites[0]
    verdicts = printed_verdicts(out)
    n = sum(verdicts.values())
    check(int(head["tests"]) == len(cases) == expect_cases,
          f"{where}: suite says {head['tests']} tests, holds {len(cases)}, expected {expect_cases}")
    fails = [c for c in cases if c[2] == "failure"]
    errors = [c for c in cases if c[2] == "error"]
    skipped = [c for c in cases if c[2] == "skipped"]
    check(int(head["failures"]) == len(fails) and int(head["errors"]) == len(errors) and
          int(head["skipped"]) == len(skipped), f"{where}: suite totals {head} disagree with its "
          f"testcases ({len(fails)} failures, {len(errors)} errors, {len(skipped)} skipped)")
    check(len(skipped) == verdicts.get("UNSUPPORTED", 0),
          f"{where}: {len(skipped)} skipped vs {verdicts}")
    ok = [c for c in cases if c[2] is None]
    check(len(ok) == verdicts.get("OK", 0), f"{where}: {len(ok)} passing testcases vs {verdicts}")
    for c in fails:
        check(c[3] in verdicts and c[4].startswith(c[3]),
              f"{where}: failure type {c[3]!r} message {c[4]!r}")
        check(c[5] and "replay: attest " in c[5], f"{where}: failure of {c[1]} has no replay")
    with open(js) as f:
        d = json.load(f)
    check(d["cases"] == n and d["failures"] == len(fails) + len(errors) - d.get("unreadable", 0),
          f"{where}: json cases {d['cases']} failures {d['failures']} vs printed {verdicts}")
    check({k: v for k, v in d["verdicts"].items() if v} == verdicts,
          f"{where}: json verdicts {d['verdicts']} vs printed {verdicts}")
    result = re.search(r"^result: (\w+)", out, re.M)
    check(result and d["result"] == result.group(1),
          f"{where}: json result {d['result']} vs printed {result and result.group(1)}")
    return cases


def main():
    if not CLI or not os.path.exists(CLI):
        print("ATTEST_CLI not set or missing; skipping")
        return 77
    if JUnitXml is None:
        print("note: junitparser not installed (ci/setup.sh --with-python installs it); "
              "reading the JUnit files with xml.etree instead")
    tmp = tempfile.mkdtemp(prefix="attest-ci-")
    j, s, res = (os.path.join(tmp, n) for n in ("r.xml", "r.json", "r.h5"))

    # run: a mutant that fails some cases, with a results file.
    rc, out, err = run("run", "--kernel", "indexer", "--candidate",
                       "mutant-indexer-scale-off-by-one", "--cases", "30", "--seed", "2",
                       "--out", res, "--junit", j, "--json", s)
    check(rc == 1, f"run: exit {rc}\n{err}")
    cases = check_counts("run", j, s, out, 30)
    check(all(c[0] == "mutant-indexer-scale-off-by-one" and c[1].startswith("case ")
              for c in cases), "run: testcase names")
    with open(s) as f:
        d = json.load(f)
    check(d["verb"] == "run" and d["exit_code"] == 1 and d["results_file"] == res,
          f"run json header {d}")
    check(d["worst"] and d["worst"][0]["replay"].startswith("attest replay "),
          f"run json worst cases: {d['worst'][:1]}")
    # each worst case's phrase as the failure line prints it, the element named by coordinates
    for w in d["worst"]:
        want = f"#{w['case_id']} {w['verdict']} [{w['gates']}] {w['candidate']}  {w.get('summary')}"
        check(re.search(r"(worst|first) at logits\[row \d+, t \d+\]", w.get("summary") or "")
              and want in out, f"run json summary {w.get('summary')!r} is not the line's phrase")
    check(not os.path.exists(j + ".tmp") and not os.path.exists(s + ".tmp"), "tmp files left")

    # A stop at --max-failures is the run ending as asked: FAIL in the summary and in the JSON
    # alike (the JSON said INTERRUPTED, the word CI systems read as "stopped by a signal").
    rc, out, err = run("run", "--kernel", "indexer", "--candidate",
                       "mutant-indexer-scale-off-by-one", "--cases", "30", "--seed", "2",
                       "--max-failures", "1", "--json", s, "--print-failures", "0")
    with open(s) as f:
        d = json.load(f)
    check(rc == 1 and "result: FAIL (1 of 1 cases failed)" in out and d["result"] == "FAIL",
          f"--max-failures 1: exit {rc}, json result {d['result']}\n{out[-300:]}")
    # A run that judged nothing (a --filter no case matches): EMPTY in both, exit 1.
    rc, out, err = run("run", "--kernel", "mla-decode", "--candidate", "cpu-mla-decode",
                       "--cases", "3", "--layout", "mla-v32", "--filter", "b=999", "--json", s)
    with open(s) as f:
        d = json.load(f)
    check(rc == 1 and d["result"] == "EMPTY" and "result: EMPTY" in out,
          f"nothing judged: exit {rc}, json result {d['result']}\n{out[-300:]}")

    # A passing campaign: every testcase passes, exit 0.
    rc, out, err = run("campaign", "--cases", "15", "--out", os.path.join(tmp, "c.h5"),
                       "--junit", j, "--json", s, "--quiet")
    check(rc == 0, f"campaign: exit {rc}\n{err}")
    check_counts("campaign", j, s, out, 30)

    # check: fixtures plus one that cannot be read (an <error>), with a mutant (failures).
    fx = os.path.join(tmp, "fx")
    os.mkdir(fx)
    src = os.path.join(os.environ.get("ATTEST_SOURCE_DIR", "."), "fixtures", "golden")
    shutil.copy(os.path.join(src, "indexer-edges.h5"), fx)
    with open(os.path.join(fx, "broken.h5"), "wb") as f:
        f.write(b"not an HDF5 file\n")
    rc, out, err = run("check", fx, "--candidate", "mutant-indexer-132-byte-records",
                       "--junit", j, "--json", s)
    check(rc == 1, f"check: exit {rc}\n{err}")
    suites = read_junit(j)
    errors = [c for c in suites[0][1] if c[2] == "error"] if suites else []
    check(len(errors) == 1 and "broken.h5" in errors[0][1] and errors[0][3] == "UNREADABLE",
          f"check: expected one <error> for broken.h5, got {errors}")
    judged = sum(printed_verdicts(out).values())
    check_counts("check", j, s, out, judged + 1)
    with open(s) as f:
        d = json.load(f)
    check(d["unreadable"] == 1 and d["result"] == "FAIL", f"check json: {d}")

    # check on a directory without fixtures: EMPTY printed and in the JSON (it printed FAIL
    # while the JSON said EMPTY), exit 1.
    empty = os.path.join(tmp, "empty")
    os.mkdir(empty)
    rc, out, err = run("check", empty, "--candidate", "cpu-indexer", "--json", s)
    with open(s) as f:
        d = json.load(f)
    check(rc == 1 and d["result"] == "EMPTY" and
          "result: EMPTY (nothing was checked: no fixture file found)" in out,
          f"check of an empty directory: exit {rc}, json {d['result']}\n{out[-300:]}")

    # An unwritable report path: one line, exit 2.
    rc, out, err = run("run", "--candidate", "cpu-indexer", "--cases", "2", "--junit",
                       os.path.join(tmp, "no", "such", "dir", "r.xml"))
    lines = [l for l in err.splitlines() if l.strip()]
    check(rc == 2 and len(lines) == 1 and "r.xml" in lines[0], f"unwritable --junit: {rc} {err!r}")

    shutil.rmtree(tmp, ignore_errors=True)
    return summary("test_ci_reports")


if __name__ == "__main__":
    sys.exit(main())
