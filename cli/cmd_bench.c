/* attest bench: perf mode, time per launch and achieved bandwidth per shape (attest/bench.h). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attest/bench.h"
#include "attest/files.h"
#include "attest/registry.h"
#include "commands.h"
#include "attest/campaign.h"

#define MAX_CANDIDATES 8
#define MAX_SHAPES 32

/* Production shapes for device candidates: large batch at ~64k (the bandwidth goal), the same
 * lengths under a 262,144 and an 8,192 maximum context (cost follows the actual length), MTP,
 * 128 heads, and one request alone (latency). */
static const char default_device_shapes[] =
    "b=64,len=65536;b=64,len=65536,max_len=262144;b=128,len=65536;"
    "b=64,len=8192;b=64,len=8192,max_len=262144;b=64,len=65536,next_n=2;"
    "b=64,len=65536,heads=128;b=1,len=65536";
/* Host candidates are references-speed: small shapes. */
static const char default_host_shapes[] = "b=1,len=4096;b=2,len=8192,max_len=16384";
/* Sparse MLA decode: DeepSeek-V4 decode (b=64, 64 heads, topk 2048), MTP (2 queries), V3.2
 * (128 heads), one request alone; on the host a small one. */
static const char default_mla_device_shapes[] =
    "b=64,s_q=1,heads=64,topk=2048;b=64,s_q=2,heads=64,topk=2048;"
    "b=64,s_q=1,heads=128,topk=2048,layout=mla-v32;b=1,s_q=1,heads=64,topk=2048";
static const char default_mla_host_shapes[] = "b=1,s_q=1,heads=16,topk=256";

static void usage(FILE *f)
{
    fprintf(f,
            "usage: attest bench --candidate SPEC [--candidate SPEC...] [--shapes 'S1;S2'] "
            "[options]\n"
            "\n"
            "Times a candidate on cases of given shapes: per launch after warm-up (CUDA events on\n"
            "a device, wall clock on the host), median and spread, the bytes any correct kernel\n"
            "must move, achieved GB/s and %% of a peak. Indexer and sparse MLA decode shapes.\n"
            "Exit status: 0 measured, 2 usage, input or device error.\n"
            "\n"
            "  --candidate SPEC   built-in name (attest list) or path/lib.so:NAME (repeatable)\n"
            "  --shapes 'S;S'     indexer shapes 'b=64,len=65536,max_len=262144,heads=64,next_n=1'\n"
            "                     (max_len defaults to len, heads to 64, next_n to 1); default:\n"
            "                     device %s\n"
            "                     host %s\n"
            "                     mla-decode shapes 'b=64,s_q=1,heads=64,topk=2048,ctx=N,\n"
            "                     layout=mla-v4|mla-v32' (ctx defaults to topk, heads to 64, s_q\n"
            "                     to 1, layout to mla-v4); default:\n"
            "                     device %s\n"
            "                     host %s\n"
            "  --iters N          timed runs per shape (default 20)\n"
            "  --warmup N         untimed runs first (default 3)\n"
            "  --peak-gbps X      peak for %% of peak (default %.0f, the H200's measured HBM)\n"
            "  --seed S           bytes of the cases (default 1)\n"
            "  --out FILE         write the rows to an HDF5 bench file (table /bench)\n"
            "  --force            replace an existing HDF5 file at --out\n",
            default_device_shapes, default_host_shapes, default_mla_device_shapes,
            default_mla_host_shapes, ATTEST_BENCH_DEFAULT_PEAK_GBPS);
}

static const struct option long_options[] = {
    {"help", no_argument, NULL, 'h'},          {"candidate", required_argument, NULL, 'c'},
    {"shapes", required_argument, NULL, 'S'},  {"iters", required_argument, NULL, 'n'},
    {"warmup", required_argument, NULL, 'w'},  {"peak-gbps", required_argument, NULL, 'p'},
    {"seed", required_argument, NULL, 's'},    {"out", required_argument, NULL, 'o'},
    {"force", no_argument, NULL, 'F'},
    {NULL, 0, NULL, 0},
};

/* Splits "S1;S2" into parsed shapes. Returns the count, or -1 (message already printed). */
void attest_bench_print_header(FILE *f)
{
    fprintf(f, "  %-48s %10s %21s %9s %9s %8s %7s\n", "shape", "median us", "p10..p90 us",
            "read MB", "write MB", "GB/s", "% peak");
}

void attest_bench_print_row(FILE *f, const attest_bench_row *row)
{
    const attest_bench_result *r = &row->result;
    char spread[48];
    snprintf(spread, sizeof spread, "%.1f..%.1f", r->p10_us, r->p90_us);
    char pct[16] = "-"; /* no peak: a host candidate without --peak-gbps */
    if (row->peak_gbps > 0) snprintf(pct, sizeof pct, "%.1f", r->pct_peak);
    fprintf(f, "  %-48s %10.1f %21s %9.1f %9.1f %8.1f %7s\n", row->shape, r->median_us, spread,
            r->read_bytes / 1e6, r->write_bytes / 1e6, r->gbps, pct);
}

void attest_bench_print_timing(FILE *f, const attest_bench_row *row)
{
    if (row->result.device[0]) {
        fprintf(f, "  device: %s; timed with %s\n", row->result.device,
                row->result.device_timed ? "CUDA events" : "the wall clock");
        /* The default peak was measured on an H200: on any other card its % misleads. */
        if (row->peak_gbps == ATTEST_BENCH_DEFAULT_PEAK_GBPS && !strstr(row->result.device, "H200"))
            fprintf(f, "  note: %% peak is of %.0f GB/s, the default, an H200's measured HBM "
                       "bandwidth, not this device's: --peak-gbps X sets its own\n",
                    ATTEST_BENCH_DEFAULT_PEAK_GBPS);
    } else
        fprintf(f, "  host candidate: timed with the wall clock\n");
}

static int parse_shapes(attest_kernel kernel, const char *text, attest_bench_shape *shapes)
{
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", text) >= (int)sizeof buf) {
        attest_cli_usage_error("bench", "--shapes is too long");
        return -1;
    }
    int n = 0;
    for (char *save = NULL, *s = strtok_r(buf, ";", &save); s; s = strtok_r(NULL, ";", &save)) {
        if (n == MAX_SHAPES) {
            attest_cli_usage_error("bench", "--shapes: at most %d shapes", MAX_SHAPES);
            return -1;
        }
        if (attest_bench_parse_kernel_shape(kernel, s, &shapes[n]) != ATTEST_OK) {
            attest_cli_usage_error("bench", "%s", attest_last_error());
            return -1;
        }
        n++;
    }
    if (n == 0) attest_cli_usage_error("bench", "--shapes: no shape given");
    return n ? n : -1;
}

int attest_cmd_bench(int argc, char **argv)
{
    char command_line[2048];
    attest_engine_command_line(argc + 1, argv - 1, command_line, sizeof command_line);
    const char *specs[MAX_CANDIDATES], *shapes_text = NULL, *out = NULL;
    int num_specs = 0, force = 0, peak_given = 0;
    attest_bench_options opt = attest_bench_defaults();
    uint64_t seed = 1;
    optind = 1;
    opterr = 0;
    int ch;
    while ((ch = attest_cli_getopt(argc, argv, "", long_options)) != -1) {
        switch (ch) {
        case 'h': usage(stdout); return ATTEST_EXIT_OK;
        case 'c':
            if (num_specs == MAX_CANDIDATES)
                return attest_cli_usage_error("bench", "at most %d candidates", MAX_CANDIDATES);
            specs[num_specs++] = optarg;
            break;
        case 'S': shapes_text = optarg; break;
        case 'o': out = optarg; break;
        case 'F': force = 1; break;
        case 'n':
            if (attest_cli_parse_i32(optarg, 1, 100000, &opt.iters))
                return attest_cli_bad_value("bench", "iters", optarg);
            break;
        case 'w':
            if (attest_cli_parse_i32(optarg, 0, 100000, &opt.warmup))
                return attest_cli_bad_value("bench", "warmup", optarg);
            break;
        case 'p':
            if (attest_cli_parse_double(optarg, 1e-3, 1e9, &opt.peak_gbps))
                return attest_cli_bad_value("bench", "peak-gbps", optarg);
            peak_given = 1;
            break;
        case 's':
            if (attest_cli_parse_u64(optarg, &seed)) return attest_cli_bad_value("bench", "seed", optarg);
            break;
        default: return attest_cli_getopt_error("bench", ch, argv);
        }
    }
    if (optind < argc)
        return attest_cli_usage_error("bench", "unexpected argument '%s'", argv[optind]);
    if (num_specs == 0)
        return attest_cli_usage_error("bench", "--candidate is required (attest list shows them)");
    /* The output policy first: nothing is measured for a file that may not be written. */
    int rc;
    if (out && (rc = attest_cli_check_output("bench", out, ATTEST_OUTPUT_HDF5, force, specs,
                                             (size_t)num_specs)) >= 0)
        return rc;
    const attest_candidate *cands[MAX_CANDIDATES];
    for (int i = 0; i < num_specs; i++) {
        if (attest_candidate_resolve(specs[i], &cands[i]) != ATTEST_OK)
            return attest_cli_usage_error("bench", "%s", attest_last_error());
        if (cands[i]->kernel != ATTEST_KERNEL_INDEXER && cands[i]->kernel != ATTEST_KERNEL_MLA_DECODE)
            return attest_cli_usage_error("bench", "'%s': only indexer and mla-decode candidates "
                                                   "can be benchmarked so far", cands[i]->name);
    }
    /* Shapes are checked before any case is built or device opened. */
    attest_bench_shape shapes[MAX_CANDIDATES][MAX_SHAPES];
    int num_shapes[MAX_CANDIDATES];
    for (int i = 0; i < num_specs; i++) {
        const int device = cands[i]->domain == ATTEST_DOMAIN_DEVICE;
        const char *text = shapes_text ? shapes_text
                           : cands[i]->kernel == ATTEST_KERNEL_MLA_DECODE
                               ? (device ? default_mla_device_shapes : default_mla_host_shapes)
                               : (device ? default_device_shapes : default_host_shapes);
        if ((num_shapes[i] = parse_shapes(cands[i]->kernel, text, shapes[i])) < 0)
            return ATTEST_EXIT_USAGE;
    }
    attest_bench_row *rows = calloc((size_t)num_specs * MAX_SHAPES, sizeof *rows);
    if (!rows) return attest_cli_usage_error("bench", "out of memory");
    size_t num_rows = 0;
    rc = ATTEST_EXIT_OK;
    for (int i = 0; i < num_specs && rc == ATTEST_EXIT_OK; i++) {
        /* The default peak is the H200's HBM: a host candidate's % of it means nothing. */
        attest_bench_options o = opt;
        if (cands[i]->domain != ATTEST_DOMAIN_DEVICE && !peak_given) o.peak_gbps = 0;
        if (o.peak_gbps > 0)
            printf("attest bench: %s, %d warm-up + %d timed runs per shape, peak %.0f GB/s\n",
                   cands[i]->name, o.warmup, o.iters, o.peak_gbps);
        else
            printf("attest bench: %s, %d warm-up + %d timed runs per shape, no peak for a host "
                   "candidate (--peak-gbps X sets one)\n",
                   cands[i]->name, o.warmup, o.iters);
        attest_bench_print_header(stdout);
        for (int k = 0; k < num_shapes[i]; k++) {
            attest_bench_row *row = &rows[num_rows];
            attest_bench_shape_string(&shapes[i][k], row->shape, sizeof row->shape);
            snprintf(row->candidate, sizeof row->candidate, "%s", cands[i]->name);
            row->peak_gbps = o.peak_gbps;
            attest_case c;
            attest_status st = attest_bench_case(&shapes[i][k], seed, &c);
            if (st == ATTEST_OK) {
                st = attest_bench_run(cands[i], &c, &o, &row->result);
                attest_case_free(&c);
            }
            if (st != ATTEST_OK) {
                fflush(stdout);
                rc = attest_cli_usage_error("bench", "%s: %s", row->shape, attest_last_error());
                break;
            }
            attest_bench_print_row(stdout, row);
            fflush(stdout);
            num_rows++;
        }
        if (num_rows) attest_bench_print_timing(stdout, &rows[num_rows - 1]);
    }
    if (out && num_rows && attest_bench_write(out, rows, num_rows, command_line) != ATTEST_OK)
        rc = attest_cli_usage_error("bench", "%s", attest_last_error());
    else if (out && num_rows)
        printf("bench rows written to %s\n", out);
    free(rows);
    return rc;
}
