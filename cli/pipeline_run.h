/* attest CLI (internal): pipeline mode. `attest run --kernel pipeline --candidate indexer=C1
 * --candidate topk=C2 --candidate decode=C3` runs generated chains through pipeline_judge.h;
 * `attest check FILE... --candidate STAGE=SPEC...` replays saved chains (docs/pipeline.md). */
#ifndef ATTEST_CLI_PIPELINE_RUN_H
#define ATTEST_CLI_PIPELINE_RUN_H

/* 1 when argv asks for pipeline mode: --kernel pipeline, or a --candidate STAGE=SPEC. */
int attest_wants_pipeline(int argc, char **argv);

/* `attest run --kernel pipeline ...` (argv as given to attest run). */
int attest_cmd_run_pipeline(int argc, char **argv);

/* `attest check FILE... --candidate STAGE=SPEC...` (argv as given to attest check). */
int attest_cmd_check_pipeline(int argc, char **argv);

#endif /* ATTEST_CLI_PIPELINE_RUN_H */
