#!/usr/bin/env python3
"""cmake --install into a temporary prefix, then an out-of-tree project (tests/install) finds it
with find_package(attest): the documented example plugin and a plugin calling attest's codecs
(attest::plugin) build and pass `attest run` with the installed attest, from another directory; a
program linked with attest::harness draws the same case as attest; and attest.pc builds the same
program with pkg-config alone."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

from attest_testlib import check, summary

BUILD = os.environ.get("ATTEST_BINARY_DIR")
SOURCE = os.environ.get("ATTEST_SOURCE_DIR")


def sh(*args, cwd=None, env=None, timeout=600):
    p = subprocess.run(list(args), capture_output=True, text=True, cwd=cwd, timeout=timeout,
                       env={**os.environ, "CI": "1", **(env or {})})
    return p.returncode, p.stdout, p.stderr


def cache_value(name):
    try:
        text = open(os.path.join(BUILD, "CMakeCache.txt")).read()
    except OSError:
        return ""
    m = re.search(r"^%s:[A-Z]+=(.*)$" % re.escape(name), text, re.M)
    return m.group(1) if m else ""


def main():
    if not BUILD or not SOURCE or not shutil.which("cmake"):
        print("ATTEST_BINARY_DIR / ATTEST_SOURCE_DIR unset or no cmake; skipping")
        return 77
    tmp = tempfile.mkdtemp(prefix="attest-install-")
    prefix = os.path.join(tmp, "prefix")
    rc, out, err = sh("cmake", "--install", BUILD, "--prefix", prefix)
    check(rc == 0, f"cmake --install: {rc}\n{out[-800:]}\n{err[-800:]}")
    for f in ("bin/attest", "include/attest/candidate.h", "include/attest/numerics.h",
              "include/attest/results.h", "include/attest/report.h", "include/attest/reference.h",
              "lib/libattest_harness.a", "lib/libattest_codec.a",
              "lib/cmake/attest/attestConfig.cmake", "lib/cmake/attest/attestTargets.cmake",
              "lib/pkgconfig/attest.pc"):
        check(os.path.exists(os.path.join(prefix, f)), f"not installed: {f}")
    attest = os.path.join(prefix, "bin", "attest")

    # Sanitized builds: the consumer must be compiled the same way to link the static libraries.
    san = cache_value("ATTEST_SANITIZE")
    flags = f"-fsanitize={san} -fno-omit-frame-pointer" if san else ""
    cons = os.path.join(tmp, "consumer")
    rc, out, err = sh("cmake", "-S", os.path.join(SOURCE, "tests", "install"), "-B", cons,
                      f"-DCMAKE_PREFIX_PATH={prefix}", f"-DCMAKE_C_COMPILER={cache_value('CMAKE_C_COMPILER')}",
                      f"-DATTEST_EXAMPLE_SOURCE={os.path.join(SOURCE, 'docs', 'examples', 'plugin_example.c')}",
                      f"-DCMAKE_C_FLAGS={flags}", f"-DCMAKE_EXE_LINKER_FLAGS={flags}",
                      f"-DCMAKE_MODULE_LINKER_FLAGS={flags}")
    check(rc == 0, f"configuring the consumer with find_package(attest): {rc}\n{out[-1500:]}\n{err[-1500:]}")
    rc, out, err = sh("cmake", "--build", cons)
    check(rc == 0, f"building the consumer: {rc}\n{out[-2000:]}\n{err[-1500:]}")
    exe_file = os.path.join(cons, "attest_executable.txt")
    check(os.path.exists(exe_file) and open(exe_file).read() == attest,
          "ATTEST_EXECUTABLE does not name the installed attest")

    # The plugins, run by the installed attest from another directory.
    elsewhere = os.path.join(tmp, "elsewhere")
    os.mkdir(elsewhere)
    for lib, name in (("libexample_plugin.so", "example-indexer"),
                      ("libcodec_plugin.so", "codec-indexer")):
        spec = os.path.join(cons, lib) + ":" + name
        rc, out, err = sh(attest, "run", "--candidate", spec, "--cases", "40", "--seed", "3",
                          cwd=elsewhere)
        check(rc == 0 and "result: PASS (40 cases)" in out,
              f"installed attest run {spec}: exit {rc}\n{out[-600:]}\n{err[-600:]}")

    # attest::harness: the program draws the case attest draws from the same seed.
    seed = "0x71c18690ee42c90b"
    rc, params, err = sh(os.path.join(cons, "harness_user"), seed)
    check(rc == 0 and params.startswith("kernel=indexer,"), f"harness_user: {rc} {params!r} {err}")
    rc, out, err = sh(attest, "run", "--candidate", "mutant-indexer-crash", "--kernel", "indexer",
                      "--case-seed", seed, "--print-failures", "1", cwd=elsewhere)
    printed = re.search(r"seed %s  (\S+)" % seed, out)
    if printed:  # the crash mutant fails only some cases; when it prints the case, compare
        check(printed.group(1) == params.strip(), f"params differ: {printed.group(1)} vs {params}")

    # pkg-config alone.
    cc = cache_value("CMAKE_C_COMPILER") or shutil.which("cc")
    if shutil.which("pkg-config") and cc:
        env = {"PKG_CONFIG_PATH": os.path.join(prefix, "lib", "pkgconfig")}
        rc, pc, err = sh("pkg-config", "--cflags", "--libs", "--static", "attest", env=env)
        check(rc == 0 and "-lattest_harness" in pc, f"pkg-config attest: {rc} {pc!r} {err}")
        exe = os.path.join(tmp, "harness_user_pc")
        rc, out, err = sh(cc, "-std=c11", *flags.split(), "-o", exe,
                          os.path.join(SOURCE, "tests", "install", "harness_user.c"), *pc.split())
        check(rc == 0, f"building with pkg-config: {rc}\n{err[-1500:]}")
        rc, out, err = sh(exe, seed)
        check(rc == 0 and out == params, f"pkg-config build prints {out!r}, expected {params!r}")
    else:
        print("pkg-config or a C compiler missing: the attest.pc check skipped")

    shutil.rmtree(tmp, ignore_errors=True)
    return summary("test_install")


if __name__ == "__main__":
    sys.exit(main())
