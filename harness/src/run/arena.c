/* The guarded arena (arena.h): placement, poison, canaries, the input check. */
#include "arena.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "attest/runner.h"

#define ARENA_MIN_CAPACITY ((size_t)4 << 20)
#define ARENA_GROW_STEP ((size_t)1 << 20)

/* Canary bytes depend on their position in the region, so a candidate that writes any constant
 * (0, -1, a NaN pattern) or copies a neighbouring canary over another still changes them. */
static uint8_t canary_pattern[ARENA_CANARY_BYTES];
static pthread_once_t canary_once = PTHREAD_ONCE_INIT;

static void canary_init(void)
{
    uint32_t x = 0x9E3779B9u;
    for (size_t i = 0; i < ARENA_CANARY_BYTES; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        canary_pattern[i] = (uint8_t)(x >> 24);
    }
}

static size_t align_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

static size_t control_bytes(void) { return align_up(sizeof(arena_control), 4096); }

void arena_init(arena *a)
{
    memset(a, 0, sizeof *a);
    pthread_once(&canary_once, canary_init);
}

void arena_release(arena *a)
{
    a->guarded = 0;
    if (a->base) munmap(a->base, a->capacity);
    a->base = NULL;
    a->control = NULL;
    a->capacity = 0;
    a->num_slots = 0;
}

static attest_status arena_map(arena *a, size_t need)
{
    size_t cap = a->capacity ? a->capacity : ARENA_MIN_CAPACITY;
    while (cap < need) {
        ATTEST_RETURN_IF(cap > SIZE_MAX / 2, ATTEST_ERR_OUT_OF_MEMORY,
                         "arena: %zu bytes cannot be mapped", need);
        cap *= 2;
    }
    cap = align_up(cap, ARENA_GROW_STEP);
    /* NORESERVE: a sparse pool makes the arena gigabytes of address space of which a few MB
     * are ever written. */
    void *p = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    ATTEST_RETURN_IF(p == MAP_FAILED, ATTEST_ERR_OUT_OF_MEMORY,
                     "arena: cannot map %zu bytes of shared memory: %s", cap, strerror(errno));
    arena_release(a);
    a->dense_end = 0;
    a->base = p;
    a->capacity = cap;
    a->generation++;
    a->control = p;
    return ATTEST_OK;
}

uint32_t arena_poison_bits(attest_dtype dtype)
{
    switch (dtype) {
    case ATTEST_DTYPE_F32: return ATTEST_POISON_F32;
    case ATTEST_DTYPE_BF16: return ATTEST_POISON_BF16;
    default: return ATTEST_POISON_BYTE;
    }
}

static void poison(uint8_t *p, size_t n, attest_dtype dtype)
{
    if (dtype == ATTEST_DTYPE_F32) {
        const uint32_t v = ATTEST_POISON_F32;
        for (size_t i = 0; i + 4 <= n; i += 4) memcpy(p + i, &v, 4);
    } else if (dtype == ATTEST_DTYPE_BF16) {
        const uint16_t v = ATTEST_POISON_BF16;
        for (size_t i = 0; i + 2 <= n; i += 2) memcpy(p + i, &v, 2);
    } else {
        memset(p, ATTEST_POISON_BYTE, n);
    }
}

static void fill_canary(uint8_t *p, size_t n)
{
    for (size_t off = 0; off < n; off += ARENA_CANARY_BYTES) {
        size_t len = n - off < ARENA_CANARY_BYTES ? n - off : ARENA_CANARY_BYTES;
        memcpy(p + off, canary_pattern, len);
    }
}

/* Returns the offset of the first byte differing from the pattern, or n when intact; *changed
 * counts the differing bytes. */
static size_t scan_canary(const uint8_t *p, size_t n, size_t *changed)
{
    size_t first = n;
    *changed = 0;
    for (size_t off = 0; off < n; off += ARENA_CANARY_BYTES) {
        size_t len = n - off < ARENA_CANARY_BYTES ? n - off : ARENA_CANARY_BYTES;
        if (memcmp(p + off, canary_pattern, len) == 0) continue;
        for (size_t i = 0; i < len; i++) {
            if (p[off + i] == canary_pattern[i]) continue;
            if (first == n) first = off + i;
            (*changed)++;
        }
    }
    return first;
}

/* --- sparse pools ------------------------------------------------------------------------ */

static size_t os_page(void)
{
    static size_t page;
    if (page == 0) {
        long v = sysconf(_SC_PAGESIZE);
        page = v > 0 ? (size_t)v : 4096;
    }
    return page;
}

/* Lists the extents of a sparse pool slot from the pages the case reaches: the OS pages covering
 * each reached pool page, merged, plus the pool's partial last OS page (it also holds the
 * canary, so it is never protected and must be placed and checked like the rest). */
static attest_status sparse_extents(arena *a, arena_slot *s, const attest_case *src,
                                    unsigned pool)
{
    uint64_t stride = 0;
    (void)attest_case_pool_tensor(src, pool, &stride, NULL);
    int32_t *pages = NULL;
    size_t n = 0;
    ATTEST_FORWARD(attest_case_pool_pages(src, pool, &pages, &n));
    const uint64_t ps = os_page(), begin = s->data, end = s->data + s->nbytes;
    s->first_extent = a->num_extents;
    attest_status st = ATTEST_OK;
    for (size_t k = 0; k <= n && st == ATTEST_OK; k++) {
        uint64_t lo, hi;
        if (k < n) {
            lo = begin + (uint64_t)pages[k] * stride;
            hi = lo + stride;
            lo = lo / ps * ps;
            hi = (hi + ps - 1) / ps * ps;
        } else {
            lo = end / ps * ps;
            hi = end;
        }
        if (lo < begin) lo = begin;
        if (hi > end) hi = end;
        if (hi <= lo) continue;
        arena_extent *last =
            a->num_extents > s->first_extent ? &a->extents[a->num_extents - 1] : NULL;
        if (last && lo <= last->at + last->len) {
            if (hi > last->at + last->len) last->len = hi - last->at;
            continue;
        }
        if (a->num_extents == ARENA_MAX_EXTENTS) {
            st = attest_fail(ATTEST_ERR_UNSUPPORTED,
                             "sparse pool '%s': its %zu reached pages make more than %u separate "
                             "runs of memory",
                             s->name, n, ARENA_MAX_EXTENTS);
            break;
        }
        a->extents[a->num_extents].at = lo;
        a->extents[a->num_extents].len = hi - lo;
        a->num_extents++;
    }
    free(pages);
    s->num_extents = a->num_extents - s->first_extent;
    return st;
}

static void sparse_copy(const arena *a, const arena_slot *s, const uint8_t *from)
{
    for (size_t k = 0; k < s->num_extents; k++) {
        const arena_extent *e = &a->extents[s->first_extent + k];
        memcpy(a->base + e->at, from + (e->at - s->data), e->len);
    }
}

/* Gives what the last case wrote from its first sparse pool on back to the system: each sparse
 * case writes other pages of a mapping of gigabytes (its extents, and the tensors after the pool,
 * whose offsets move with the pool's size), which would otherwise stay committed, case after
 * case. Punching the range costs in the pages present, not in its size. */
static void unguard(arena *a);

static void sparse_release(arena *a)
{
    if (a->base != NULL && a->sparse_end > a->sparse_begin && a->sparse_end <= a->capacity) {
        const size_t len = a->sparse_end - a->sparse_begin;
        /* A guarding process (in-process runs) is the only one that maps the arena: the range
         * is replaced by a fresh one, which drops its pages, its protection and its page tables
         * in one call. Unprotecting and punching it instead walked every page table the
         * earlier layouts left there, twice (and the next guard a third time), and the tables
         * pile up as each moved pool lands somewhere else. A worker shares the mapping, which
         * a new one would split: there the pages are punched. */
        if (a->guarded > 0 &&
            mmap(a->base + a->sparse_begin, len, PROT_READ | PROT_WRITE,
                 MAP_FIXED | MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0) != MAP_FAILED) {
            a->guarded = 0;
        } else {
            unguard(a); /* MADV_REMOVE needs write access */
            (void)madvise(a->base + a->sparse_begin, len, MADV_REMOVE);
        }
    }
    a->sparse_begin = a->sparse_end = 0;
}

/* Calls fn on the whole OS pages of extents `from` that no extent of `minus` covers (both lists
 * ascending). */
static void extents_minus(arena *a, const arena_extent *from, size_t nfrom,
                          const arena_extent *minus, size_t nminus,
                          void (*fn)(arena *a, uint64_t lo, uint64_t hi))
{
    const uint64_t ps = os_page();
    size_t j = 0;
    for (size_t i = 0; i < nfrom; i++) {
        uint64_t lo = from[i].at;
        const uint64_t hi = from[i].at + from[i].len;
        while (lo < hi) {
            while (j < nminus && minus[j].at + minus[j].len <= lo) j++;
            const int covered = j < nminus && minus[j].at < hi;
            const uint64_t stop = covered ? (minus[j].at > lo ? minus[j].at : lo) : hi;
            /* Whole OS pages only: a page shared with a covering extent is covered. */
            const uint64_t p = (lo + ps - 1) / ps * ps, q = stop / ps * ps;
            if (q > p) fn(a, p, q);
            if (!covered) break;
            lo = minus[j].at + minus[j].len;
        }
    }
}

static void pages_release(arena *a, uint64_t lo, uint64_t hi)
{
    (void)madvise(a->base + lo, hi - lo, MADV_REMOVE);
    if (a->guarded && mprotect(a->base + lo, hi - lo, PROT_NONE) != 0) a->guarded = -1;
}

static void pages_open(arena *a, uint64_t lo, uint64_t hi)
{
    if (mprotect(a->base + lo, hi - lo, PROT_READ | PROT_WRITE) != 0) a->guarded = -1;
}

/* Makes the last case's guards and pools accessible again (before a release or a new layout). */
static void unguard(arena *a)
{
    if (a->guarded == 0 || a->base == NULL) return;
    for (size_t k = 0; k < a->num_slots; k++) {
        const arena_slot *s = &a->slots[k];
        if (!s->sparse) continue;
        (void)mprotect(a->base + s->pre_begin - ARENA_SPARSE_GUARD, ARENA_SPARSE_GUARD,
                       PROT_READ | PROT_WRITE);
        const size_t protect_end = (s->data + s->nbytes) / os_page() * os_page();
        if (protect_end > s->data)
            (void)mprotect(a->base + s->data, protect_end - s->data, PROT_READ | PROT_WRITE);
    }
    a->guarded = 0;
}

/* When the next case lays everything out at the same offsets (a fuzz target's mutations of one
 * generated case do), only the last case's pages this one does not reach go back: the pages
 * both reach stay committed and are overwritten by the copy, instead of being punched and
 * faulted in again (a fault and a zeroing per OS page). What stays committed is then exactly
 * what this case writes, as after a whole release. Kept protection follows: this case's new
 * pages open before they are written, the pages that went back close. */
static void sparse_keep(arena *a)
{
    if (a->guarded)
        extents_minus(a, a->extents, a->num_extents, a->prev, a->num_prev, pages_open);
    extents_minus(a, a->prev, a->num_prev, a->extents, a->num_extents, pages_release);
    a->num_prev = 0;
    if (a->guarded < 0) unguard(a); /* an mprotect failed: the next run protects afresh */
}

/* The new layout puts every tensor where the last case had it: the committed pages outside the
 * extents (canaries, the tensors after a pool) are then the same ones. */
static int same_layout(const arena *a, const arena_slot *slots, size_t num)
{
    if (a->base == NULL || a->sparse_end == 0 || num != a->num_slots) return 0;
    for (size_t k = 0; k < num; k++) {
        const arena_slot *o = &a->slots[k], *s = &slots[k];
        if (o->data != s->data || o->nbytes != s->nbytes || o->pre_begin != s->pre_begin ||
            o->post_end != s->post_end || o->sparse != s->sparse)
            return 0;
    }
    return 1;
}

int arena_protect_sparse(const arena_control *ctl, int protect)
{
    int rc = 0;
    uint8_t *base = (uint8_t *)ctl;
    for (uint32_t i = 0; i < ctl->num_sparse && i < ARENA_MAX_SPARSE; i++) {
        const arena_sparse *sp = &ctl->sparse[i];
        const int prot = protect ? PROT_NONE : PROT_READ | PROT_WRITE;
        rc |= mprotect(base + sp->guard, ARENA_SPARSE_GUARD, prot);
        if (sp->protect_end <= sp->data) continue;
        rc |= mprotect(base + sp->data, sp->protect_end - sp->data, prot);
        if (!protect) continue;
        for (uint32_t k = 0; k < sp->num_extents && sp->first_extent + k < ARENA_MAX_EXTENTS;
             k++) {
            const arena_extent *e = &ctl->extents[sp->first_extent + k];
            if (e->at >= sp->protect_end) continue; /* the partial last page: never protected */
            uint64_t hi = e->at + e->len;
            const uint64_t ps = os_page();
            hi = (hi + ps - 1) / ps * ps;
            if (hi > sp->protect_end) hi = sp->protect_end;
            rc |= mprotect(base + e->at, hi - e->at, PROT_READ | PROT_WRITE);
        }
    }
    return rc ? -1 : 0;
}

int arena_for_each_placed(const arena_control *ctl, int (*fn)(void *ctx, uint64_t at, uint64_t len),
                          void *ctx)
{
    uint64_t cursor = ctl->data_begin;
    int rc = 0;
#define PLACED(at, len)                                                                            \
    do {                                                                                           \
        if ((len) > 0 && rc == 0) rc = fn(ctx, (at), (len));                                      \
    } while (0)
    for (uint32_t i = 0; i < ctl->num_sparse && i < ARENA_MAX_SPARSE && rc == 0; i++) {
        const arena_sparse *sp = &ctl->sparse[i];
        PLACED(cursor, sp->guard - cursor);
        PLACED(sp->pre_begin, sp->data - sp->pre_begin);
        for (uint32_t k = 0; k < sp->num_extents && sp->first_extent + k < ARENA_MAX_EXTENTS; k++)
            PLACED(ctl->extents[sp->first_extent + k].at, ctl->extents[sp->first_extent + k].len);
        cursor = sp->data + sp->nbytes;
    }
    PLACED(cursor, ctl->used - cursor);
#undef PLACED
    return rc;
}

int arena_for_each_unplaced(const arena_control *ctl,
                            int (*fn)(void *ctx, uint64_t at, uint64_t len), void *ctx)
{
    const uint64_t ps = os_page();
    int rc = 0;
    for (uint32_t i = 0; i < ctl->num_sparse && i < ARENA_MAX_SPARSE && rc == 0; i++) {
        const arena_sparse *sp = &ctl->sparse[i];
        rc = fn(ctx, sp->guard, ARENA_SPARSE_GUARD);
        /* As arena_protect_sparse: the extents' OS pages stay open, the rest up to
         * protect_end (the partial last page is never protected). */
        uint64_t cursor = sp->data;
        for (uint32_t k = 0; k < sp->num_extents && sp->first_extent + k < ARENA_MAX_EXTENTS &&
                             rc == 0;
             k++) {
            const arena_extent *e = &ctl->extents[sp->first_extent + k];
            if (e->at >= sp->protect_end) break;
            if (e->at > cursor) rc = fn(ctx, cursor, e->at - cursor);
            const uint64_t hi = (e->at + e->len + ps - 1) / ps * ps;
            if (hi > cursor) cursor = hi;
        }
        if (rc == 0 && cursor < sp->protect_end) rc = fn(ctx, cursor, sp->protect_end - cursor);
    }
    return rc;
}

/* Appends text or an unsigned number to buf: no stdio, so a signal handler may call them. */
static void put_str(char *buf, size_t cap, size_t *at, const char *s)
{
    while (*s && *at + 1 < cap) buf[(*at)++] = *s++;
    if (cap) buf[*at < cap ? *at : cap - 1] = '\0';
}

static void put_u64(char *buf, size_t cap, size_t *at, uint64_t v)
{
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v && n < (int)sizeof tmp);
    char out[24];
    for (int i = 0; i < n; i++) out[i] = tmp[n - 1 - i];
    out[n] = '\0';
    put_str(buf, cap, at, out);
}

int arena_describe_fault(const arena_control *ctl, const void *addr, char *msg, size_t cap)
{
    const uint8_t *base = (const uint8_t *)ctl, *p = addr;
    for (uint32_t i = 0; i < ctl->num_sparse && i < ARENA_MAX_SPARSE; i++) {
        const arena_sparse *sp = &ctl->sparse[i];
        char name[sizeof sp->name];
        memcpy(name, sp->name, sizeof name);
        name[sizeof name - 1] = '\0';
        if (p >= base + sp->guard && p < base + sp->guard + ARENA_SPARSE_GUARD) {
            size_t at = 0;
            put_str(msg, cap, &at, "access ");
            put_u64(msg, cap, &at, (uint64_t)(base + sp->data - p));
            put_str(msg, cap, &at, " bytes before sparse pool '");
            put_str(msg, cap, &at, name);
            put_str(msg, cap, &at, "' (an offset that wrapped below 0: 32-bit offset arithmetic?)");
            return 1;
        }
        if (p < base + sp->data || p >= base + sp->data + sp->nbytes) continue;
        const uint64_t off = (uint64_t)(p - (base + sp->data));
        size_t at = 0;
        put_str(msg, cap, &at, "access to unplaced page ");
        put_u64(msg, cap, &at, sp->page_bytes ? off / sp->page_bytes : 0);
        put_str(msg, cap, &at, " of '");
        put_str(msg, cap, &at, name);
        put_str(msg, cap, &at, "' (byte offset ");
        put_u64(msg, cap, &at, off);
        put_str(msg, cap, &at, off >= (UINT64_C(1) << 31) ? ", past 2^31): no table entry or index "
                                                             "of the case reaches it"
                                                           : "): no table entry or index of the "
                                                             "case reaches it");
        return 1;
    }
    return 0;
}

attest_status arena_place(arena *a, const attest_case *src, int *remapped)
{
    *remapped = 0;
    ATTEST_RETURN_IF(src->num_tensors > ATTEST_CASE_MAX_TENSORS, ATTEST_ERR_INVALID_ARGUMENT,
                     "case has %zu tensors (at most %d)", src->num_tensors,
                     ATTEST_CASE_MAX_TENSORS);
    /* Lay out first, so the size is known before touching the mapping. */
    arena_slot slots[ATTEST_CASE_MAX_TENSORS];
    size_t num = 0, offset = control_bytes();
    const size_t data_begin = offset;
    for (size_t i = 0; i < src->num_tensors; i++) {
        const attest_tensor *t = &src->tensors[i];
        if (t->role == ATTEST_ROLE_TRUTH) continue;
        ATTEST_RETURN_IF(t->role != ATTEST_ROLE_INPUT && t->role != ATTEST_ROLE_OUTPUT,
                         ATTEST_ERR_INVALID_ARGUMENT, "tensor '%s' has an unknown role %d",
                         t->name, (int)t->role);
        ATTEST_RETURN_IF(t->role == ATTEST_ROLE_INPUT && t->data == NULL && t->nbytes > 0,
                         ATTEST_ERR_INVALID_ARGUMENT, "input tensor '%s' is not placed", t->name);
        ATTEST_RETURN_IF(t->nbytes > SIZE_MAX / 4 - offset, ATTEST_ERR_OUT_OF_MEMORY,
                         "tensor '%s' of %zu bytes does not fit an arena", t->name, t->nbytes);
        arena_slot *s = &slots[num++];
        memset(s, 0, sizeof *s);
        s->tensor = (int32_t)i;
        snprintf(s->name, sizeof s->name, "%s", t->name);
        s->role = t->role;
        s->dtype = t->dtype;
        const unsigned pool = attest_case_tensor_pool(src, i);
        s->sparse = t->role == ATTEST_ROLE_INPUT && (src->sparse_pools & pool) != 0;
        /* A sparse pool starts on an OS page, so its pages can be protected one by one, after
         * its guard and a canary of one OS page. */
        if (s->sparse) {
            /* Past every byte a dense case has used: releasing a sparse case's pages (from its
             * first guard on, sparse_release) then leaves the dense cases' pages committed. A
             * guard right after the tensors before it took the pages where the next dense case
             * lays its pool, and that case faulted them in again (a tenth of a fuzz_mla_decode
             * exec went to those faults, with one case in three held sparsely). */
            const size_t guard = align_up(offset > a->dense_end ? offset : a->dense_end, os_page());
            s->pre_begin = guard + ARENA_SPARSE_GUARD;
            s->data = s->pre_begin + os_page();
        } else {
            s->data = offset + ARENA_CANARY_BYTES;
            s->pre_begin = s->data - ARENA_CANARY_BYTES;
        }
        s->nbytes = t->nbytes;
        s->post_end = align_up(s->data + t->nbytes + ARENA_CANARY_BYTES, ARENA_ALIGN);
        s->modified = 0;
        offset = s->post_end;
    }
    /* The last case's extents stay aside until this one's are listed (sparse_keep). */
    a->num_prev = a->num_extents;
    memcpy(a->prev, a->extents, a->num_extents * sizeof a->extents[0]);
    a->num_extents = 0;
    size_t num_sparse = 0;
    for (size_t k = 0; k < num; k++) {
        arena_slot *s = &slots[k];
        if (!s->sparse) continue;
        if (num_sparse == ARENA_MAX_SPARSE) {
            sparse_release(a);
            a->num_extents = a->num_prev = 0;
            return attest_fail(ATTEST_ERR_INTERNAL, "arena: more than %u sparse pools",
                               ARENA_MAX_SPARSE);
        }
        num_sparse++;
        const unsigned pool = attest_case_tensor_pool(src, (size_t)s->tensor);
        attest_status st = sparse_extents(a, s, src, pool);
        if (st != ATTEST_OK) {
            sparse_release(a);
            a->num_extents = a->num_prev = 0;
            return st;
        }
    }
    if (same_layout(a, slots, num)) {
        sparse_keep(a);
    } else {
        sparse_release(a);
        a->num_prev = 0;
    }
    if (a->base == NULL || offset > a->capacity) {
        ATTEST_FORWARD(arena_map(a, offset));
        *remapped = 1;
    }
    memcpy(a->slots, slots, num * sizeof slots[0]);
    a->num_slots = num;
    if (num_sparse == 0 && offset > a->dense_end) a->dense_end = offset;

    arena_control *ctl = a->control;
    ctl->placed = *src;
    ctl->placed.heap_block_ = NULL;
    ctl->data_begin = data_begin;
    ctl->used = offset;
    ctl->generation = a->generation;
    ctl->placed.heap_map_bytes_ = 0;
    for (size_t i = 0; i < ctl->placed.num_tensors; i++) ctl->placed.tensors[i].data = NULL;
    ctl->num_sparse = 0;
    ctl->num_extents = (uint32_t)a->num_extents;
    memcpy(ctl->extents, a->extents, a->num_extents * sizeof a->extents[0]);
    for (size_t k = 0; k < num; k++) {
        const arena_slot *s = &a->slots[k];
        uint8_t *dst = a->base + s->data;
        ctl->placed.tensors[s->tensor].data = dst;
        if (s->sparse) {
            arena_sparse *sp = &ctl->sparse[ctl->num_sparse++];
            memset(sp, 0, sizeof *sp);
            sp->guard = s->pre_begin - ARENA_SPARSE_GUARD;
            if (a->sparse_end == 0) {
                a->sparse_begin = sp->guard;
                a->sparse_end = offset;
            }
            sp->pre_begin = s->pre_begin;
            sp->data = s->data;
            sp->nbytes = s->nbytes;
            sp->protect_end = (s->data + s->nbytes) / os_page() * os_page();
            (void)attest_case_pool_tensor(src, attest_case_tensor_pool(src, (size_t)s->tensor),
                                          &sp->page_bytes, NULL);
            sp->first_extent = (uint32_t)s->first_extent;
            sp->num_extents = (uint32_t)s->num_extents;
            snprintf(sp->name, sizeof sp->name, "%s", s->name);
            sparse_copy(a, s, src->tensors[s->tensor].data);
        } else if (s->role == ATTEST_ROLE_INPUT && s->nbytes > 0) {
            memcpy(dst, src->tensors[s->tensor].data, s->nbytes);
        }
    }
    arena_reset_run(a, NULL);
    return ATTEST_OK;
}

void arena_reset_run(arena *a, const attest_case *src)
{
    for (size_t k = 0; k < a->num_slots; k++) {
        arena_slot *s = &a->slots[k];
        uint8_t *data = a->base + s->data;
        fill_canary(a->base + s->pre_begin, s->data - s->pre_begin);
        fill_canary(data + s->nbytes, s->post_end - (s->data + s->nbytes));
        if (s->role == ATTEST_ROLE_OUTPUT) {
            poison(data, s->nbytes, s->dtype);
        } else if (src != NULL && s->modified && s->sparse) {
            sparse_copy(a, s, src->tensors[s->tensor].data);
        } else if (src != NULL && s->modified) {
            memcpy(data, src->tensors[s->tensor].data, s->nbytes);
        }
        s->modified = 0;
    }
}

int arena_guard(arena *a)
{
    if (a->guarded > 0 || a->base == NULL) return 0;
    /* The same protection as arena_protect_sparse, from the parent's own slots and extents. */
    int rc = 0;
    a->guarded = 1;
    for (size_t k = 0; k < a->num_slots && rc == 0; k++) {
        const arena_slot *s = &a->slots[k];
        if (!s->sparse) continue;
        rc |= mprotect(a->base + s->pre_begin - ARENA_SPARSE_GUARD, ARENA_SPARSE_GUARD, PROT_NONE);
        const size_t protect_end = (s->data + s->nbytes) / os_page() * os_page();
        if (protect_end <= s->data) continue;
        rc |= mprotect(a->base + s->data, protect_end - s->data, PROT_NONE);
        for (size_t e = 0; e < s->num_extents && rc == 0; e++) {
            const arena_extent *x = &a->extents[s->first_extent + e];
            if (x->at >= protect_end) continue; /* the partial last page: never protected */
            uint64_t hi = (x->at + x->len + os_page() - 1) / os_page() * os_page();
            if (hi > protect_end) hi = protect_end;
            rc |= mprotect(a->base + x->at, hi - x->at, PROT_READ | PROT_WRITE);
        }
    }
    if (rc != 0) unguard(a);
    return rc ? -1 : 0;
}

void *arena_tensor(const arena *a, size_t index)
{
    if (a->base == NULL) return NULL;
    for (size_t k = 0; k < a->num_slots; k++)
        if ((size_t)a->slots[k].tensor == index) return a->base + a->slots[k].data;
    return NULL;
}

static const char *slot_name(const arena *a, const arena_slot *s)
{
    (void)a;
    return s->name;
}

int arena_check_canaries(const arena *a, char *msg, size_t cap)
{
    int damaged = 0;
    for (size_t k = 0; k < a->num_slots; k++) {
        const arena_slot *s = &a->slots[k];
        const size_t end = s->data + s->nbytes;
        size_t changed_pre, changed_post;
        size_t first_pre = scan_canary(a->base + s->pre_begin, s->data - s->pre_begin,
                                       &changed_pre);
        size_t first_post = scan_canary(a->base + end, s->post_end - end, &changed_post);
        if (changed_pre) {
            /* The last damaged byte is the one nearest the buffer: report its distance. */
            size_t last = first_pre;
            for (size_t i = s->data - s->pre_begin; i-- > first_pre;)
                if (a->base[s->pre_begin + i] != canary_pattern[i % ARENA_CANARY_BYTES]) {
                    last = i;
                    break;
                }
            if (damaged == 0)
                snprintf(msg, cap, "canary before '%s' changed at -%zu (%zu bytes)",
                         slot_name(a, s), s->data - s->pre_begin - last, changed_pre);
            damaged++;
        }
        if (changed_post) {
            if (damaged == 0)
                snprintf(msg, cap, "canary after '%s' changed at +%zu (%zu bytes)",
                         slot_name(a, s), first_post, changed_post);
            damaged++;
        }
    }
    return damaged;
}

/* Whether an input's arena bytes (a sparse pool: its extents) still equal the case's own: one
 * exact comparison after each run, where a checksum needed a pass over the source at placement
 * and one over the arena after each run. The source is the parent's memory (a worker cannot
 * write it), as the checksums were. */
static int input_intact(const arena *a, const arena_slot *s, const uint8_t *orig)
{
    const uint8_t *now = a->base + s->data;
    if (!s->sparse) return s->nbytes == 0 || memcmp(now, orig, s->nbytes) == 0;
    for (size_t k = 0; k < s->num_extents; k++) {
        const arena_extent *e = &a->extents[s->first_extent + k];
        const size_t at = e->at - s->data;
        if (memcmp(now + at, orig + at, e->len) != 0) return 0;
    }
    return 1;
}

int arena_check_inputs(arena *a, const attest_case *src, char *msg, size_t cap)
{
    int modified = 0;
    for (size_t k = 0; k < a->num_slots; k++) {
        arena_slot *s = &a->slots[k];
        if (s->role != ATTEST_ROLE_INPUT) continue;
        const uint8_t *now = a->base + s->data;
        const uint8_t *orig = src->tensors[s->tensor].data;
        if (input_intact(a, s, orig)) continue;
        s->modified = 1;
        if (modified == 0) {
            size_t first = 0, changed = 0;
            for (size_t k = 0; k < (s->sparse ? s->num_extents : 1); k++) {
                /* A sparse pool compares its extents only: nothing else is placed. */
                const size_t lo = s->sparse ? a->extents[s->first_extent + k].at - s->data : 0;
                const size_t hi = s->sparse ? lo + a->extents[s->first_extent + k].len : s->nbytes;
                for (size_t i = lo; i < hi; i++)
                    if (now[i] != orig[i]) {
                        if (changed++ == 0) first = i;
                    }
            }
            snprintf(msg, cap, "input '%s' modified: %zu bytes changed, first at byte %zu",
                     slot_name(a, s), changed, first);
        }
        modified++;
    }
    return modified;
}
