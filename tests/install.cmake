# Installation: an out-of-tree plugin and program build against an installed tree.
attest_add_python_test(test_install py/test_install.py LABELS cli TIMEOUT 900)
