/* PLACEHOLDER: removed once the module has real sources. */
typedef int attest_placeholder_unused;
