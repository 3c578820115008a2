# The harness modules' include edges (cmake/HarnessModules.cmake, docs/architecture.md).
attest_add_python_test(test_module_edges py/test_module_edges.py LABELS unit TIMEOUT 300)
