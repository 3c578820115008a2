"""python3 -m attest_candidate PATH.py NAME: what attest starts for --candidate py:PATH.py:NAME.

Imports PATH.py, finds NAME, checks it is a declared candidate taking (tensors, params), and
serves it. Every way that can fail is reported to attest as one "fatal" message (attest prints
it as one line and exits 2), with the traceback on stderr."""
import importlib.util
import inspect
import os
import sys
import traceback

from . import _bridge


def load(path, name):
    """Returns the declaration of NAME in PATH, or raises _bridge.Fatal."""
    if not os.path.isfile(path):
        raise _bridge.Fatal("not_found", f"{path}: no such file")
    module_name = os.path.splitext(os.path.basename(path))[0] or "candidate"
    # The module's own folder first, so it can import its neighbours.
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise _bridge.Fatal("format", f"{path}: not a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException as e:  # SystemExit and KeyboardInterrupt at import are errors too
        traceback.print_exc()
        raise _bridge.Fatal("format", f"importing {path} raised {type(e).__name__}: {e}")
    fn = getattr(module, name, None)
    if fn is None:
        raise _bridge.Fatal("not_found", f"{path} has no attribute '{name}'")
    decl = getattr(fn, "__attest__", None)
    if decl is None:
        raise _bridge.Fatal("format", f"{path}: '{name}' is not declared as a candidate "
                            "(decorate it with @attest_candidate.candidate(...))")
    try:
        inspect.signature(decl.fn).bind(None, None)
    except TypeError:
        raise _bridge.Fatal("format", f"{path}: '{name}' has the wrong signature "
                            f"{name}{inspect.signature(decl.fn)}; expected {name}(tensors, params)")
    except ValueError:
        pass  # a builtin or extension function without a signature: trust it
    return decl


def main(argv):
    if len(argv) != 3:
        print("usage: python3 -m attest_candidate PATH.py NAME (started by attest run "
              "--candidate py:PATH.py:NAME)", file=sys.stderr)
        return 2
    channel = _bridge.Channel.from_environment()
    try:
        decl = load(argv[1], argv[2])
    except _bridge.Fatal as f:
        channel.fatal(f.kind, f.message)
        return 1
    _bridge.serve_declared(decl, channel)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
