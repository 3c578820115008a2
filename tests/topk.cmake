# The top-k family through the CLI (cli/topk_run.c): a correct candidate passes, a mutant fails
# naming its check and printing a replay command, bad input exits 2.
add_test(NAME cli_topk_run COMMAND attest run --kernel topk --candidate cpu-topk-unsorted --cases 500 --seed 4)
set_tests_properties(cli_topk_run PROPERTIES LABELS "cli" TIMEOUT 120
  ENVIRONMENT "${ATTEST_TEST_ENV};CUDA_VISIBLE_DEVICES=" PASS_REGULAR_EXPRESSION "result: PASS \\(500 cases\\)")
add_test(NAME cli_topk_mutant COMMAND attest run --kernel topk --candidate mutant-topk-masked-positions --cases 100)
set_tests_properties(cli_topk_mutant PROPERTIES LABELS "cli" TIMEOUT 120 WILL_FAIL TRUE
  ENVIRONMENT "${ATTEST_TEST_ENV};CUDA_VISIBLE_DEVICES=")
add_test(NAME cli_topk_mutant_report COMMAND attest run --kernel topk --candidate mutant-topk-masked-positions --cases 100)
set_tests_properties(cli_topk_mutant_report PROPERTIES LABELS "cli" TIMEOUT 120
  ENVIRONMENT "${ATTEST_TEST_ENV};CUDA_VISIBLE_DEVICES="
  PASS_REGULAR_EXPRESSION "MISMATCH case .*\\[range.*masked position.*replay: attest run --kernel topk --candidate mutant-topk-masked-positions --case-seed 0x")
foreach(bad "--candidate;no-such-topk" "--candidate;cpu-topk;--cases;0" "--candidate;cpu-topk;--max-topk;0")
  string(REPLACE ";" "_" tag "${bad}")
  add_test(NAME cli_topk_bad_input_${tag}
    COMMAND sh -c "\"$0\" run --kernel topk \"$@\"; test $? -eq 2" $<TARGET_FILE:attest> ${bad})
  set_tests_properties(cli_topk_bad_input_${tag} PROPERTIES LABELS "cli" TIMEOUT 60)
endforeach()
add_test(NAME cli_topk_run_in_process COMMAND attest run --kernel topk --candidate cpu-topk --cases 200 --seed 4 --no-isolate --reruns 1)
set_tests_properties(cli_topk_run_in_process PROPERTIES LABELS "cli" TIMEOUT 120
  ENVIRONMENT "${ATTEST_TEST_ENV};CUDA_VISIBLE_DEVICES=" PASS_REGULAR_EXPRESSION "result: PASS \\(200 cases\\)")

# test_topk also drives the verb's judging loop (cli/topk_run.c), so it links the CLI's archive.
list(APPEND ATTEST_CUSTOM_TESTS test_topk)
attest_add_cmocka_test(test_topk test_topk.c LIBS attest_app)
# Top-k candidates from a plugin (harness/src/run/topk_plugin.c): the correct one passes, the
# zero-padding one fails its check; a missing name lists what the plugin has (exit 2).
add_library(attest_topk_test_plugin MODULE topk_plugin_fixture.c)
target_include_directories(attest_topk_test_plugin PRIVATE ${CMAKE_SOURCE_DIR}/harness/include)
set_target_properties(attest_topk_test_plugin PROPERTIES C_VISIBILITY_PRESET hidden
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/plugins)
target_link_libraries(attest_topk_test_plugin PRIVATE m)
add_test(NAME cli_topk_plugin COMMAND attest run --kernel topk
  --candidate $<TARGET_FILE:attest_topk_test_plugin>:plugin-topk --cases 300 --seed 4)
set_tests_properties(cli_topk_plugin PROPERTIES LABELS "cli" TIMEOUT 120
  ENVIRONMENT "${ATTEST_TEST_ENV};CUDA_VISIBLE_DEVICES=" PASS_REGULAR_EXPRESSION "result: PASS \\(300 cases\\)")
add_test(NAME cli_topk_plugin_mutant COMMAND attest run --kernel topk
  --candidate $<TARGET_FILE:attest_topk_test_plugin>:plugin-topk-zero-pad --cases 300 --seed 4)
set_tests_properties(cli_topk_plugin_mutant PROPERTIES LABELS "cli" TIMEOUT 120
  ENVIRONMENT "${ATTEST_TEST_ENV};CUDA_VISIBLE_DEVICES=" PASS_REGULAR_EXPRESSION "failed checks:.*(duplicate|padding).*result: FAIL")
add_test(NAME cli_topk_plugin_pipeline COMMAND attest run --kernel pipeline --candidate indexer=cpu-indexer
  --candidate topk=$<TARGET_FILE:attest_topk_test_plugin>:plugin-topk --candidate decode=cpu-mla-decode --cases 100)
set_tests_properties(cli_topk_plugin_pipeline PROPERTIES LABELS "cli" TIMEOUT 300
  ENVIRONMENT "${ATTEST_TEST_ENV};CUDA_VISIBLE_DEVICES=" PASS_REGULAR_EXPRESSION "result: PASS \\(100 cases\\)")
add_test(NAME cli_topk_plugin_unknown
  COMMAND sh -c "\"$0\" run --kernel topk --candidate \"$1:no-such\" 2>&1 | grep -q \"has no top-k candidate 'no-such' (it has: plugin-topk, plugin-topk-zero-pad)\"; test $? -eq 0 && { \"$0\" run --kernel topk --candidate \"$1:no-such\" >/dev/null 2>&1; test $? -eq 2; }"
  $<TARGET_FILE:attest> $<TARGET_FILE:attest_topk_test_plugin>)
set_tests_properties(cli_topk_plugin_unknown PROPERTIES LABELS "cli" TIMEOUT 60)
# attest itself never loads a top-k plugin (a corrupt library can damage whatever process maps
# it): the probe child and the runner's per-case children do. The fixture's constructor appends
# the loading process's pid to $ATTEST_TEST_TOPK_LOADS.
add_test(NAME cli_topk_plugin_not_in_parent
  COMMAND sh -c "f=$(mktemp); ATTEST_TEST_TOPK_LOADS=$f \"$0\" run --kernel topk --candidate \"$1:plugin-topk\" --cases 3 --seed 4 >/dev/null & pid=$!; wait $pid; rc=$?; n=$(wc -l < $f); own=$(grep -cx \"$pid\" $f); rm -f $f; echo \"exit $rc, $n loads, $own in attest\"; test $rc -eq 0 && test $n -ge 2 && test $own -eq 0"
  $<TARGET_FILE:attest> $<TARGET_FILE:attest_topk_test_plugin>)
set_tests_properties(cli_topk_plugin_not_in_parent PROPERTIES LABELS "cli" TIMEOUT 120
  ENVIRONMENT "CUDA_VISIBLE_DEVICES=")
add_library(attest_topk_crash_plugin MODULE topk_plugin_fixture.c)
target_include_directories(attest_topk_crash_plugin PRIVATE ${CMAKE_SOURCE_DIR}/harness/include)
target_compile_definitions(attest_topk_crash_plugin PRIVATE CRASH_IN_ENTRY=1)
set_target_properties(attest_topk_crash_plugin PROPERTIES C_VISIBILITY_PRESET hidden
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/plugins)
target_link_libraries(attest_topk_crash_plugin PRIVATE m)
add_test(NAME cli_topk_plugin_crash_in_entry
  COMMAND sh -c "out=$(\"$0\" run --kernel topk --candidate \"$1:plugin-topk\" 2>&1); rc=$?; echo \"$out\"; test $rc -eq 2 && test $(echo \"$out\" | wc -l) -eq 1 && echo \"$out\" | grep -q 'loading it crashed'"
  $<TARGET_FILE:attest> $<TARGET_FILE:attest_topk_crash_plugin>)
set_tests_properties(cli_topk_plugin_crash_in_entry PROPERTIES LABELS "cli" TIMEOUT 60)

# Top-k case files and results files through the CLI (cli/topk_files.c, tests/cli_topk_files.sh).
add_test(NAME cli_topk_files COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli_topk_files.sh $<TARGET_FILE:attest>)
set_tests_properties(cli_topk_files PROPERTIES LABELS cli TIMEOUT 300
  ENVIRONMENT "${ATTEST_TEST_ENV};CUDA_VISIBLE_DEVICES=" PASS_REGULAR_EXPRESSION "^PASS")

# The top-k fuzz target (fuzz/fuzz_topk.c): every correct built-in replays its seed corpus without
# a finding (fuzz_replay_topk is cpu-topk); a mutant is found and its case file fails attest check.
foreach(cand cpu-topk-ties-high cpu-topk-unsorted cpu-topk-short-identity)
  add_test(NAME fuzz_replay_topk_${cand} COMMAND fuzz_topk_replay ${CMAKE_SOURCE_DIR}/fuzz/corpus/topk)
  set_tests_properties(fuzz_replay_topk_${cand} PROPERTIES LABELS "fuzz-replay" TIMEOUT 120
    ENVIRONMENT "CUDA_VISIBLE_DEVICES=;ATTEST_FUZZ_CANDIDATE=${cand}")
endforeach()
add_test(NAME fuzz_topk_finds_mutant
  COMMAND sh -c "d=$(mktemp -d) && trap 'rm -rf \"$d\"' EXIT && ATTEST_FUZZ_ARTIFACTS=\"$d\" ATTEST_FUZZ_CANDIDATE=mutant-topk-drops-ties \"$0\" \"$2\" >/dev/null 2>&1; test $? -ne 0 && ls \"$d\"/fuzz-topk-*.h5 >/dev/null && { \"$1\" check \"$d\"/fuzz-topk-*.h5 --candidate mutant-topk-drops-ties >/dev/null; test $? -eq 1; } && \"$1\" check \"$d\"/fuzz-topk-*.h5 --candidate cpu-topk >/dev/null && echo FOUND"
  $<TARGET_FILE:fuzz_topk_replay> $<TARGET_FILE:attest> ${CMAKE_SOURCE_DIR}/fuzz/corpus/topk)
set_tests_properties(fuzz_topk_finds_mutant PROPERTIES LABELS "fuzz-replay" TIMEOUT 120
  ENVIRONMENT "CUDA_VISIBLE_DEVICES=" PASS_REGULAR_EXPRESSION "FOUND")

# `attest fuzz --kernel topk`, the generated-case search: every top-k mutant (and a plugin's)
# found, minimized and saved as a case file attest check fails the same way; nothing found on
# the correct candidates (tests/py/test_fuzz_topk.py).
attest_add_python_test(test_fuzz_topk py/test_fuzz_topk.py LABELS "cli" TIMEOUT 600
  ARGS $<TARGET_FILE:attest_topk_test_plugin>)
