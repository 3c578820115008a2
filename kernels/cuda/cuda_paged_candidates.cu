// The candidates built on the paged indexer (cuda_indexer_paged.cu): the correct one and the
// broken variants that keep attest's GPU checks honest. Each mutant carries one realistic bug:
//   mutant-cuda-indexer-paged-132-records  wrong stride: the block read as [64, 132]-byte records
//                                          (MISMATCH on every case with a live page)
//   mutant-cuda-indexer-paged-race         no barrier between storing the page and reading it
//                                          (compute-sanitizer racecheck; wrong logits at times)
//   mutant-cuda-indexer-paged-uninit       reads a workspace where it never wrote, then masks
//                                          (outputs right; compute-sanitizer initcheck)
//   mutant-cuda-indexer-paged-capture-lengths  grid sized on the host from the lengths it sees
//                                          at launch: right when run eagerly, wrong when a graph
//                                          captured with other lengths is replayed (--graph)
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdlib.h>

#include "attest/candidate.h"
#include "attest/cuda_candidates.h"
#include "cuda_paged_variants.h"
#include "cuda_registry.h"

namespace {

int supports(void *, const attest_kernel_args *args) { return paged_indexer_supports(args); }

int run_correct(void *, const attest_kernel_args *args)
{
    return paged_indexer_run(paged_variant::correct, args, nullptr);
}

attest_candidate make_paged()
{
    attest_candidate c = {};
    c.abi_version = ATTEST_CANDIDATE_ABI_VERSION;
    c.struct_size = sizeof(attest_candidate);
    c.name = "cuda-indexer-paged";
    c.description = "paged tensor-core CUDA indexer: a fixed grid streams the live pages (grid "
                    "fixed by max context), mma.sync fp16 (wgmma for 128 heads on sm_90)";
    c.kernel = ATTEST_KERNEL_INDEXER;
    c.domain = ATTEST_DOMAIN_DEVICE;
    c.conventions.masking = ATTEST_MASK_NEG_INF;
    c.conventions.lse_convention = ATTEST_LSE_EXCLUDES_SINK;
    c.supports = supports;
    c.run = run_correct;
    return c;
}

const attest_candidate paged = make_paged();

int run_mma(void *, const attest_kernel_args *args)
{
    return paged_indexer_run(paged_variant::mma, args, nullptr);
}

attest_candidate make_paged_mma()
{
    attest_candidate c = make_paged();
    c.name = "cuda-indexer-paged-mma";
    c.description = "cuda-indexer-paged's mma.sync streaming kernel (what it runs on a device "
                    "without wgmma)";
    c.run = run_mma;
    return c;
}

const attest_candidate paged_mma = make_paged_mma();

int run_fp8(void *, const attest_kernel_args *args)
{
    return paged_indexer_run(paged_variant::fp8, args, nullptr);
}

attest_candidate make_paged_fp8()
{
    attest_candidate c = make_paged();
    c.name = "cuda-indexer-paged-fp8";
    c.description = "cuda-indexer-paged with fp8 x fp8 wgmma on sm_90 (Hopper's fp8 MMA "
                    "accumulator: judge with policies/bf16-tensor-core.json)";
    c.run = run_fp8;
    return c;
}

const attest_candidate paged_fp8 = make_paged_fp8();

// The contract of DeepGEMM's paged MQA logits with clean_logits=False: the logits past a row's
// length are left unwritten, and the consumer (a top-k over each row's length) never reads
// them. attest compares only the valid positions of such a candidate (its masking is
// unspecified) and counts only their bytes as the output that must move (attest_bench_bytes).
attest_candidate make_noclean(attest_candidate c, const char *name, const char *description,
                              int (*run)(void *, const attest_kernel_args *))
{
    c.name = name;
    c.description = description;
    c.conventions.masking = ATTEST_MASK_UNSPECIFIED;
    c.run = run;
    return c;
}

int run_noclean(void *, const attest_kernel_args *args)
{
    return paged_indexer_run(paged_variant::noclean, args, nullptr);
}

const attest_candidate paged_noclean = make_noclean(
    make_paged(), "cuda-indexer-paged-noclean",
    "cuda-indexer-paged leaving the logits past each row's live pages unwritten (masking "
    "unspecified, as DeepGEMM's clean_logits=False): cost follows the actual lengths, not the "
    "maximum context",
    run_noclean);

// Only on sm_90: elsewhere paged_variant::fp8 falls back to kernels that clean the tail.
int fp8_supports(void *, const attest_kernel_args *args)
{
    return paged_indexer_supports(args) && paged_fp8_supports(args);
}

int run_fp8_noclean(void *, const attest_kernel_args *args) { return paged_fp8_run_noclean(args); }

attest_candidate make_paged_fp8_noclean()
{
    attest_candidate c = make_noclean(
        make_paged_fp8(), "cuda-indexer-paged-fp8-noclean",
        "cuda-indexer-paged-fp8 leaving the logits past each row's live pages unwritten (masking "
        "unspecified, as DeepGEMM's clean_logits=False): cost follows the actual lengths, not "
        "the maximum context",
        run_fp8_noclean);
    c.supports = fp8_supports;
    return c;
}

const attest_candidate paged_fp8_noclean = make_paged_fp8_noclean();

#ifdef ATTEST_IDX_EXPERIMENT
// Measurement-only candidates: the fp8 kernel in the configurations the bench compares.
template <int V>
int run_fp8_variant(void *, const attest_kernel_args *args)
{
    return paged_fp8_run_variant(args, V);
}
template <int V>
attest_candidate make_fp8_variant(const char *name)
{
    attest_candidate c = make_paged_fp8();
    c.name = name;
    c.description = "cuda-indexer-paged-fp8 in a measured configuration (bench only)";
    c.supports = fp8_supports;
    c.run = run_fp8_variant<V>;
    return c;
}
const attest_candidate x1 = make_fp8_variant<1>("x-fp8-cp-async");
const attest_candidate x2 = make_fp8_variant<2>("x-fp8-lb5");
const attest_candidate x3 = make_fp8_variant<3>("x-fp8-tma");
const attest_candidate x4 = make_fp8_variant<4>("x-fp8-tma-lb5");
const attest_candidate x5 = make_fp8_variant<5>("x-fp8-tma-lb5-ws");
const attest_candidate x6 = make_fp8_variant<6>("x-fp8-tma-s5-lb4-ws");
const attest_candidate x7 = make_fp8_variant<7>("x-fp8-lb5-ws");
const attest_candidate x8 = make_fp8_variant<8>("x-fp8-t2-s3-lb5");
const attest_candidate x10 = make_fp8_variant<10>("x-fp8-t4-tma-s3");
#define FP8_VARIANTS , &x1, &x2, &x3, &x4, &x5, &x6, &x7, &x8, &x10
#else
#define FP8_VARIANTS
#endif

#ifdef ATTEST_WITH_MUTANTS
int run_records132(void *, const attest_kernel_args *args)
{
    return paged_indexer_run(paged_variant::records132, args, nullptr);
}

int run_race(void *, const attest_kernel_args *args)
{
    return paged_indexer_run(paged_variant::race, args, nullptr);
}

// A fresh workspace per run: memory from cudaMalloc is what initcheck tracks as never written.
struct uninit_ctx {
    float *workspace;
};

int uninit_init(void **ctx)
{
    *ctx = calloc(1, sizeof(uninit_ctx));
    return *ctx ? 0 : 1;
}

void uninit_fini(void *ctx)
{
    uninit_ctx *u = static_cast<uninit_ctx *>(ctx);
    if (u && u->workspace) cudaFree(u->workspace);
    free(u);
}

int run_uninit(void *ctx, const attest_kernel_args *args)
{
    uninit_ctx *u = static_cast<uninit_ctx *>(ctx);
    const attest_indexer_params &p = *args->u.indexer.params;
    if (u->workspace) cudaFree(u->workspace);  // waits for the previous case's kernels
    u->workspace = nullptr;
    const size_t bytes = static_cast<size_t>(p.b) * p.next_n * p.max_len * sizeof(float);
    if (cudaMalloc(&u->workspace, bytes) != cudaSuccess) return 1;
    return paged_indexer_run(paged_variant::uninit, args, u->workspace);
}

// Reads the lengths back to the host on a stream of its own (legal while the harness captures
// cudaStreamPerThread in relaxed mode) and launches only the pages they need. The stream is a
// blocking one, so the copy waits for the harness's uploads on the legacy stream (a
// non-blocking one read stale lengths: a second bug, seen as NONDETERMINISTIC).
struct capture_ctx {
    cudaStream_t side;
};

int capture_init(void **ctx)
{
    capture_ctx *c = static_cast<capture_ctx *>(calloc(1, sizeof(capture_ctx)));
    if (!c) return 1;
    if (cudaStreamCreateWithFlags(&c->side, cudaStreamDefault) != cudaSuccess) {
        free(c);
        return 1;
    }
    *ctx = c;
    return 0;
}

void capture_fini(void *ctx)
{
    capture_ctx *c = static_cast<capture_ctx *>(ctx);
    if (c) cudaStreamDestroy(c->side);
    free(c);
}

int run_capture_lengths(void *ctx, const attest_kernel_args *args)
{
    capture_ctx *c = static_cast<capture_ctx *>(ctx);
    const attest_indexer_params &p = *args->u.indexer.params;
    int32_t *lens = static_cast<int32_t *>(malloc(static_cast<size_t>(p.b) * sizeof(int32_t)));
    if (!lens) return 1;
    int rc = cudaMemcpyAsync(lens, args->u.indexer.context_lens, p.b * sizeof(int32_t),
                             cudaMemcpyDeviceToHost, c->side) != cudaSuccess ||
             cudaStreamSynchronize(c->side) != cudaSuccess;
    int longest = 0;
    for (int i = 0; !rc && i < p.b; i++) {
        const int len = lens[i] < p.max_len ? lens[i] : p.max_len;
        if (len > longest) longest = len;
    }
    free(lens);
    return rc ? 1 : paged_indexer_run_pages(args, (longest + 63) / 64);
}

attest_candidate make_mutant(const char *name, const char *description,
                             int (*run)(void *, const attest_kernel_args *))
{
    attest_candidate c = make_paged();
    c.name = name;
    c.description = description;
    c.run = run;
    return c;
}

const attest_candidate records132 = make_mutant(
    "mutant-cuda-indexer-paged-132-records",
    "cuda-indexer-paged reading the block as 64 records of 132 bytes (wrong stride)",
    run_records132);
const attest_candidate race = make_mutant(
    "mutant-cuda-indexer-paged-race",
    "cuda-indexer-paged without the barrier between storing the page and reading it", run_race);

attest_candidate make_uninit()
{
    attest_candidate c = make_mutant(
        "mutant-cuda-indexer-paged-uninit",
        "cuda-indexer-paged staged through a workspace it reads where it never wrote",
        run_uninit);
    c.init = uninit_init;
    c.fini = uninit_fini;
    return c;
}
const attest_candidate uninit = make_uninit();

attest_candidate make_capture_lengths()
{
    attest_candidate c = make_mutant(
        "mutant-cuda-indexer-paged-capture-lengths",
        "cuda-indexer-paged with a grid sized on the host from the lengths at launch",
        run_capture_lengths);
    c.init = capture_init;
    c.fini = capture_fini;
    return c;
}
const attest_candidate capture_lengths = make_capture_lengths();

const attest_candidate *const list[] = {&paged, &paged_mma, &paged_fp8, &paged_noclean, &paged_fp8_noclean, &records132, &race, &uninit, &capture_lengths FP8_VARIANTS};
#else
const attest_candidate *const list[] = {&paged, &paged_mma, &paged_fp8, &paged_noclean, &paged_fp8_noclean FP8_VARIANTS};
#endif

}  // namespace

const attest_candidate *const *cuda_paged_candidates(size_t *count)
{
    *count = sizeof list / sizeof list[0];
    return list;
}
