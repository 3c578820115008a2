# Pools past 2^31 bytes through the CLI (test_sparse_pool.c tests the parts): about 1% of the
# default cases move their pool past 2^31 bytes, and the first 100 cases of seed 1 hold three
# (cases 7, 17 and 47, of both families); the kernel with 32-bit page offsets faults on them (in the guard below the pool or on an
# unplaced page, named), the correct kernels pass them. Before pools could be placed sparsely the
# mutant passed every generated case.
add_test(NAME cli_high_pools_find_int32_offsets
  COMMAND attest run --candidate mutant-mla-int32-offsets --cases 100 --seed 1 --max-failures 1)
set_tests_properties(cli_high_pools_find_int32_offsets PROPERTIES LABELS "cli"
  ENVIRONMENT "${ATTEST_TEST_ENV};CUDA_VISIBLE_DEVICES=" TIMEOUT 300
  PASS_REGULAR_EXPRESSION "CRASH mutant-mla-int32-offsets .*(bytes before sparse pool|unplaced page)")
foreach(cand cpu-mla-decode cpu-mla-decode-reverse-merge cpu-indexer)
  add_test(NAME cli_high_pools_pass_${cand}
    COMMAND attest run --candidate ${cand} --cases 100 --seed 1)
  set_tests_properties(cli_high_pools_pass_${cand} PROPERTIES LABELS "cli"
    ENVIRONMENT "${ATTEST_TEST_ENV};CUDA_VISIBLE_DEVICES=" TIMEOUT 300
    PASS_REGULAR_EXPRESSION "result: PASS \\(100 cases\\)")
endforeach()

# --high-pools N: every case moved (1000) or none (0), the same for --jobs and in replay lines.
add_test(NAME cli_high_pools_every_case
  COMMAND attest run --candidate cpu-mla-decode-tile16 --cases 100 --seed 3 --high-pools 1000)
set_tests_properties(cli_high_pools_every_case PROPERTIES LABELS "cli"
  ENVIRONMENT "${ATTEST_TEST_ENV};CUDA_VISIBLE_DEVICES=" TIMEOUT 300
  PASS_REGULAR_EXPRESSION "result: PASS \\(100 cases\\)")
add_test(NAME cli_high_pools_mutant_every_case
  COMMAND attest run --candidate mutant-mla-int32-offsets --cases 40 --seed 3 --high-pools 1000
          --jobs 2)
set_tests_properties(cli_high_pools_mutant_every_case PROPERTIES LABELS "cli"
  ENVIRONMENT "${ATTEST_TEST_ENV};CUDA_VISIBLE_DEVICES=" TIMEOUT 300
  PASS_REGULAR_EXPRESSION "FAIL \\(39 of 40 cases failed\\).*--high-pools 1000 --case-seed|--high-pools 1000 --case-seed.*FAIL \\(39 of 40 cases failed\\)")
add_test(NAME cli_high_pools_none
  COMMAND attest run --candidate mutant-mla-int32-offsets --cases 100 --seed 1 --high-pools 0)
set_tests_properties(cli_high_pools_none PROPERTIES LABELS "cli"
  ENVIRONMENT "${ATTEST_TEST_ENV};CUDA_VISIBLE_DEVICES=" TIMEOUT 300
  PASS_REGULAR_EXPRESSION "result: PASS \\(100 cases\\)")
