# Tests of edgemon record/attach/mark (included from tests/CMakeLists.txt).
#
# edgemon_record_tests: the pure pieces (rail tree, summary JSON, CSV, Chrome
# trace JSON, --items-from matching, time parsing).
# record_e2e: edgemon-sim + edgemond on a unix socket, then `edgemon record`
# checked against the simulator's analytic energy (sidecar), exit codes,
# marks, --items, attach, and a daemon killed and restarted mid-recording.
file(GLOB EDGEMON_RECORD_TESTS CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*_test.cc)
add_executable(edgemon_record_tests ${EDGEMON_RECORD_TESTS})
target_link_libraries(edgemon_record_tests PRIVATE edgemon_cli GTest::gtest_main)
edgemon_warnings(edgemon_record_tests)
gtest_discover_tests(edgemon_record_tests PROPERTIES TIMEOUT 60)

find_program(EDGEMON_RECORD_PYTHON3 python3 PATHS /usr/bin NO_DEFAULT_PATH REQUIRED)
add_test(NAME record_e2e
         COMMAND ${EDGEMON_RECORD_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/record_e2e.py
                 --edgemon $<TARGET_FILE:edgemon>
                 --edgemond $<TARGET_FILE:edgemond>
                 --sim $<TARGET_FILE:edgemon-sim>
                 --fixtures ${CMAKE_CURRENT_LIST_DIR}/../fixtures)
set_tests_properties(record_e2e PROPERTIES TIMEOUT 300)
