/* attest check FILE... --recorded: judges the recorded outputs of saved failing cases (attest run
 * --save-failures) again against the CPU reference, without the candidate that produced them.
 *
 * The recorded outputs are replayed by a pseudo-candidate, "recorded", whose run copies them into
 * the outputs the harness placed: the case then takes exactly the path of attest run (placement
 * under the recorded conventions, reference, bounds, judge, decide), so the verdict, gates and
 * worst location are the ones attest run prints for those bytes, and a judge or reference fix
 * shows up here. What outputs alone cannot show (a re-run that differs, modified inputs, a crash,
 * a graph replay) is reported as the recorded verdict beside the re-judged one. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attest/campaign.h"
#include "attest/conventions.h"
#include "attest/reference.h"
#include "attest/runner.h"
#include "attest/sha256.h"
#include "check.h"
#include "commands.h"

#define VERB "check"

/* What the pseudo-candidate copies: set before each case's runner is created (its worker is
 * forked from this process afterwards, so it sees them). */
static struct {
    attest_stored_tensor t[ATTEST_RECORD_MAX_OUTPUTS];
    int n;
} replay_outputs;

static const attest_stored_tensor *replayed(const char *name)
{
    for (int i = 0; i < replay_outputs.n; i++)
        if (!strcmp(replay_outputs.t[i].name, name)) return &replay_outputs.t[i];
    return NULL;
}

/* An output the file does not record keeps the poison the harness placed, as an output the
 * candidate never wrote would. */
static void copy_out(void *dst, const char *name)
{
    const attest_stored_tensor *s = replayed(name);
    if (s && dst) memcpy(dst, s->data, s->nbytes);
}

static int recorded_run(void *ctx, const attest_kernel_args *args)
{
    (void)ctx;
    if (args->kernel == ATTEST_KERNEL_INDEXER) {
        copy_out(args->u.indexer.logits, "logits");
    } else {
        copy_out(args->u.mla.out, "out_bf16");
        copy_out(args->u.mla.lse, "lse");
    }
    return 0;
}

static void replay_free(void)
{
    for (int i = 0; i < replay_outputs.n; i++) attest_stored_tensor_free(&replay_outputs.t[i]);
    replay_outputs.n = 0;
}

typedef struct recheck_args {
    const char *policy;
    char **files;
    size_t num_files;
} recheck_args;

static void usage(FILE *f)
{
    fputs("usage: attest check FILE.h5|DIR... --recorded [--policy FILE] [--max-case-mb M]\n"
          "\n"
          "Judges the recorded outputs of saved failing cases (attest run --save-failures DIR\n"
          "writes them: a case file whose candidate/ group has recorded = 1) again against the\n"
          "CPU reference, without the candidate: the verdict, gates and worst location are\n"
          "printed as attest run prints them. Outputs alone show a MISMATCH; a verdict they\n"
          "cannot show (NONDETERMINISTIC, INPUT_MODIFIED, CRASH, GRAPH_MISMATCH, ...) is printed\n"
          "as recorded beside the re-judged one. Exit status: 0 every recorded output passes,\n"
          "1 one fails or a file holds no recorded outputs or cannot be read, 2 usage error.\n"
          "\n"
          "  --policy FILE    judge under this policy (default: the one the file recorded, its\n"
          "                   hash checked; files without one: the embedded default)\n"
          ATTEST_CLI_MAX_CASE_USAGE,
          f);
}

int attest_check_wants_recorded(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--")) return 0;
        if (!strcmp(argv[i], "--recorded")) return 1;
    }
    return 0;
}

/* Returns -1 to go on, or an exit status. */
static int parse(int argc, char **argv, recheck_args *a)
{
    memset(a, 0, sizeof *a);
    enum { OPT_RECORDED = 256, OPT_POLICY, OPT_MAX_CASE };
    static const struct option options[] = {
        {"help", no_argument, NULL, 'h'},
        {"recorded", no_argument, NULL, OPT_RECORDED},
        {"policy", required_argument, NULL, OPT_POLICY},
        {"max-case-mb", required_argument, NULL, OPT_MAX_CASE},
        {NULL, 0, NULL, 0},
    };
    optind = 1;
    opterr = 0;
    int ch;
    while ((ch = attest_cli_getopt(argc, argv, ":", options)) != -1) {
        switch (ch) {
        case 'h': usage(stdout); return ATTEST_EXIT_OK;
        case OPT_RECORDED: break;
        case OPT_POLICY: a->policy = optarg; break;
        case OPT_MAX_CASE: {
            int rc = attest_cli_max_case_mb(VERB, optarg);
            if (rc >= 0) return rc;
            break;
        }
        default:
            if (ch == '?' && optind > 0 && !strncmp(argv[optind - 1], "--candidate", 11))
                return attest_cli_usage_error(VERB, "--recorded judges the outputs a file "
                                                    "recorded: it takes no --candidate");
            return attest_cli_getopt_error(VERB, ch, argv);
        }
    }
    if (optind >= argc) return attest_cli_usage_error(VERB, "expected saved case files");
    a->files = argv + optind;
    a->num_files = (size_t)(argc - optind);
    return -1;
}

typedef struct recheck_totals {
    uint64_t judged, failing, unreadable, differ, verdicts[ATTEST_VERDICT_COUNT_];
} recheck_totals;

/* Loads the outputs the case records into replay_outputs, each checked against the case's shape. */
static attest_status load_outputs(const char *path, const char *group, const attest_case *c,
                                  const char *verdict)
{
    replay_free();
    for (size_t i = 0; i < c->num_tensors; i++) {
        const attest_tensor *t = &c->tensors[i];
        if (t->role != ATTEST_ROLE_OUTPUT) continue;
        char name[128];
        snprintf(name, sizeof name, "candidate/%s", t->name);
        attest_stored_tensor s;
        attest_status st = attest_casefile_load_output(path, group, name, &s);
        if (st == ATTEST_ERR_NOT_FOUND) continue;
        ATTEST_FORWARD(st);
        if (!attest_stored_tensor_matches(&s, t) || s.dtype != t->dtype || s.nbytes != t->nbytes) {
            attest_stored_tensor_free(&s);
            return attest_fail(ATTEST_ERR_FORMAT, "%s: %s: shape or dtype differs from the case's",
                               path, name);
        }
        snprintf(s.name, sizeof s.name, "%s", t->name);
        replay_outputs.t[replay_outputs.n++] = s;
    }
    if (replay_outputs.n == 0)
        return attest_fail(ATTEST_ERR_NOT_FOUND,
                           "%s: no recorded outputs: the recorded run (%s) left none to judge",
                           path, verdict[0] ? verdict : "verdict not recorded");
    return ATTEST_OK;
}

/* The policy one case is judged under: --policy, else the recorded text after its hash checks,
 * else the embedded default. *own: free it after the case. */
static attest_status case_policy(const recheck_args *a, attest_policy *given,
                                 const attest_casefile_recorded_info *info, const char *path,
                                 attest_policy **out, int *own)
{
    *own = 0;
    if (given) {
        *out = given;
        return ATTEST_OK;
    }
    (void)a;
    if (info->policy_text) {
        /* Hashed before it is parsed: an edited text is refused as edited, whatever it says. */
        char hex[ATTEST_SHA256_HEX_LEN + 1];
        attest_sha256_hex(info->policy_text, strlen(info->policy_text), hex);
        if (strcmp(hex, info->policy_hash))
            return attest_fail(ATTEST_ERR_FORMAT,
                               "%s: candidate/policy_text does not hash to candidate/policy_hash "
                               "%.12s (edited?); give --policy FILE",
                               path, info->policy_hash[0] ? info->policy_hash : "(none)");
        ATTEST_FORWARD(attest_policy_parse(info->policy_text, strlen(info->policy_text),
                                           "recorded policy_text", out));
        *own = 1;
        return ATTEST_OK;
    }
    return attest_policy_default(out);
}

static void unreadable(recheck_totals *t, const char *label, const char *message)
{
    printf("%s  UNREADABLE\n    %s\n", label, message);
    t->unreadable++;
}

static attest_status recheck_case(const recheck_args *a, attest_policy *given, const char *path,
                                  const char *group, recheck_totals *tot)
{
    char label[1100];
    if (!strcmp(group, "/")) snprintf(label, sizeof label, "%s", path);
    else snprintf(label, sizeof label, "%s:%s", path, group);
    attest_casefile_recorded_info info;
    attest_status st = attest_casefile_load_recorded(path, group, &info);
    if (st != ATTEST_OK) {
        unreadable(tot, label, attest_last_error());
        return ATTEST_OK;
    }
    attest_candidate cand;
    memset(&cand, 0, sizeof cand);
    cand.abi_version = ATTEST_CANDIDATE_ABI_VERSION;
    cand.struct_size = sizeof cand;
    cand.name = "recorded";
    cand.description = "the recorded outputs of a saved failing case";
    cand.domain = ATTEST_DOMAIN_HOST;
    cand.conventions = attest_conventions_default();
    cand.run = recorded_run;
    /* "key=value,key=value" as attest_conventions_format wrote it. */
    char conv[sizeof info.conventions];
    snprintf(conv, sizeof conv, "%s", info.conventions);
    for (char *save = NULL, *kv = strtok_r(conv, ",", &save); kv && st == ATTEST_OK;
         kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq) st = attest_fail(ATTEST_ERR_FORMAT, "%s: candidate/conventions: '%s'", path, kv);
        else {
            *eq = '\0';
            st = attest_convention_set(&cand.conventions, kv, eq + 1);
        }
    }
    attest_case c;
    memset(&c, 0, sizeof c);
    if (st == ATTEST_OK) st = attest_casefile_load(path, group, &c);
    if (st == ATTEST_OK) {
        cand.kernel = c.kernel;
        st = load_outputs(path, group, &c, info.verdict);
    }
    attest_policy *policy = NULL;
    int own = 0;
    if (st == ATTEST_OK) st = case_policy(a, given, &info, path, &policy, &own);
    if (st != ATTEST_OK) {
        unreadable(tot, label, attest_last_error());
        attest_case_free(&c);
        attest_casefile_recorded_free(&info);
        replay_free();
        return ATTEST_OK;
    }
    attest_runner_options ro = attest_runner_defaults();
    ro.reruns = 1; /* the same bytes every time: a re-run shows nothing */
    ro.policy = policy;
    ro.reference = attest_ref_simulated;
    attest_runner *runner = NULL;
    attest_case_record rec;
    memset(&rec, 0, sizeof rec);
    st = attest_runner_create(&cand, &ro, &runner);
    if (st == ATTEST_OK) st = attest_runner_judge(runner, &c, &rec, NULL);
    attest_runner_destroy(runner);
    if (st == ATTEST_OK) {
        snprintf(rec.candidate, sizeof rec.candidate, "%.*s", (int)sizeof rec.candidate - 1,
                 info.candidate[0] ? info.candidate : "recorded");
        char gates[96];
        attest_gate_mask_string(rec.failed_gates, gates, sizeof gates);
        printf("%s  %s  %s%s%s\n", label, rec.candidate, attest_verdict_name(rec.verdict),
               gates[0] ? "  reference: " : "", gates);
        if (attest_verdict_is_failure(rec.verdict)) attest_report_failure_line(stdout, &rec, NULL);
        const char *recorded_gates = info.failed_gates;
        printf("    recorded: %s%s%s%s under policy %s (%.12s)%s\n",
               info.verdict[0] ? info.verdict : "?", recorded_gates[0] ? " (" : "",
               recorded_gates, recorded_gates[0] ? ")" : "",
               info.policy_name[0] ? info.policy_name : "?",
               info.policy_hash[0] ? info.policy_hash : "?",
               strcmp(attest_policy_hash(policy), info.policy_hash) ? "; judged now under another"
                                                                    : "");
        if (given && strcmp(attest_policy_hash(policy), info.policy_hash))
            printf("    policy: %s (%.12s), given with --policy\n", attest_policy_name(policy),
                   attest_policy_hash(policy));
        if (strcmp(info.verdict, attest_verdict_name(rec.verdict)) || strcmp(recorded_gates, gates)) {
            tot->differ++;
            if (info.verdict[0] && strcmp(info.verdict, "MISMATCH") &&
                rec.verdict == ATTEST_VERDICT_OK)
                printf("    note: %s is not a property of the outputs alone; they pass\n",
                       info.verdict);
        }
        tot->judged++;
        tot->verdicts[rec.verdict < ATTEST_VERDICT_COUNT_ ? rec.verdict : ATTEST_VERDICT_HARNESS_ERROR]++;
        if (attest_verdict_is_failure(rec.verdict)) tot->failing++;
    }
    if (own) attest_policy_free(policy);
    attest_case_free(&c);
    attest_casefile_recorded_free(&info);
    replay_free();
    return st;
}

int attest_cmd_check_recorded(int argc, char **argv)
{
    recheck_args a;
    int rc = parse(argc, argv, &a);
    if (rc >= 0) return rc;
    attest_policy *given = NULL;
    if (a.policy && attest_policy_load(a.policy, &given) != ATTEST_OK)
        return attest_cli_usage_error(VERB, "%s", attest_last_error());
    check_files files;
    if (check_files_collect(a.files, a.num_files, NULL, &files) != ATTEST_OK) {
        attest_policy_free(given);
        return attest_cli_usage_error(VERB, "%s", attest_last_error());
    }
    recheck_totals tot;
    memset(&tot, 0, sizeof tot);
    attest_status st = ATTEST_OK;
    for (size_t f = 0; f < files.count && st == ATTEST_OK; f++) {
        check_scan scan;
        st = check_scan_file(files.paths[f], 0, &scan);
        if (st != ATTEST_OK) break;
        for (size_t g = 0; g < scan.count && st == ATTEST_OK; g++) {
            if (scan.cases[g].status != ATTEST_OK) {
                char label[1100];
                snprintf(label, sizeof label, "%s:%s", files.paths[f], scan.cases[g].name);
                unreadable(&tot, label, scan.cases[g].message);
                continue;
            }
            st = recheck_case(&a, given, files.paths[f], scan.cases[g].name, &tot);
        }
        if (st == ATTEST_OK && scan.file_status != ATTEST_OK)
            unreadable(&tot, files.paths[f], scan.file_message);
        attest_casefile_probe_result_free(&scan);
    }
    check_files_free(&files);
    attest_policy_free(given);
    if (st != ATTEST_OK) {
        fflush(stdout);
        return attest_cli_usage_error(VERB, "%s", attest_last_error());
    }
    printf("\nsummary: %" PRIu64 " recorded case%s judged again against the reference;",
           tot.judged, tot.judged == 1 ? "" : "s");
    for (int v = 0; v < ATTEST_VERDICT_COUNT_; v++)
        if (tot.verdicts[v])
            printf(" %s %" PRIu64, attest_verdict_name((attest_verdict)v), tot.verdicts[v]);
    printf("%s\n  differ from the recorded verdict: %" PRIu64 "; unreadable or without recorded "
           "outputs: %" PRIu64 "\n",
           tot.judged ? "" : " none", tot.differ, tot.unreadable);
    const int fail = tot.failing || tot.unreadable || tot.judged == 0;
    printf("result: %s\n", fail ? "FAIL" : "PASS");
    return fail ? ATTEST_EXIT_FAILED : ATTEST_EXIT_OK;
}
