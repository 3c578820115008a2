/* numerics_dump: writes what attest's numerics module computes, as raw little-endian binary
 * files, for tests/py/check_numerics.py to compare with ml_dtypes. Not a test by itself.
 *
 *   numerics_dump OUTDIR [IN.f32 [IN.f64]]
 *
 * Always writes every decode: fp8_decode.f32 (256), ue8m0_decode.f32 and ue8m0_decode.f64 (256),
 * bf16_decode.f32 (65536). With IN.f32 (float32 values) it writes, one output per input:
 * fp8_nonsat.u8, fp8_sat.u8, bf16.u16, ue8m0_ceil.u8 and ue8m0_<writer>.u8 (the input taken as
 * a tile's amax). With IN.f64 (float64 values) it writes bf16_f64.u16. Prints the encode speed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "attest/clock.h"
#include "attest/numerics.h"

static int write_file(const char *dir, const char *name, const void *data, size_t size,
                      size_t count)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (f == NULL) {
        fprintf(stderr, "numerics_dump: cannot open %s\n", path);
        return 1;
    }
    size_t n = fwrite(data, size, count, f);
    int bad = fclose(f) != 0 || n != count;
    if (bad) fprintf(stderr, "numerics_dump: cannot write %s\n", path);
    return bad;
}

/* Reads a whole file of `size`-byte elements into a malloc'd buffer. */
static void *read_file(const char *path, size_t size, size_t *count)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "numerics_dump: cannot open %s\n", path);
        return NULL;
    }
    void *buf = NULL;
    long len = -1;
    if (fseek(f, 0, SEEK_END) == 0) len = ftell(f);
    if (len >= 0 && fseek(f, 0, SEEK_SET) == 0 && len % (long)size == 0) {
        *count = (size_t)len / size;
        buf = malloc(len > 0 ? (size_t)len : 1u);
        if (buf != NULL && fread(buf, size, *count, f) != *count) {
            free(buf);
            buf = NULL;
        }
    }
    fclose(f);
    if (buf == NULL) fprintf(stderr, "numerics_dump: cannot read %s\n", path);
    return buf;
}

static int dump_decodes(const char *dir)
{
    static float fp8[256], ue[256], bf[65536];
    static double ue64[256];
    for (unsigned b = 0; b < 256u; b++) {
        fp8[b] = attest_fp8_decode((uint8_t)b);
        ue[b] = attest_ue8m0_decode((uint8_t)b);
        ue64[b] = attest_ue8m0_decode_f64((uint8_t)b);
    }
    for (unsigned b = 0; b < 65536u; b++) bf[b] = attest_bf16_decode((uint16_t)b);
    return write_file(dir, "fp8_decode.f32", fp8, 4, 256) ||
           write_file(dir, "ue8m0_decode.f32", ue, 4, 256) ||
           write_file(dir, "ue8m0_decode.f64", ue64, 8, 256) ||
           write_file(dir, "bf16_decode.f32", bf, 4, 65536);
}

static int dump_f32(const char *dir, const char *in)
{
    size_t n = 0;
    float *x = read_file(in, 4, &n);
    if (x == NULL) return 1;
    uint8_t *out8 = malloc(n ? n : 1u);
    uint16_t *out16 = malloc(2u * (n ? n : 1u));
    int bad = out8 == NULL || out16 == NULL;
    if (!bad) {
        double t0 = attest_monotonic_seconds();
        for (size_t i = 0; i < n; i++) out8[i] = attest_fp8_encode(x[i], ATTEST_FP8_NONSAT);
        double t1 = attest_monotonic_seconds();
        printf("fp8 encode: %zu values, %.2f ns/value\n", n, 1e9 * (t1 - t0) / (double)(n ? n : 1));
        bad = bad || write_file(dir, "fp8_nonsat.u8", out8, 1, n);
        for (size_t i = 0; i < n; i++) out8[i] = attest_fp8_encode(x[i], ATTEST_FP8_SATFINITE);
        bad = bad || write_file(dir, "fp8_sat.u8", out8, 1, n);
        for (size_t i = 0; i < n; i++) out8[i] = attest_ue8m0_encode_ceil(x[i]);
        bad = bad || write_file(dir, "ue8m0_ceil.u8", out8, 1, n);
        static const struct {
            attest_ue8m0_writer w;
            const char *file;
        } writers[] = {{ATTEST_UE8M0_FLASHMLA, "ue8m0_flashmla.u8"},
                       {ATTEST_UE8M0_SGLANG, "ue8m0_sglang.u8"},
                       {ATTEST_UE8M0_DEEPGEMM, "ue8m0_deepgemm.u8"}};
        for (size_t k = 0; k < sizeof writers / sizeof writers[0]; k++) {
            for (size_t i = 0; i < n; i++) out8[i] = attest_ue8m0_scale_for_amax(x[i], writers[k].w);
            bad = bad || write_file(dir, writers[k].file, out8, 1, n);
        }
        t0 = attest_monotonic_seconds();
        for (size_t i = 0; i < n; i++) out16[i] = attest_bf16_encode(x[i]);
        t1 = attest_monotonic_seconds();
        printf("bf16 encode: %.2f ns/value\n", 1e9 * (t1 - t0) / (double)(n ? n : 1));
        bad = bad || write_file(dir, "bf16.u16", out16, 2, n);
        volatile float sink = 0.0f;
        t0 = attest_monotonic_seconds();
        for (size_t i = 0; i < n; i++) sink += attest_fp8_decode(out8[i & 0xFFFFu] ^ (uint8_t)i);
        t1 = attest_monotonic_seconds();
        (void)sink;
        printf("fp8 decode: %.2f ns/value\n", 1e9 * (t1 - t0) / (double)(n ? n : 1));
    }
    free(out8);
    free(out16);
    free(x);
    return bad;
}

static int dump_f64(const char *dir, const char *in)
{
    size_t n = 0;
    double *x = read_file(in, 8, &n);
    if (x == NULL) return 1;
    uint16_t *out = malloc(2u * (n ? n : 1u));
    int bad = out == NULL;
    if (!bad) {
        for (size_t i = 0; i < n; i++) out[i] = attest_bf16_encode_f64(x[i]);
        bad = write_file(dir, "bf16_f64.u16", out, 2, n);
    }
    free(out);
    free(x);
    return bad;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 4) {
        fprintf(stderr, "usage: numerics_dump OUTDIR [IN.f32 [IN.f64]]\n");
        return 2;
    }
    if (dump_decodes(argv[1])) return 1;
    if (argc > 2 && dump_f32(argv[1], argv[2])) return 1;
    if (argc > 3 && dump_f64(argv[1], argv[3])) return 1;
    return 0;
}
