/* Case generator, sparse MLA decode family: paged mla-v4 / mla-v32 caches, bf16 queries, top-k
 * index lists with holes and duplicates, topk_length, sinks and an optional extra scope
 * (docs/kernels.md sections 2, 3 and 6). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attest/numerics.h"
#include "gen_internal.h"

enum { SLOT_POISON = 0, SLOT_WRITTEN = 1, SLOT_SELECTED = 2 };

/* One scope (main or extra): its pool, the requests' lengths and page tables, and what each
 * physical token slot holds. */
typedef struct scope {
    attest_layout L;
    int32_t b, P, num_pages, ppr, topk;
    int32_t *lens;      /* [b] tokens each request holds */
    int32_t *table;     /* [b * ppr] physical page of logical page j, -1 past the request */
    uint8_t *state;     /* [num_pages * P] SLOT_* */
} scope;

static void scope_free(scope *s)
{
    free(s->lens);
    free(s->table);
    free(s->state);
    memset(s, 0, sizeof *s);
}

static int32_t draw_page_size(attest_rng *r)
{
    static const int32_t sizes[] = {64, 16, 2, 256};
    static const double w[] = {50, 20, 20, 10};
    return sizes[attest_rng_choice(r, w, 4)];
}

/* Draws lengths and a page table through a shuffled pool that usually has unused pages. */
static attest_status draw_scope(scope *s, attest_rng *r, int32_t b, int32_t max_len)
{
    s->b = b;
    s->lens = gen_calloc((size_t)b, sizeof *s->lens, "scope lengths");
    if (s->lens == NULL) return ATTEST_ERR_OUT_OF_MEMORY;
    int64_t used = 0;
    s->ppr = 1;
    for (int32_t i = 0; i < b; i++) {
        s->lens[i] = gen_draw_len(r, max_len, s->P);
        int32_t pages = (s->lens[i] + s->P - 1) / s->P;
        used += pages;
        if (pages > s->ppr) s->ppr = pages;
    }
    int64_t unused = (used > 0 && attest_rng_bernoulli(r, 0.12))
                         ? 0
                         : attest_rng_range(r, 1, used / 2 > 1 ? used / 2 : 1);
    ATTEST_RETURN_IF(used + unused > GEN_MAX_POOL_UNITS, ATTEST_ERR_INVALID_ARGUMENT,
                     "generator: a pool of %lld pages of %d is too large; lower max_batch or "
                     "max_len", (long long)(used + unused), s->P);
    s->num_pages = (int32_t)(used + unused);
    s->table = gen_calloc((size_t)b * s->ppr, sizeof *s->table, "scope page table");
    int32_t *perm = gen_calloc((size_t)s->num_pages, sizeof *perm, "page permutation");
    if (s->table == NULL || perm == NULL) {
        free(perm);
        return ATTEST_ERR_OUT_OF_MEMORY;
    }
    for (int32_t i = 0; i < s->num_pages; i++) perm[i] = i;
    attest_rng_shuffle_i32(r, perm, (size_t)s->num_pages);
    int32_t next = 0;
    for (int32_t i = 0; i < b; i++) {
        int32_t pages = (s->lens[i] + s->P - 1) / s->P;
        for (int32_t j = 0; j < s->ppr; j++)
            s->table[(size_t)i * s->ppr + j] = j < pages ? perm[next++] : -1;
    }
    free(perm);
    s->state = gen_calloc((size_t)s->num_pages * s->P, 1, "slot states");
    return s->state ? ATTEST_OK : ATTEST_ERR_OUT_OF_MEMORY;
}

/* Marks every token a request holds as written (the full-cache fill). */
static void mark_all_written(scope *s)
{
    for (int32_t i = 0; i < s->b; i++)
        for (int32_t j = 0; j < s->lens[i]; j++)
            s->state[(size_t)s->table[(size_t)i * s->ppr + j / s->P] * s->P + j % s->P] =
                SLOT_WRITTEN;
}

/* The full fill, after the indices are drawn: of the tokens a request holds, a kernel that reads
 * through its index lists can read only those some slot names (a valid entry, one past
 * topk_length, a duplicate); the rest go back to poison, as every unselected token of the
 * sparse fill is, so a correct kernel already meets poison there. Quantizing them was most of
 * the fill: the default cases held 2.75x the tokens any index named (issue 10). */
#define SLOT_NAMED 4
static void keep_named(scope *s, int32_t s_q, const int32_t *idx)
{
    const size_t n = (size_t)s->b * (size_t)s_q * (size_t)s->topk;
    for (size_t k = 0; k < n; k++)
        if (idx[k] >= 0) s->state[idx[k]] |= SLOT_NAMED;
    for (size_t i = 0; i < (size_t)s->num_pages * s->P; i++)
        s->state[i] = (s->state[i] & SLOT_NAMED) ? (uint8_t)(s->state[i] & ~SLOT_NAMED)
                      : s->state[i] == SLOT_WRITTEN ? (uint8_t)SLOT_POISON
                                                    : s->state[i];
}

/* Poisons the pool, then quantizes the tokens to hold: every token of every request, or (sparse)
 * only the selected ones, as upstream tests do. Fills the truth (NaN where nothing was written)
 * and leaves every held slot WRITTEN or SELECTED. */
static attest_status fill_scope_cache(scope *s, uint8_t *pool, float *truth,
                                      const attest_scale_policy *policy, const gen_value_cfg *cfg,
                                      attest_rng *vals, attest_rng *edges, int sparse)
{
    const attest_layout *L = &s->L;
    const size_t slots = (size_t)s->num_pages * s->P;
    attest_pool_poison(L, pool, (uint32_t)s->num_pages, 0xFF);
    if (truth) {
        const float nan = attest_f32_from_bits(0x7FC00000u);
        for (size_t i = 0; i < slots * L->k_dim; i++) truth[i] = nan;
    }
    float *values = gen_calloc(L->k_dim, sizeof(float), "values");
    if (values == NULL) return ATTEST_ERR_OUT_OF_MEMORY;
    gen_wave wave;
    gen_wave_init(&wave, vals, L->k_dim);
    attest_status st = ATTEST_OK;
    for (int32_t i = 0; i < s->b && st == ATTEST_OK; i++) {
        for (int32_t j = 0; j < s->lens[i] && st == ATTEST_OK; j++) {
            const int32_t page = s->table[(size_t)i * s->ppr + j / s->P];
            const size_t phys = (size_t)page * s->P + (size_t)(j % s->P);
            if (sparse ? s->state[phys] != SLOT_SELECTED : s->state[phys] == SLOT_POISON) continue;
            gen_token_values(L, &wave, cfg, vals, edges, (int64_t)i * 4099 + j, values);
            st = attest_layout_encode_token(L, pool + (size_t)page * L->page_stride,
                                            (uint32_t)(j % s->P), values, policy);
            if (truth) memcpy(truth + phys * L->k_dim, values, L->k_dim * sizeof(float));
        }
    }
    free(values);
    return st;
}

/* Fills indices [b, s_q, topk] (physical, -1 = invalid) and topk_length [b] (may be NULL) and
 * marks the slots a valid entry selects; then points some slots past topk_length at poisoned
 * slots (those neither written nor selected). */
static attest_status fill_scope_indices(scope *s, int32_t s_q, int32_t *idx, int32_t *tl,
                                        attest_rng *r)
{
    const int32_t K = s->topk;
    static const double hole_rates[] = {0.0, 0.1, 0.5}, hole_w[] = {40, 35, 25};
    static const double dup_rates[] = {0.0, 0.05, 0.25}, dup_w[] = {50, 30, 20};
    const double hole_rate = hole_rates[attest_rng_choice(r, hole_w, 3)];
    const double dup_rate = dup_rates[attest_rng_choice(r, dup_w, 3)];
    const double all_invalid_rate = attest_rng_bernoulli(r, 0.3) ? 0.15 : 0.0;
    int32_t max_len = 1;
    for (int32_t i = 0; i < s->b; i++)
        if (s->lens[i] > max_len) max_len = s->lens[i];
    int32_t *scratch = gen_calloc((size_t)max_len, sizeof *scratch, "index scratch");
    if (scratch == NULL) return ATTEST_ERR_OUT_OF_MEMORY;

    for (int32_t bi = 0; bi < s->b; bi++) {
        const int32_t len = s->lens[bi];
        for (int32_t j = 0; j < len; j++) scratch[j] = j;
        if (tl) {
            static const double w[] = {40, 10, 50};
            switch (attest_rng_choice(r, w, 3)) {
            case 0: tl[bi] = K; break;
            case 1: tl[bi] = 0; break;
            default: tl[bi] = (int32_t)attest_rng_range(r, 1, K); break;
            }
        }
        const int32_t valid = tl ? tl[bi] : K;
        for (int32_t qi = 0; qi < s_q; qi++) {
            int32_t *row = idx + ((size_t)bi * s_q + qi) * K;
            if (len == 0 || attest_rng_bernoulli(r, all_invalid_rate)) {
                for (int32_t k = 0; k < K; k++) row[k] = -1;
                continue;
            }
            /* Partial Fisher-Yates: the first n of scratch become n distinct positions (scratch
             * stays a permutation, so later rows stay uniform). */
            const int32_t n = K < len ? K : len;
            for (int32_t k = 0; k < n; k++) {
                int32_t m = (int32_t)attest_rng_range(r, k, len - 1);
                int32_t t = scratch[k];
                scratch[k] = scratch[m];
                scratch[m] = t;
            }
            for (int32_t k = 0; k < K; k++) {
                row[k] = k < n ? scratch[k] : -1;
                if (attest_rng_bernoulli(r, hole_rate)) {
                    row[k] = -1;
                } else if (k > 0 && attest_rng_bernoulli(r, dup_rate)) {
                    int32_t src = row[attest_rng_below(r, (uint64_t)k)];
                    if (src != -1) row[k] = src;
                }
            }
            if (attest_rng_bernoulli(r, 0.5)) attest_rng_shuffle_i32(r, row, (size_t)K);
            for (int32_t k = 0; k < K; k++) {
                if (row[k] == -1) continue;
                row[k] = s->table[(size_t)bi * s->ppr + row[k] / s->P] * s->P + row[k] % s->P;
                if (k < valid) s->state[row[k]] = SLOT_SELECTED;
            }
        }
    }
    free(scratch);
    if (tl == NULL || !attest_rng_bernoulli(r, 0.6)) return ATTEST_OK;

    /* Slots past topk_length are invalid whatever they hold: pointing them at poison makes a
     * kernel that ignores topk_length read NaN. */
    const size_t slots = (size_t)s->num_pages * s->P;
    int32_t *poison = gen_calloc(slots, sizeof *poison, "poisoned slot list");
    if (poison == NULL) return ATTEST_ERR_OUT_OF_MEMORY;
    size_t n_poison = 0;
    for (size_t i = 0; i < slots; i++)
        if (s->state[i] == SLOT_POISON) poison[n_poison++] = (int32_t)i;
    for (int32_t bi = 0; bi < s->b && n_poison > 0; bi++)
        for (int32_t qi = 0; qi < s_q; qi++) {
            int32_t *row = idx + ((size_t)bi * s_q + qi) * K;
            for (int32_t k = tl[bi]; k < K; k++)
                if (attest_rng_bernoulli(r, 0.7)) row[k] = poison[attest_rng_below(r, n_poison)];
        }
    free(poison);
    return ATTEST_OK;
}

/* Writes a NaN into one value of physical token `phys`: kind 0 an fp8 byte, 1 a scale (the
 * whole tile becomes NaN), 2 a rope bf16; the truth follows. */
static void put_nan(const scope *s, uint8_t *pool, float *truth, size_t phys, int kind,
                    attest_rng *e)
{
    const attest_layout *L = &s->L;
    attest_token_offsets o;
    if (attest_layout_token_offsets(L, (uint32_t)(phys % s->P), &o) != ATTEST_OK) return;
    uint8_t *page = pool + (phys / s->P) * L->page_stride;
    float *tr = truth ? truth + phys * L->k_dim : NULL;
    const float nan = attest_f32_from_bits(0x7FC00000u);
    if (kind == 1) {
        uint32_t i = (uint32_t)attest_rng_below(e, L->num_scales);
        uint32_t nb = L->scale_format == ATTEST_SCALE_UE8M0 ? 1u : 4u;
        memset(page + o.scale[i], 0xFF, nb); /* UE8M0 NaN, or an fp32 NaN */
        for (uint32_t d = i * L->scale_tile; tr && d < (i + 1) * L->scale_tile && d < L->fp8_dim; d++)
            tr[d] = nan;
    } else if (kind == 2 && L->rope_dim > 0) {
        uint32_t r = (uint32_t)attest_rng_below(e, L->rope_dim);
        page[o.rope + 2u * r] = 0xFF;
        page[o.rope + 2u * r + 1u] = attest_rng_bernoulli(e, 0.5) ? 0x7Fu : 0xFFu;
        if (tr) tr[L->fp8_dim + r] = nan;
    } else {
        uint32_t d = (uint32_t)attest_rng_below(e, L->fp8_dim);
        page[o.fp8 + d] = gen_nan_fp8(e);
        if (tr) tr[d] = nan;
    }
}

/* NaNs in written tokens that no valid entry selects: harmless to a correct kernel, fatal to
 * one that reads outside its indices. Returns how many were placed. */
static int32_t place_unselected_nans(const scope *s, uint8_t *pool, float *truth, attest_rng *e)
{
    int32_t placed = 0;
    for (size_t i = 0; i < (size_t)s->num_pages * s->P; i++) {
        if (s->state[i] != SLOT_WRITTEN || !attest_rng_bernoulli(e, 0.25)) continue;
        static const double w[] = {70, 15, 15};
        put_nan(s, pool, truth, i, (int)attest_rng_choice(e, w, 3), e);
        placed++;
    }
    return placed;
}

/* One NaN fp8 byte in a selected token's V part: the true output is NaN there. */
static int place_selected_nan(const scope *s, uint8_t *pool, float *truth, attest_rng *e)
{
    int64_t n = 0;
    for (size_t i = 0; i < (size_t)s->num_pages * s->P; i++) n += s->state[i] == SLOT_SELECTED;
    if (n == 0) return 0;
    int64_t pick = (int64_t)attest_rng_below(e, (uint64_t)n);
    for (size_t i = 0;; i++)
        if (s->state[i] == SLOT_SELECTED && pick-- == 0) {
            put_nan(s, pool, truth, i, 0, e);
            return 1;
        }
}

/* q_zero_tiles: fp8 tiles (bit s: dims [s * tile, (s + 1) * tile)) where every q is 0, so
 * that the extreme exponents drawn there reach the values and not the scores. */
static void fill_queries(attest_case *c, attest_rng *qr, uint32_t q_zero_tiles,
                         const attest_layout *L)
{
    const attest_mla_params *p = &c->params.mla;
    attest_tensor *qt = attest_case_tensor(c, "q_bf16");
    uint16_t *q = qt->data;
    /* Cache values have a mean square of about 3 (tile amplitudes 2^u * [1, 2), u in [-2, 2])
     * and sm_scale = d^-0.5, so the score spread is about 1.7 sigma: from a nearly flat softmax
     * to a peaked one, rarely a one-hot one. */
    static const double sigmas[] = {0.25, 0.5, 0.9, 1.6};
    const double sigma = sigmas[attest_rng_below(qr, 4)];
    const size_t nq = attest_tensor_count(qt);
    for (size_t i = 0; i < nq; i++)
        q[i] = attest_bf16_encode_inline((float)attest_rng_normal_portable(qr, 0.0, sigma));
    if (q_zero_tiles != 0)
        for (size_t i = 0; i < nq; i++) {
            const uint32_t d = (uint32_t)(i % (size_t)p->d_qk);
            if (d < L->fp8_dim && ((q_zero_tiles >> (d / L->scale_tile)) & 1u)) q[i] = 0;
        }
    if (p->has_sink) {
        float *sink = attest_case_tensor(c, "attn_sink")->data;
        const int with_inf = attest_rng_bernoulli(qr, 0.5);
        for (int32_t h = 0; h < p->h_q; h++) {
            uint64_t r = with_inf ? attest_rng_below(qr, 8) : 7;
            sink[h] = r == 0   ? INFINITY
                      : r == 1 ? -INFINITY
                               : (float)attest_rng_normal_portable(qr, 2.0, 3.0);
        }
    }
}

static void draw_params(const attest_gen_options *opt, attest_rng *r, attest_rng *mix,
                        attest_mla_params *p)
{
    p->layout = opt->layout ? (attest_layout_id)opt->layout
                            : (attest_rng_bernoulli(r, 0.5) ? ATTEST_LAYOUT_MLA_V4
                                                            : ATTEST_LAYOUT_MLA_V32);
    p->page_size = opt->page_size ? opt->page_size : draw_page_size(r);
    /* The layout's widths and record size (page size 1 is valid for both decode layouts; an
     * invalid layout leaves them 0 and attest_case_define_tensors names it). */
    attest_layout L;
    memset(&L, 0, sizeof L);
    if (attest_layout_make(p->layout, 1, 0, &L) != ATTEST_OK) attest_clear_error();
    /* v32 pages may be padded: upstream tests allocate P+1 records per page. */
    p->page_stride = p->layout == ATTEST_LAYOUT_MLA_V32 && attest_rng_bernoulli(r, 0.5)
                         ? (int64_t)(p->page_size + 1) * L.token_bytes
                         : 0;
    p->b = (int32_t)attest_rng_range(r, 1, opt->max_batch);
    p->s_q = (int32_t)attest_rng_range(r, 1, opt->max_s_q);
    if (opt->production_shape)
        p->h_q = 64;
    else
        p->h_q = attest_rng_bernoulli(r, 0.3) ? opt->max_heads
                                              : (int32_t)attest_rng_range(r, 1, opt->max_heads);
    p->h_q = gen_mix_heads(opt, mix, p->h_q, &p->b, &p->s_q);
    p->d_qk = (int32_t)L.k_dim;
    p->d_v = (int32_t)L.v_dim;
    if (opt->production_shape)
        p->topk = 512;
    else
        p->topk = attest_rng_bernoulli(r, 0.3) ? opt->max_topk
                                               : (int32_t)attest_rng_range(r, 1, opt->max_topk);
    p->sm_scale = (float)(1.0 / sqrt((double)p->d_qk)); /* sqrt is correctly rounded */
    p->has_topk_length = attest_rng_bernoulli(r, 0.5);
    p->has_sink = attest_rng_bernoulli(r, 0.5);
    p->lse_convention = ATTEST_LSE_EXCLUDES_SINK;
    /* The extra (compressed) scope exists in DeepSeek-V4's decode only. */
    p->has_extra = p->layout == ATTEST_LAYOUT_MLA_V4 && attest_rng_bernoulli(r, 0.3);
    if (p->has_extra) {
        p->extra_page_size = draw_page_size(r);
        p->extra_page_stride = 0;
        p->extra_topk = opt->production_shape
                            ? 512
                            : (int32_t)attest_rng_range(r, 1, opt->max_topk);
        p->has_extra_topk_length = attest_rng_bernoulli(r, 0.5);
    }
}

static void *tensor_data(attest_case *c, const char *name)
{
    attest_tensor *t = attest_case_tensor(c, name);
    return t ? t->data : NULL;
}

attest_status gen_mla_case(const attest_gen_options *opt, uint64_t seed, attest_case *c,
                           attest_gen_info *info)
{
    attest_rng shape, vals, qr, idx, edges, xvals, xidx, mix;
    attest_rng_seed_stream(&shape, seed, GEN_STREAM_SHAPE);
    attest_rng_seed_stream(&vals, seed, GEN_STREAM_VALUES);
    attest_rng_seed_stream(&qr, seed, GEN_STREAM_QUERY);
    attest_rng_seed_stream(&idx, seed, GEN_STREAM_INDICES);
    attest_rng_seed_stream(&edges, seed, GEN_STREAM_EDGES);
    attest_rng_seed_stream(&xvals, seed, GEN_STREAM_EXTRA);
    attest_rng_seed_stream(&xidx, seed, GEN_STREAM_EXTRA_IDX);
    attest_rng_seed_stream(&mix, seed, GEN_STREAM_MIX);

    attest_mla_params *p = &c->params.mla;
    draw_params(opt, &shape, &mix, p);
    scope m = {0}, x = {0};
    attest_status st = attest_layout_make(p->layout, (uint32_t)p->page_size,
                                          (uint64_t)p->page_stride, &m.L);
    if (st != ATTEST_OK) return st;
    m.P = p->page_size;
    m.topk = p->topk;
    st = draw_scope(&m, &shape, p->b, opt->max_len);
    if (st != ATTEST_OK) goto done;
    p->page_stride = (int64_t)m.L.page_stride;
    p->num_pages = m.num_pages;
    if (p->has_extra) {
        st = attest_layout_make(p->layout, (uint32_t)p->extra_page_size, 0, &x.L);
        if (st != ATTEST_OK) goto done;
        x.P = p->extra_page_size;
        x.topk = p->extra_topk;
        st = draw_scope(&x, &shape, p->b, opt->max_len);
        if (st != ATTEST_OK) goto done;
        p->extra_page_stride = (int64_t)x.L.page_stride;
        p->extra_num_pages = x.num_pages;
    }
    const attest_scale_policy policy = gen_draw_policy(&shape, &m.L, 0.5);
    st = attest_case_define_tensors(c, opt->with_truth);
    if (st == ATTEST_OK) st = attest_case_alloc_heap(c);
    if (st != ATTEST_OK) goto done;

    gen_value_cfg cfg;
    gen_value_cfg_draw(&cfg, &edges, opt->edge_bytes, policy.kind == ATTEST_SCALE_RAW);
    /* Extreme exponents on every tile of every key make the scores huge (10^7-10^10), where a
     * float32 softmax keeps no significant bit and the case judges nothing (a fifth of the
     * default cases were vacuous). They go instead on one or two value tiles whose q is zero
     * (the values carry them, the scores do not) and on all tiles of about one key in 128 (the
     * scores of a few keys, as a real outlier token). */
    uint32_t q_zero_tiles = 0;
    if (cfg.extreme_rate > 0.0) {
        q_zero_tiles = 1u << attest_rng_below(&mix, m.L.num_scales);
        if (attest_rng_bernoulli(&mix, 0.3)) q_zero_tiles |= 1u << attest_rng_below(&mix, m.L.num_scales);
        cfg.extreme_tiles = q_zero_tiles;
        cfg.extreme_salt = attest_rng_u64(&mix);
        cfg.extreme_key_rate = 1.0 / 128.0;
    }
    /* Half the cases hold every token an index slot names (so unselected tokens are real
     * values, sometimes with NaNs sprinkled in); half hold only the selected ones, the rest
     * poison, as upstream tests build them. Indices come first so both fills know what to
     * write. */
    const int sparse = attest_rng_bernoulli(&shape, 0.5);
    uint8_t *pool = tensor_data(c, "cache_bytes");
    float *truth = tensor_data(c, "kv_true");
    uint8_t *xpool = tensor_data(c, "extra_cache_bytes");
    float *xtruth = tensor_data(c, "extra_kv_true");
    if (!sparse) mark_all_written(&m);
    st = fill_scope_indices(&m, p->s_q, tensor_data(c, "indices"),
                            p->has_topk_length ? tensor_data(c, "topk_length") : NULL, &idx);
    if (st == ATTEST_OK && !sparse) keep_named(&m, p->s_q, tensor_data(c, "indices"));
    if (st == ATTEST_OK) st = fill_scope_cache(&m, pool, truth, &policy, &cfg, &vals, &edges, sparse);
    if (st == ATTEST_OK && p->has_extra) {
        if (!sparse) mark_all_written(&x);
        st = fill_scope_indices(
            &x, p->s_q, tensor_data(c, "extra_indices"),
            p->has_extra_topk_length ? tensor_data(c, "extra_topk_length") : NULL, &xidx);
        if (st == ATTEST_OK && !sparse) keep_named(&x, p->s_q, tensor_data(c, "extra_indices"));
        if (st == ATTEST_OK)
            st = fill_scope_cache(&x, xpool, xtruth, &policy, &cfg, &xvals, &edges, sparse);
    }
    if (st != ATTEST_OK) goto done;
    fill_queries(c, &qr, q_zero_tiles, &m.L);

    int32_t nan_unselected = 0;
    int nan_selected = 0;
    if (opt->edge_bytes) {
        if (attest_rng_bernoulli(&edges, 0.35)) {
            nan_unselected += place_unselected_nans(&m, pool, truth, &edges);
            if (p->has_extra) nan_unselected += place_unselected_nans(&x, xpool, xtruth, &edges);
        }
        if (attest_rng_bernoulli(&edges, 0.03)) {
            const int use_extra = p->has_extra && attest_rng_bernoulli(&edges, 0.3);
            nan_selected = use_extra ? place_selected_nan(&x, xpool, xtruth, &edges)
                                     : place_selected_nan(&m, pool, truth, &edges);
        }
    }

    if (info) {
        st = gen_info_alloc(info, ATTEST_KERNEL_MLA_DECODE, p->b, m.ppr,
                            p->has_extra ? x.ppr : -1);
        if (st != ATTEST_OK) goto done;
        memcpy(info->lens, m.lens, (size_t)p->b * sizeof *m.lens);
        memcpy(info->page_table, m.table, (size_t)p->b * m.ppr * sizeof *m.table);
        if (p->has_extra) {
            memcpy(info->extra_lens, x.lens, (size_t)p->b * sizeof *x.lens);
            memcpy(info->extra_page_table, x.table, (size_t)p->b * x.ppr * sizeof *x.table);
        }
        info->policy = policy;
        info->nan_selected = nan_selected;
        info->nan_unselected = nan_unselected;
        info->sparse_fill = sparse;
    }
done:
    scope_free(&m);
    scope_free(&x);
    return st;
}
