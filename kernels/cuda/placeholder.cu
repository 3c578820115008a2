/* PLACEHOLDER: removed once the CUDA candidates exist. */
typedef int attest_cuda_placeholder_unused;
