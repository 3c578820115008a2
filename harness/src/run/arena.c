/* The guarded arena (arena.h): placement, poison, canaries, input checksums. */
#include "arena.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

/* XXH3 inlined (header only): every byte of every input is hashed before and after each run,
 * and xxHash is the well-kept fast hash for it; inlining keeps libxxhash out of the link, so
 * the static executable and plugins need nothing new at run time. */
#define XXH_INLINE_ALL
#include <xxhash.h>

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
    void *p = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ATTEST_RETURN_IF(p == MAP_FAILED, ATTEST_ERR_OUT_OF_MEMORY,
                     "arena: cannot map %zu bytes of shared memory: %s", cap, strerror(errno));
    arena_release(a);
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

uint64_t arena_checksum(const void *data, size_t n) { return XXH3_64bits(data, n); }

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
        s->tensor = (int32_t)i;
        snprintf(s->name, sizeof s->name, "%s", t->name);
        s->role = t->role;
        s->dtype = t->dtype;
        s->pre_begin = offset;
        s->data = offset + ARENA_CANARY_BYTES;
        s->nbytes = t->nbytes;
        s->post_end = align_up(s->data + t->nbytes + ARENA_CANARY_BYTES, ARENA_ALIGN);
        s->checksum = t->role == ATTEST_ROLE_INPUT ? arena_checksum(t->data, t->nbytes) : 0;
        s->modified = 0;
        offset = s->post_end;
    }
    if (a->base == NULL || offset > a->capacity) {
        ATTEST_FORWARD(arena_map(a, offset));
        *remapped = 1;
    }
    memcpy(a->slots, slots, num * sizeof slots[0]);
    a->num_slots = num;

    arena_control *ctl = a->control;
    ctl->placed = *src;
    ctl->placed.heap_block_ = NULL;
    ctl->data_begin = data_begin;
    ctl->used = offset;
    ctl->generation = a->generation;
    for (size_t i = 0; i < ctl->placed.num_tensors; i++) ctl->placed.tensors[i].data = NULL;
    for (size_t k = 0; k < num; k++) {
        const arena_slot *s = &a->slots[k];
        uint8_t *dst = a->base + s->data;
        ctl->placed.tensors[s->tensor].data = dst;
        if (s->role == ATTEST_ROLE_INPUT && s->nbytes > 0)
            memcpy(dst, src->tensors[s->tensor].data, s->nbytes);
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
        } else if (src != NULL && s->modified) {
            memcpy(data, src->tensors[s->tensor].data, s->nbytes);
        }
        s->modified = 0;
    }
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

int arena_check_inputs(arena *a, const attest_case *src, char *msg, size_t cap)
{
    int modified = 0;
    for (size_t k = 0; k < a->num_slots; k++) {
        arena_slot *s = &a->slots[k];
        if (s->role != ATTEST_ROLE_INPUT) continue;
        const uint8_t *now = a->base + s->data;
        if (arena_checksum(now, s->nbytes) == s->checksum) continue;
        s->modified = 1;
        if (modified == 0) {
            const uint8_t *orig = src->tensors[s->tensor].data;
            size_t first = 0, changed = 0;
            for (size_t i = 0; i < s->nbytes; i++)
                if (now[i] != orig[i]) {
                    if (changed++ == 0) first = i;
                }
            snprintf(msg, cap, "input '%s' modified: %zu bytes changed, first at byte %zu",
                     slot_name(a, s), changed, first);
        }
        modified++;
    }
    return modified;
}
