/* The fuzz-input library's shared parts: reading from both ends, decoding dispatch, features
 * dispatch and the structure-aware mutator's frame (fuzz_inputs.h). */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "inputs_internal.h"

fuzz_input fuzz_input_make(const uint8_t *data, size_t size)
{
    fuzz_input in = {data, 0, size};
    return in;
}

size_t fuzz_remaining(const fuzz_input *in) { return in->tail - in->head; }

uint64_t fuzz_tail_uint(fuzz_input *in, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < n && fuzz_remaining(in) > 0; i++)
        v |= (uint64_t)in->data[--in->tail] << (8 * i);
    return v;
}

uint64_t fuzz_head_uint(fuzz_input *in, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < n && fuzz_remaining(in) > 0; i++)
        v |= (uint64_t)in->data[in->head++] << (8 * i);
    return v;
}

uint64_t fuzz_rng_next(fuzz_rng *r)
{
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return r->s * 0x2545F4914F6CDD1DULL;
}

uint64_t fuzz_rng_below(fuzz_rng *r, uint64_t n) { return n ? fuzz_rng_next(r) % n : 0; }

void fuzz_op_put(fuzz_op *op, uint64_t v, unsigned n)
{
    for (unsigned i = 0; i < n && op->n < sizeof op->bytes; i++) op->bytes[op->n++] = (uint8_t)(v >> (8 * i));
}

int fuzz_heads_class(int32_t heads)
{
    return heads <= 1 ? 0 : heads == 2 ? 1 : heads <= 8 ? 2 : heads <= 32 ? 3 : heads <= 64 ? 4 : 5;
}

const char *fuzz_target_of(attest_kernel kernel)
{
    switch (kernel) {
    case ATTEST_KERNEL_INDEXER: return "indexer";
    case ATTEST_KERNEL_MLA_DECODE: return "mla_decode";
    default: return NULL;
    }
}

/* What an input's tail names: the generator seed and the knobs byte (short inputs read 0s). */
static void read_tail(fuzz_input *in, uint64_t *seed, uint8_t *knobs)
{
    *seed = fuzz_tail_uint(in, 8);
    *knobs = (uint8_t)fuzz_tail_uint(in, 1);
}

/* The generated case a tail names, before the head's operations. */
static attest_status generate(attest_kernel kernel, uint64_t seed, uint8_t knobs, attest_case *out)
{
    attest_gen_options opt = attest_gen_fuzz_defaults(kernel); /* small cases, every edge class */
    if (kernel == ATTEST_KERNEL_INDEXER)
        fuzz_indexer_knobs(knobs, &opt);
    else
        fuzz_mla_knobs(knobs, &opt);
    memset(out, 0, sizeof *out);
    return attest_generate_case(&opt, seed, out);
}

/* Generated cases by what their tails name. libFuzzer mutates one corpus entry several times in
 * a row (-mutate_depth, 5), the mutator mostly rewrites the head, and a corpus holds a few
 * hundred distinct tails: so most decodes (and the mutator's look at the case) find the case
 * here and copy bytes instead of drawing and quantizing them again. The generator is a pure
 * function of seed and knobs, so a copy is the same case. Direct-mapped; emptied when it holds
 * more than CACHE_BYTES. */
#define CACHE_SLOTS 256
#define CACHE_BYTES ((size_t)96 << 20)

typedef struct cache_slot {
    int have;
    uint64_t id;            /* which generation filled the slot (never 0, never reused) */
    attest_kernel kernel;
    uint64_t seed;
    uint8_t knobs;
    size_t bytes;
    attest_case c;
} cache_slot;

static struct {
    cache_slot slot[CACHE_SLOTS];
    size_t bytes;
    uint64_t generated;
} cache;

static void slot_clear(cache_slot *s)
{
    if (!s->have) return;
    attest_case_free(&s->c);
    cache.bytes -= s->bytes;
    s->have = 0;
}

static attest_status base_case(attest_kernel kernel, uint64_t seed, uint8_t knobs,
                               const attest_case **out, uint64_t *id)
{
    *out = NULL;
    uint64_t h = (seed ^ ((uint64_t)knobs << 56) ^ (uint64_t)kernel) * 0x9E3779B97F4A7C15ULL;
    cache_slot *s = &cache.slot[h >> 56];
    if (s->have && s->kernel == kernel && s->seed == seed && s->knobs == knobs) {
        *out = &s->c;
        if (id) *id = s->id;
        return ATTEST_OK;
    }
    slot_clear(s);
    ATTEST_FORWARD(generate(kernel, seed, knobs, &s->c));
    s->bytes = 0;
    for (size_t i = 0; i < s->c.num_tensors; i++) /* a sparse pool commits only its reached pages */
        if (!attest_case_tensor_pool(&s->c, i) || !(s->c.sparse_pools & attest_case_tensor_pool(&s->c, i)))
            s->bytes += s->c.tensors[i].nbytes;
    if (cache.bytes + s->bytes > CACHE_BYTES)
        for (size_t i = 0; i < CACHE_SLOTS; i++) slot_clear(&cache.slot[i]);
    s->have = 1;
    s->id = ++cache.generated;
    if (id) *id = s->id;
    s->kernel = kernel;
    s->seed = seed;
    s->knobs = knobs;
    cache.bytes += s->bytes;
    *out = &s->c;
    return ATTEST_OK;
}

#define STORAGE_ALIGN 256u /* what attest_case_alloc_heap gives each tensor */

static size_t aligned(size_t n) { return (n + STORAGE_ALIGN - 1) / STORAGE_ALIGN * STORAGE_ALIGN; }

/* The decode in progress: a cache tensor stays the cached case's bytes until an operation
 * writes it (fuzz_writable). The pools are most of a case, and most operations touch indices,
 * lengths, queries or sinks: copying them per exec was a pass over the case that nothing read. */
static struct {
    attest_case *c;
    const attest_case *base;
    uint64_t base_id;
    fuzz_workspace *ws;
    size_t offset[ATTEST_CASE_MAX_TENSORS];
} decoding;

static int shared_by_default(const attest_tensor *t)
{
    return attest_tensor_is(t, "cache_bytes") || attest_tensor_is(t, "extra_cache_bytes");
}

/* Tensor i of c is a pool held sparsely (gigabytes of address space, a few pages placed). */
static int sparse_pool(const attest_case *c, size_t i)
{
    const unsigned pool = attest_case_tensor_pool(c, i);
    return pool != 0 && (c->sparse_pools & pool) != 0;
}

static void unmap_pools(fuzz_workspace *ws)
{
    for (int k = 0; k < 2; k++) {
        fuzz_pool_copy *p = &ws->pool[k];
        if (p->map) munmap(p->map, p->bytes);
        memset(p, 0, sizeof *p);
    }
}

/* A sparse pool's own copy: a reservation holding the pages the cached case reaches, as
 * attest_case_alloc_heap and attest_case_copy_tensor make one. The reservation outlives the
 * decode: when the next decode that writes this pool decodes the same generated case (libFuzzer
 * mutates one input several times in a row, mostly in its head), only the ranges the last
 * operations wrote are copied back from the case. A fresh reservation per write had its reached
 * pages faulted in and unmapped again at the next decode: half the page faults of a moved-pool
 * exec. NULL when out of address space. */
static void *own_sparse_pool(attest_tensor *t, size_t i)
{
    fuzz_pool_copy *p = &decoding.ws->pool[attest_case_tensor_pool(decoding.c, i) == ATTEST_POOL_EXTRA];
    const uint8_t *from = decoding.base->tensors[i].data;
    if (p->map && p->owner == decoding.base_id && p->bytes == t->nbytes &&
        p->num_written <= FUZZ_POOL_WRITES) {
        for (uint32_t k = 0; k < p->num_written; k++)
            memcpy((uint8_t *)p->map + p->written[k][0], from + p->written[k][0], p->written[k][1]);
        p->num_written = 0;
        t->data = p->map;
        return p->map;
    }
    if (p->map) munmap(p->map, p->bytes);
    memset(p, 0, sizeof *p);
    void *m = mmap(NULL, t->nbytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (m == MAP_FAILED) return NULL;
    p->map = m;
    p->bytes = t->nbytes;
    t->data = m;
    if (attest_case_copy_tensor(decoding.c, decoding.base, i) != ATTEST_OK) return NULL;
    p->owner = decoding.base_id;
    return m;
}

static void *writable(attest_tensor *t, int tracked);

/* The record of where tensor i's own copy differs from the cached case: a sparse pool's
 * reservation, a dense pool's copy in the workspace block, NULL for any other tensor. */
static fuzz_pool_copy *copy_record(const attest_case *c, size_t i)
{
    const unsigned pool = attest_case_tensor_pool(c, i);
    if (pool == 0) return NULL;
    const int k = pool == ATTEST_POOL_EXTRA;
    if (sparse_pool(c, i)) return &decoding.ws->pool[k];
    return shared_by_default(&c->tensors[i]) ? &decoding.ws->dense[k] : NULL;
}

void *fuzz_writable_range(attest_tensor *t, uint64_t at, uint64_t len)
{
    uint8_t *own = writable(t, 1);
    attest_case *c = decoding.c;
    if (c == NULL || t < c->tensors || t >= c->tensors + c->num_tensors) return own;
    const size_t i = (size_t)(t - c->tensors);
    fuzz_pool_copy *p = copy_record(c, i);
    if (p == NULL || p->num_written > FUZZ_POOL_WRITES) return own;
    if (at > t->nbytes) at = t->nbytes;
    if (len > t->nbytes - at) len = t->nbytes - at;
    if (p->num_written > 0) { /* the same page again (an operation's several writes to it) */
        uint64_t *last = p->written[p->num_written - 1];
        if (last[0] == at && last[1] == len) return own;
    }
    if (p->num_written == FUZZ_POOL_WRITES) {
        p->num_written = FUZZ_POOL_WRITES + 1; /* the next decode takes a fresh reservation */
        return own;
    }
    p->written[p->num_written][0] = at;
    p->written[p->num_written][1] = len;
    p->num_written++;
    return own;
}

/* tracked: the caller says where it writes a sparse pool (fuzz_writable_range); otherwise it
 * may write anywhere, and the next decode of the case cannot reuse the reservation. */
static void *writable(attest_tensor *t, int tracked)
{
    attest_case *c = decoding.c;
    if (c == NULL || t < c->tensors || t >= c->tensors + c->num_tensors) return t->data;
    const size_t i = (size_t)(t - c->tensors);
    if (sparse_pool(c, i)) {
        void *own = t->data;
        if (own == decoding.base->tensors[i].data) own = own_sparse_pool(t, i);
        if (own == NULL) abort(); /* out of address space: a decode cannot go on half-copied */
        if (!tracked)
            decoding.ws->pool[attest_case_tensor_pool(c, i) == ATTEST_POOL_EXTRA].num_written =
                FUZZ_POOL_WRITES + 1;
        return own;
    }
    void *own = (uint8_t *)decoding.ws->block + decoding.offset[i];
    fuzz_pool_copy *p = copy_record(c, i);
    if (t->data != own) {
        /* A pool's copy is kept in the block from decode to decode: when it still holds this
         * generated case but for the ranges written since, only those are copied back (as
         * own_sparse_pool does). Copying the whole pool for a write of a few bytes was a tenth
         * of a decode exec. copy_into forgets the copy when another case takes the block. */
        const uint8_t *from = t->data;
        if (p != NULL && p->owner == decoding.base_id && p->map == own && p->bytes == t->nbytes &&
            p->num_written <= FUZZ_POOL_WRITES) {
            for (uint32_t k = 0; k < p->num_written; k++)
                memcpy((uint8_t *)own + p->written[k][0], from + p->written[k][0], p->written[k][1]);
        } else if (t->nbytes) {
            memcpy(own, from, t->nbytes);
        }
        if (p != NULL) {
            p->map = own;
            p->bytes = t->nbytes;
            p->owner = decoding.base_id;
            p->num_written = 0;
        }
        t->data = own;
    }
    if (p != NULL && !tracked) p->num_written = FUZZ_POOL_WRITES + 1;
    return own;
}

void *fuzz_writable(attest_tensor *t) { return writable(t, 0); }

/* Lays base out in *dst with its tensors in ws's block (grown when too small, never shrunk):
 * every tensor but the caches copied, the caches left shared until written. */
static attest_status copy_into(fuzz_workspace *ws, const attest_case *base, uint64_t base_id,
                               attest_case *dst)
{
    size_t total = 0;
    for (size_t i = 0; i < base->num_tensors; i++)
        if (!sparse_pool(base, i)) total += aligned(base->tensors[i].nbytes);
    /* The block's pool copies hold base's bytes only if the last case to use it was base. */
    for (int k = 0; k < 2; k++)
        if (ws->dense[k].owner != base_id) memset(&ws->dense[k], 0, sizeof ws->dense[k]);
    if (total > ws->cap || ws->block == NULL) {
        memset(ws->dense, 0, sizeof ws->dense);
        free(ws->block);
        ws->block = NULL;
        ws->cap = 0;
        void *b = NULL;
        if (posix_memalign(&b, STORAGE_ALIGN, total ? total : STORAGE_ALIGN) != 0)
            return attest_fail(ATTEST_ERR_OUT_OF_MEMORY, "fuzz: cannot allocate %zu bytes for a case",
                               total);
        ws->block = b;
        ws->cap = total;
    }
    *dst = *base;
    dst->heap_block_ = NULL; /* the workspace owns the bytes */
    dst->heap_map_bytes_ = 0;
    decoding.c = dst;
    decoding.base = base;
    decoding.base_id = base_id;
    decoding.ws = ws;
    size_t offset = 0;
    for (size_t i = 0; i < base->num_tensors; i++) {
        if (sparse_pool(base, i)) continue; /* shared; its own reservation when written */
        decoding.offset[i] = offset;
        offset += aligned(base->tensors[i].nbytes);
        if (shared_by_default(&base->tensors[i])) continue; /* dst's data is base's for now */
        dst->tensors[i].data = (uint8_t *)ws->block + decoding.offset[i];
        if (base->tensors[i].nbytes)
            memcpy(dst->tensors[i].data, base->tensors[i].data, base->tensors[i].nbytes);
    }
    return ATTEST_OK;
}

static attest_status check_kernel(attest_kernel kernel)
{
    if (fuzz_target_of(kernel) == NULL)
        return attest_fail(ATTEST_ERR_UNSUPPORTED, "%s has no fuzz target", attest_kernel_name(kernel));
    return ATTEST_OK;
}

/* The generated case of the input's tail, copied into *out, with the head's operations; shared:
 * the caches no operation wrote stay the cached case's bytes. */
static attest_status decode_onto(fuzz_workspace *ws, attest_kernel kernel, const uint8_t *data,
                                 size_t size, int shared, attest_case *out, int *valid)
{
    fuzz_input in = fuzz_input_make(data, size);
    uint64_t seed;
    uint8_t knobs;
    read_tail(&in, &seed, &knobs);
    const attest_case *base;
    uint64_t base_id = 0;
    ATTEST_FORWARD(base_case(kernel, seed, knobs, &base, &base_id));
    if (base->sparse_pools && !shared) {
        /* A pool held sparsely spans gigabytes of address space: the case gets its own
         * reservation and only the pages it reaches (attest_case_copy_tensor), as the generator
         * left it, and owns that memory whatever `shared` asks. */
        *out = *base;
        out->heap_block_ = NULL;
        out->heap_map_bytes_ = 0;
        for (size_t i = 0; i < out->num_tensors; i++) out->tensors[i].data = NULL;
        ATTEST_FORWARD(attest_case_alloc_heap(out));
        for (size_t i = 0; i < out->num_tensors; i++) {
            if (out->tensors[i].role == ATTEST_ROLE_OUTPUT) continue;
            attest_status st = attest_case_copy_tensor(out, base, i);
            if (st != ATTEST_OK) {
                attest_case_free(out);
                return st;
            }
        }
    } else {
        attest_status st = copy_into(ws, base, base_id, out);
        if (st != ATTEST_OK) {
            memset(&decoding, 0, sizeof decoding);
            return st;
        }
    }
    if (kernel == ATTEST_KERNEL_INDEXER)
        fuzz_indexer_apply(out, &in, valid);
    else
        fuzz_mla_apply(out, &in, valid);
    if (!shared && !base->sparse_pools) /* owning its memory: what no operation wrote, now */
        for (size_t i = 0; i < out->num_tensors; i++) (void)fuzz_writable(&out->tensors[i]);
    memset(&decoding, 0, sizeof decoding);
    return ATTEST_OK;
}

attest_status fuzz_decode(attest_kernel kernel, const uint8_t *data, size_t size, attest_case *out,
                          int *valid)
{
    *valid = 0;
    ATTEST_FORWARD(check_kernel(kernel));
    fuzz_workspace ws;
    memset(&ws, 0, sizeof ws);
    attest_status st = decode_onto(&ws, kernel, data, size, 0, out, valid);
    if (st != ATTEST_OK) {
        fuzz_workspace_free(&ws);
        return st;
    }
    if (out->heap_block_ == NULL) /* dense: the case owns the workspace's block */
        out->heap_block_ = ws.block;
    else
        fuzz_workspace_free(&ws);
    if (!*valid) attest_case_free(out);
    return ATTEST_OK;
}

attest_status fuzz_decode_reuse(fuzz_workspace *ws, attest_kernel kernel, const uint8_t *data,
                                size_t size, attest_case *out, int *valid)
{
    *valid = 0;
    ATTEST_FORWARD(check_kernel(kernel));
    return decode_onto(ws, kernel, data, size, 1, out, valid);
}

void fuzz_workspace_free(fuzz_workspace *ws)
{
    unmap_pools(ws);
    memset(ws->dense, 0, sizeof ws->dense);
    free(ws->block);
    ws->block = NULL;
    ws->cap = 0;
}

int fuzz_feature_count(attest_kernel kernel)
{
    switch (kernel) {
    case ATTEST_KERNEL_INDEXER: return fuzz_indexer_feature_count;
    case ATTEST_KERNEL_MLA_DECODE: return fuzz_mla_feature_count;
    default: return 0;
    }
}

const char *fuzz_feature_name(attest_kernel kernel, int i)
{
    if (i < 0 || i >= fuzz_feature_count(kernel)) return "?";
    return kernel == ATTEST_KERNEL_INDEXER ? fuzz_indexer_feature_names[i] : fuzz_mla_feature_names[i];
}

void fuzz_case_features(const attest_case *c, uint8_t hits[FUZZ_MAX_FEATURES])
{
    memset(hits, 0, FUZZ_MAX_FEATURES);
    if (c->kernel == ATTEST_KERNEL_INDEXER)
        fuzz_indexer_features(c, hits);
    else if (c->kernel == ATTEST_KERNEL_MLA_DECODE)
        fuzz_mla_features(c, hits);
}

static const attest_case *case_of_tail(attest_kernel kernel, const uint8_t *tail)
{
    fuzz_input in = fuzz_input_make(tail, FUZZ_TAIL_BYTES);
    uint64_t seed;
    uint8_t knobs;
    read_tail(&in, &seed, &knobs);
    const attest_case *c;
    if (base_case(kernel, seed, knobs, &c, NULL) != ATTEST_OK) {
        attest_clear_error();
        return NULL;
    }
    return c;
}

size_t fuzz_mutate(attest_kernel kernel, uint8_t *data, size_t size, size_t max_size,
                   unsigned int seed, fuzz_byte_mutator bytes)
{
    fuzz_rng r = {((uint64_t)seed << 1 | 1) * 0x9E3779B97F4A7C15ULL};
    if (max_size < FUZZ_TAIL_BYTES + 1 || fuzz_target_of(kernel) == NULL) return size;
    const unsigned roll = (unsigned)fuzz_rng_below(&r, 16);
    if (size < FUZZ_TAIL_BYTES || roll == 0) { /* a new case: fresh seed and knobs, head kept */
        if (size < FUZZ_TAIL_BYTES) size = FUZZ_TAIL_BYTES;
        for (size_t i = size - FUZZ_TAIL_BYTES; i < size; i++) data[i] = (uint8_t)fuzz_rng_next(&r);
        return size;
    }
    size_t head = size - FUZZ_TAIL_BYTES;
    if (roll == 1) { /* another shape of the same seed */
        data[size - 1] ^= (uint8_t)(1u << fuzz_rng_below(&r, 5)); /* bits 3-4 are two of the high-pool four */
        return size;
    }
    if (roll <= 4 && bytes != NULL && head > 0) { /* byte mutations of the head, tail kept */
        uint8_t tail[FUZZ_TAIL_BYTES];
        memcpy(tail, data + head, FUZZ_TAIL_BYTES);
        size_t n = bytes(data, head, max_size - FUZZ_TAIL_BYTES);
        if (n > max_size - FUZZ_TAIL_BYTES) n = max_size - FUZZ_TAIL_BYTES;
        memcpy(data + n, tail, FUZZ_TAIL_BYTES);
        return n + FUZZ_TAIL_BYTES;
    }
    if (roll == 5 && head > 0) { /* drop the oldest operations (the end of the head) */
        const size_t keep = (size_t)fuzz_rng_below(&r, head);
        memmove(data + keep, data + head, FUZZ_TAIL_BYTES);
        return keep + FUZZ_TAIL_BYTES;
    }
    const attest_case *c = case_of_tail(kernel, data + head);
    if (c == NULL) return size;
    fuzz_op op = {{0}, 0};
    if (kernel == ATTEST_KERNEL_INDEXER)
        fuzz_indexer_op(c, &r, &op);
    else
        fuzz_mla_op(c, &r, &op);
    if (op.n == 0) return size;
    /* Prepend: the decoder reads the head from the front, so the new operation is whole and
     * runs first; what no longer fits falls off the end of the head. */
    size_t room = max_size - FUZZ_TAIL_BYTES;
    if (op.n > room) return size;
    size_t kept = head + op.n <= room ? head : room - op.n;
    memmove(data + op.n + kept, data + head, FUZZ_TAIL_BYTES);
    memmove(data + op.n, data, kept);
    memcpy(data, op.bytes, op.n);
    return op.n + kept + FUZZ_TAIL_BYTES;
}
