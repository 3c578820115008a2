/* attest reports: mla-decode localization. An output element of sparse MLA decode is a softmax-
 * weighted sum over the query's selected tokens, so "which dim is wrong" says little; what a
 * kernel engineer needs is which token, page and bytes the candidate got wrong. Given the case
 * and the candidate's output row, this recomputes the reference softmax of the worst element's
 * (request, query, head) in double from the cache bytes, then asks, for every selected token and
 * for every page, how close the reference comes to the candidate when that token (page) is left
 * out: a token the candidate skipped or misread is the one whose removal explains the candidate.
 * It also names the token with the largest |p * v[dim]|, and the exact bytes of the winner (fp8
 * element, its scale, the rope) in the cache of its scope.
 */
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attest/layout.h"
#include "attest/numerics.h"
#include "report_internal.h"

typedef struct scope_view {
    const char *indices_name, *cache_name;
    attest_layout layout;
    const uint8_t *pool;
    int64_t num_tokens;
    const int32_t *indices;
    int32_t topk, limit;
    int has_length; /* a topk_length tensor cuts the row at limit */
} scope_view;

typedef struct token {
    int scope;
    int32_t slot, index; /* slot in the index list, physical token */
    double score, e;     /* sm_scale * q.k, exp(score - max) */
    double *v;           /* d_v values (into a shared buffer) */
} token;

static const void *tensor_data(const attest_case *c, const char *name, attest_dtype dtype,
                               size_t count)
{
    const attest_tensor *t = attest_case_tensor_const(c, name);
    if (!t || !t->data || t->dtype != dtype || attest_tensor_count(t) < count) return NULL;
    return t->data;
}

static int load_scope(const attest_case *c, int extra, int64_t request, int64_t query,
                      scope_view *s)
{
    const attest_mla_params *p = &c->params.mla;
    memset(s, 0, sizeof *s);
    s->indices_name = extra ? "extra_indices" : "indices";
    s->cache_name = extra ? "extra_cache_bytes" : "cache_bytes";
    const int32_t P = extra ? p->extra_page_size : p->page_size;
    const int64_t stride = extra ? p->extra_page_stride : p->page_stride;
    const int32_t pages = extra ? p->extra_num_pages : p->num_pages;
    s->topk = extra ? p->extra_topk : p->topk;
    if (P <= 0 || pages <= 0 || s->topk <= 0 ||
        attest_layout_make(p->layout, (uint32_t)P, (uint64_t)stride, &s->layout) != ATTEST_OK) {
        attest_clear_error();
        return -1;
    }
    s->num_tokens = (int64_t)pages * P;
    s->pool = tensor_data(c, s->cache_name, ATTEST_DTYPE_U8, (size_t)pages * s->layout.page_stride);
    const int32_t *all = tensor_data(c, s->indices_name, ATTEST_DTYPE_I32,
                                     (size_t)p->b * (size_t)p->s_q * (size_t)s->topk);
    if (!s->pool || !all) return -1;
    s->indices = all + ((size_t)request * (size_t)p->s_q + (size_t)query) * (size_t)s->topk;
    s->limit = s->topk;
    if (extra ? p->has_extra_topk_length : p->has_topk_length) {
        const int32_t *tl = tensor_data(c, extra ? "extra_topk_length" : "topk_length",
                                        ATTEST_DTYPE_I32, (size_t)p->b);
        if (!tl) return -1;
        s->has_length = 1;
        if (tl[request] < s->limit) s->limit = tl[request] < 0 ? 0 : tl[request];
    }
    return 0;
}

/* The byte ranges one token occupies in its scope's cache, and the bytes element `dim` of its
 * dequantized K came from. */
static void print_bytes(FILE *f, const scope_view *s, int32_t index, int32_t dim)
{
    const attest_layout *L = &s->layout;
    const int64_t page = index / (int64_t)L->page_size, in_page = index % (int64_t)L->page_size;
    attest_token_offsets off;
    if (attest_layout_token_offsets(L, (uint32_t)in_page, &off) != ATTEST_OK) {
        attest_clear_error();
        return;
    }
    const uint64_t base = (uint64_t)page * L->page_stride;
    const uint32_t sb = L->scale_format == ATTEST_SCALE_UE8M0 ? 1u : 4u;
    fprintf(f, "      %s: page %" PRId64 " at byte %" PRIu64 " (%" PRId64 " * %" PRIu64
               "), in-page slot %" PRId64 "; fp8 bytes [%" PRIu64 ", %" PRIu64 ")",
            s->cache_name, page, base, page, L->page_stride, in_page, base + off.fp8,
            base + off.fp8 + L->fp8_dim);
    if (L->num_scales > 0) {
        const uint64_t lo = base + off.scale[0], hi = base + off.scale[L->num_scales - 1] + sb;
        fprintf(f, ", %s scales [%" PRIu64 ", %" PRIu64 ")",
                L->scale_format == ATTEST_SCALE_UE8M0 ? "ue8m0" : "float32", lo, hi);
    }
    if (L->rope_dim > 0)
        fprintf(f, ", bf16 rope [%" PRIu64 ", %" PRIu64 ")", base + off.rope,
                base + off.rope + (uint64_t)2 * L->rope_dim);
    fputc('\n', f);
    if (dim < 0) return;
    if ((uint32_t)dim < L->fp8_dim) {
        const uint32_t tile = (uint32_t)dim / L->scale_tile;
        fprintf(f, "      dim %d: fp8 byte %" PRIu64 " = 0x%02x, scale %u at byte %" PRIu64
                   " = %.9g\n",
                (int)dim, base + off.fp8 + (uint64_t)dim, s->pool[base + off.fp8 + (uint64_t)dim],
                tile, base + off.scale[tile],
                attest_layout_token_scale(L, s->pool + base, (uint32_t)in_page, tile));
    } else if ((uint32_t)dim < L->fp8_dim + L->rope_dim) {
        const uint64_t at = base + off.rope + (uint64_t)2 * ((uint32_t)dim - L->fp8_dim);
        fprintf(f, "      dim %d: bf16 rope bytes [%" PRIu64 ", %" PRIu64 ")\n", (int)dim, at,
                at + 2);
    }
}

/* Distance of the candidate row from the reference row with tokens [skip] removed (weights
 * renormalized); skip NULL: the full reference. */
static double distance(const token *t, int32_t n, const unsigned char *skip, double sink_e,
                       const double *cand, int32_t dv, double *row)
{
    double z = sink_e;
    for (int32_t d = 0; d < dv; d++) row[d] = 0.0;
    for (int32_t k = 0; k < n; k++) {
        if (skip && skip[k]) continue;
        z += t[k].e;
        for (int32_t d = 0; d < dv; d++) row[d] += t[k].e * t[k].v[d];
    }
    double acc = 0.0;
    for (int32_t d = 0; d < dv; d++) {
        const double r = z > 0 ? row[d] / z : 0.0, x = cand[d] - r;
        acc += x * x;
    }
    return sqrt(acc);
}

/* The selected pages with their token count and total reference weight. */
static void list_pages(FILE *f, const token *t, int32_t n, const scope_view *sc, double z)
{
    int shown = 0;
    fprintf(f, "      selected pages (page: tokens, weight):");
    for (int32_t k = 0; k < n && shown < 16; k++) {
        const int64_t P = sc[t[k].scope].layout.page_size, page = t[k].index / P;
        int first = 1, tokens = 0;
        double w = 0.0;
        for (int32_t j = 0; j < n; j++) {
            if (t[j].scope != t[k].scope || t[j].index / P != page) continue;
            if (j < k) first = 0;
            tokens++;
            w += t[j].e / z;
        }
        if (!first) continue;
        fprintf(f, "%s %s%" PRId64 ": %d, %.3g", shown++ ? ";" : "", t[k].scope ? "extra " : "",
                page, tokens, w);
    }
    fprintf(f, "%s\n", shown == 16 ? "; ..." : "");
}

/* Non-finite values among a token's dequantized K (kd of them, decoded into kk). */
static int32_t nonfinite_values(const scope_view *s, int32_t index, double *kk)
{
    uint32_t slot;
    const uint8_t *page = attest_pool_token_page(&s->layout, s->pool, (uint64_t)index, &slot);
    attest_layout_decode_token(&s->layout, page, slot, kk);
    int32_t bad = 0;
    for (uint32_t d = 0; d < s->layout.k_dim; d++) bad += !isfinite(kk[d]);
    return bad;
}

/* The scale `shift` tiles away from tile `tile` of the token at in-page offsets `off` of the
 * page at `page` (a token's scales are contiguous): the bytes a kernel whose tile index is off
 * by `shift` multiplies by; 0 when they fall outside the page. */
static int shifted_scale(const attest_layout *L, const uint8_t *page,
                         const attest_token_offsets *off, uint32_t tile, int shift, double *out)
{
    const int64_t sb = L->scale_format == ATTEST_SCALE_UE8M0 ? 1 : 4;
    if (L->num_scales > 1 && (int64_t)(off->scale[1] - off->scale[0]) != sb) return 0;
    const int64_t at = (int64_t)off->scale[0] + ((int64_t)tile + shift) * sb;
    if (at < 0 || at + sb > (int64_t)L->page_stride) return 0;
    if (sb == 1) {
        *out = attest_ue8m0_decode_f64(page[at]);
    } else {
        float v;
        memcpy(&v, page + at, sizeof v);
        *out = (double)v;
    }
    return 1;
}

/* A candidate row that is not finite where the reference is: the bytes a kernel should not
 * read but a common bug does, when they decode to inf or NaN (the generator points slots past
 * topk_length at unwritten, NaN-filled slots, and fills padding with NaN patterns, for this).
 * Each is a possible cause, all are listed: a slot past the length naming such a token (a
 * kernel ignoring the length), a -1 slot read as token 0 (weighted by 0, and 0 * NaN is NaN),
 * and the bytes after a selected token's last scale (one scale too many). */
static void nonfinite_suspects(FILE *f, const scope_view *sc, int nscopes, int64_t request,
                               int64_t query, double *kk)
{
    int shown = 0;
    for (int i = 0; i < nscopes; i++) {
        const scope_view *s = &sc[i];
        const char *length = i ? "extra_topk_length" : "topk_length";
        int32_t named = 0;
        for (int32_t k = s->limit; k < s->topk; k++) {
            const int32_t idx = s->indices[k];
            if (idx < 0 || idx >= s->num_tokens) continue;
            const int32_t bad = nonfinite_values(s, idx, kk);
            if (bad == 0) continue;
            if (named++ < 3) {
                fprintf(f, "      possible cause, past %s (%d): %s[%" PRId64 ", %" PRId64
                           ", %d] = token %d, whose K holds %d inf/nan of %u values: a kernel "
                           "that reads past %s takes it\n",
                        length, (int)s->limit, s->indices_name, request, query, (int)k, (int)idx,
                        (int)bad, s->layout.k_dim, length);
                print_bytes(f, s, idx, -1);
                shown++;
            }
        }
        if (named > 3)
            fprintf(f, "      (%d more slots past %s name such tokens)\n", (int)(named - 3),
                    length);
        int32_t holes = 0;
        for (int32_t k = 0; k < s->limit; k++) holes += s->indices[k] == -1;
        if (holes > 0 && s->num_tokens > 0) {
            const int32_t bad = nonfinite_values(s, 0, kk);
            if (bad > 0) {
                fprintf(f, "      possible cause, -1 slots: %s[%" PRId64 ", %" PRId64 "] has %d -1 "
                           "slot%s%s%s, and token 0 holds %d inf/nan of %u values: a kernel "
                           "that reads token 0 for -1 and weights it by 0 takes NaN (0 * NaN)\n",
                        s->indices_name, request, query, (int)holes, holes == 1 ? "" : "s",
                        s->has_length ? " within " : "", s->has_length ? length : "", (int)bad,
                        s->layout.k_dim);
                shown++;
            }
        }
    }
    /* One scale too many: the bytes after a selected token's last scale (the layout's padding,
     * which the generator fills with NaN patterns, or the next field) read as a scale. */
    int over = 0; /* one line: every selected token has such bytes when one has */
    for (int i = 0; i < nscopes && !over; i++) {
        const scope_view *s = &sc[i];
        const attest_layout *L = &s->layout;
        for (int32_t k = 0; k < s->limit && !over; k++) {
            const int32_t idx = s->indices[k];
            if (idx < 0 || idx >= s->num_tokens || L->num_scales == 0) continue;
            const int64_t page = idx / (int64_t)L->page_size, in_page = idx % (int64_t)L->page_size;
            attest_token_offsets off;
            if (attest_layout_token_offsets(L, (uint32_t)in_page, &off) != ATTEST_OK) {
                attest_clear_error();
                return;
            }
            const uint8_t *base = s->pool + (uint64_t)page * L->page_stride;
            double v;
            if (!shifted_scale(L, base, &off, L->num_scales - 1, 1, &v) || isfinite(v)) continue;
            const int ue8m0 = L->scale_format == ATTEST_SCALE_UE8M0;
            const uint64_t at = (uint64_t)page * L->page_stride + off.scale[0] +
                                (uint64_t)L->num_scales * (ue8m0 ? 1u : 4u);
            fprintf(f, "      possible cause, one scale too many: the %s after the last scale of "
                       "token %d (%s[%" PRId64 ", %" PRId64 ", %d]), byte %" PRIu64 ", reads as "
                       "a %s scale of %s: a kernel that reads scale %u of a token with %u (an "
                       "off-by-one tile index) takes it\n",
                    ue8m0 ? "byte" : "4 bytes", (int)idx, s->indices_name, request, query, (int)k,
                    at, ue8m0 ? "ue8m0" : "float32", isnan(v) ? "NaN" : "inf", L->num_scales,
                    L->num_scales);
            over = 1;
            shown++;
        }
    }
    if (!shown)
        fprintf(f, "      no token the query names outside its selection, and no byte after a "
                   "selected token's last scale, decodes to inf or nan\n");
}

/* The distance of the candidate row from the reference recomputed with every selected token's
 * fp8 tile i dequantized with the scale of tile i + shift (rope as it is): a kernel whose scale
 * index is off by one misreads every token alike, which no single token or page explains. -1
 * when some scale cannot be read. kk: scratch of k_dim doubles; keys: n rows of dv doubles. */
static double tile_shift_distance(const token *t, int32_t n, const scope_view *sc, int shift,
                                  const double *q, double sm_scale, double sink, int has_sink,
                                  const double *cand, int32_t dv, double *kk, double *keys,
                                  double *scores)
{
    double m = -INFINITY;
    for (int32_t k = 0; k < n; k++) {
        const scope_view *s = &sc[t[k].scope];
        const attest_layout *L = &s->layout;
        const int64_t page = t[k].index / (int64_t)L->page_size;
        const int64_t in_page = t[k].index % (int64_t)L->page_size;
        attest_token_offsets off;
        if (attest_layout_token_offsets(L, (uint32_t)in_page, &off) != ATTEST_OK) {
            attest_clear_error();
            return -1.0;
        }
        const uint8_t *base = s->pool + (uint64_t)page * L->page_stride, *fp8 = base + off.fp8;
        for (uint32_t tile = 0; tile < L->num_scales; tile++) {
            double sc_v;
            if (!shifted_scale(L, base, &off, tile, shift, &sc_v)) return -1.0;
            const uint32_t end = (tile + 1) * L->scale_tile;
            for (uint32_t d = tile * L->scale_tile; d < end && d < L->fp8_dim; d++)
                kk[d] = (double)attest_fp8_values[fp8[d]] * sc_v;
        }
        for (uint32_t d = L->fp8_dim; d < L->k_dim; d++) kk[d] = t[k].v[d];
        double dot = 0.0;
        for (uint32_t d = 0; d < L->k_dim; d++) dot += q[d] * kk[d];
        scores[k] = sm_scale * dot;
        if (scores[k] > m) m = scores[k];
        memcpy(keys + (size_t)k * (size_t)dv, kk, (size_t)dv * sizeof *kk);
    }
    if (!isfinite(m)) return -1.0;
    double z = has_sink ? exp(sink - m) : 0.0;
    for (int32_t k = 0; k < n; k++) z += (scores[k] = exp(scores[k] - m));
    double acc = 0.0;
    for (int32_t d = 0; d < dv; d++) {
        double r = 0.0;
        for (int32_t k = 0; k < n; k++) r += scores[k] * keys[(size_t)k * (size_t)dv + (size_t)d];
        const double x = cand[d] - r / z;
        acc += x * x;
    }
    return isfinite(acc) ? sqrt(acc) : -1.0;
}

void attest_report_mla_locate(FILE *f, const attest_case *c, const attest_coord *co,
                              const void *cand_out, size_t cand_bytes)
{
    const attest_mla_params *p = &c->params.mla;
    if (c->kernel != ATTEST_KERNEL_MLA_DECODE || co->rank < 3) return;
    const int64_t request = co->index[0], query = co->index[1], head = co->index[2];
    const int32_t dim = co->rank == 4 ? (int32_t)co->index[3] : -1;
    if (request < 0 || request >= p->b || query < 0 || query >= p->s_q || head < 0 ||
        head >= p->h_q || dim >= p->d_v)
        return;
    scope_view sc[2];
    const int nscopes = p->has_extra ? 2 : 1;
    for (int i = 0; i < nscopes; i++)
        if (load_scope(c, i, request, query, &sc[i])) return;
    const size_t qi = ((size_t)request * (size_t)p->s_q + (size_t)query) * (size_t)p->h_q +
                      (size_t)head;
    const uint16_t *qb = tensor_data(c, "q_bf16", ATTEST_DTYPE_BF16,
                                     (qi + 1) * (size_t)p->d_qk);
    if (!qb) return;
    qb += qi * (size_t)p->d_qk;
    const int32_t kd = (int32_t)sc[0].layout.k_dim, dv = p->d_v;
    if (kd != p->d_qk || dv <= 0 || dv > kd) return;

    int32_t cap = 0;
    for (int i = 0; i < nscopes; i++) cap += sc[i].limit;
    token *t = calloc((size_t)(cap ? cap : 1), sizeof *t);
    double *keys = malloc((size_t)(cap ? cap : 1) * (size_t)kd * sizeof *keys);
    double *q = malloc((size_t)kd * sizeof *q), *row = malloc((size_t)dv * sizeof *row);
    double *cand = malloc((size_t)dv * sizeof *cand);
    double *scratch = malloc((size_t)kd * sizeof *scratch); /* a token's K, for the suspects */
    unsigned char *skip = calloc((size_t)(cap ? cap : 1), 1);
    if (!t || !keys || !q || !row || !cand || !scratch || !skip) goto out;
    for (int32_t d = 0; d < kd; d++) q[d] = (double)attest_bf16_decode(qb[d]);

    int32_t n = 0;
    double m = -INFINITY;
    for (int i = 0; i < nscopes; i++) {
        for (int32_t k = 0; k < sc[i].limit; k++) {
            const int32_t idx = sc[i].indices[k];
            if (idx < 0 || idx >= sc[i].num_tokens) continue; /* -1, or out of range */
            uint32_t slot;
            const uint8_t *page = attest_pool_token_page(&sc[i].layout, sc[i].pool,
                                                         (uint64_t)idx, &slot);
            double *kk = keys + (size_t)n * (size_t)kd;
            attest_layout_decode_token(&sc[i].layout, page, slot, kk);
            double dot = 0.0;
            for (int32_t d = 0; d < kd; d++) dot += q[d] * kk[d];
            t[n] = (token){i, k, idx, (double)p->sm_scale * dot, 0.0, kk};
            if (t[n].score > m) m = t[n].score;
            n++;
        }
    }
    /* The candidate's row, when kept: a non-finite row asks what it read instead. */
    const size_t need = (qi + 1) * (size_t)dv * 2;
    int finite = cand_out && cand_bytes >= need;
    const int kept_row = finite;
    for (int32_t d = 0; d < dv && finite; d++) {
        cand[d] = (double)attest_bf16_decode(((const uint16_t *)cand_out)[qi * (size_t)dv + d]);
        if (!isfinite(cand[d])) finite = 0;
    }
    if (n == 0) {
        fprintf(f, "    localization: the query selects no valid token (a lonely query)\n");
        if (kept_row && !finite) nonfinite_suspects(f, sc, nscopes, request, query, scratch);
        goto out;
    }
    const float *sink = p->has_sink ? tensor_data(c, "attn_sink", ATTEST_DTYPE_F32,
                                                  (size_t)p->h_q)
                                    : NULL;
    const double sink_e = sink ? exp((double)sink[head] - m) : 0.0;
    double z = sink_e;
    for (int32_t k = 0; k < n; k++) {
        t[k].e = exp(t[k].score - m);
        z += t[k].e;
    }

    /* The largest |p * v[dim]|: the token this element leans on most in the reference. */
    int32_t heavy = 0;
    if (dim >= 0)
        for (int32_t k = 1; k < n; k++)
            if (fabs(t[k].e * t[k].v[dim]) > fabs(t[heavy].e * t[heavy].v[dim])) heavy = k;
    fprintf(f, "    localization over the %d selected tokens of request %" PRId64 ", query %" PRId64
               ", head %" PRId64 " (reference softmax recomputed from the cache bytes):\n",
            (int)n, request, query, head);
    if (dim >= 0) {
        fprintf(f, "      heaviest in dim %d: %s[%" PRId64 ", %" PRId64 ", %d] = token %d, weight "
                   "p = %.6g, p * v = %.6g\n",
                (int)dim, sc[t[heavy].scope].indices_name, request, query, (int)t[heavy].slot,
                (int)t[heavy].index, t[heavy].e / z, t[heavy].e * t[heavy].v[dim] / z);
        print_bytes(f, &sc[t[heavy].scope], t[heavy].index, dim);
    }

    /* Leave one out, over the whole head row, when the candidate row is finite. */
    if (!finite) {
        fprintf(f, "      (the candidate's row is not finite or was not kept: no leave-one-out)\n");
        list_pages(f, t, n, sc, z);
        if (kept_row) nonfinite_suspects(f, sc, nscopes, request, query, scratch);
        goto out;
    }
    const double base = distance(t, n, NULL, sink_e, cand, dv, row);
    int32_t best = -1;
    double best_d = base;
    for (int32_t k = 0; k < n; k++) {
        skip[k] = 1;
        const double d = distance(t, n, skip, sink_e, cand, dv, row);
        skip[k] = 0;
        if (d < best_d) {
            best_d = d;
            best = k;
        }
    }
    fprintf(f, "      |candidate - reference| over the row's %d dims: %.6g\n", (int)dv, base);
    if (best >= 0 && best_d < 0.5 * base) {
        fprintf(f, "      explained by token %d (%s[%" PRId64 ", %" PRId64 ", %d], weight %.6g): "
                   "without it the reference is %.6g from the candidate\n",
                (int)t[best].index, sc[t[best].scope].indices_name, request, query,
                (int)t[best].slot, t[best].e / z, best_d);
        print_bytes(f, &sc[t[best].scope], t[best].index, dim);
    } else {
        fprintf(f, "      no single token explains it (best leave-one-out: %.6g)\n", best_d);
        /* A misread shared by every token: the scale index off by one tile either way. */
        double *tk = malloc((size_t)n * (size_t)dv * sizeof *tk);
        double *ts = malloc((size_t)n * sizeof *ts);
        for (int shift = 1; shift >= -1 && tk && ts; shift -= 2) {
            const double d = tile_shift_distance(t, n, sc, shift, q, (double)p->sm_scale,
                                                 sink ? (double)sink[head] : 0.0, sink != NULL,
                                                 cand, dv, scratch, tk, ts);
            if (d < 0 || d >= 0.05 * base) continue;
            fprintf(f, "      explained by a scale index off by %+d tile for every token (tile i "
                       "dequantized with the scale of tile i%+d): so recomputed, the reference is "
                       "%.6g from the candidate\n",
                    shift, shift, d);
            break;
        }
        free(tk);
        free(ts);
    }

    /* Leave one page out: pages whose tokens the candidate read wrongly (a page-stride bug reads
     * every page but the first from the wrong bytes) are the pages whose removal helps. */
    int printed = 0, helped = 0, pages_seen = 0;
    for (int32_t k = 0; k < n; k++) {
        const int64_t P = sc[t[k].scope].layout.page_size, page = t[k].index / P;
        int first = 1;
        for (int32_t j = 0; j < k; j++)
            if (t[j].scope == t[k].scope && t[j].index / P == page) first = 0;
        if (!first) continue;
        pages_seen++;
        int tokens = 0;
        for (int32_t j = 0; j < n; j++)
            if ((skip[j] = t[j].scope == t[k].scope && t[j].index / P == page)) tokens++;
        const double d = distance(t, n, skip, sink_e, cand, dv, row);
        memset(skip, 0, (size_t)n);
        if (d < 0.9 * base) {
            helped++;
            if (printed++ < 8)
                fprintf(f, "      page %" PRId64 " of %s (%d selected token%s): leaving it out "
                           "brings the reference to %.6g of the candidate (%.0f%% of the error)\n",
                        page, sc[t[k].scope].cache_name, tokens, tokens == 1 ? "" : "s", d,
                        100.0 * d / base);
        }
    }
    fprintf(f, "      pages: %d of %d selected pages explain part of the error%s\n", helped,
            pages_seen, printed < helped ? " (first 8 shown)" : "");
out:
    free(t);
    free(keys);
    free(q);
    free(row);
    free(cand);
    free(scratch);
    free(skip);
}
