# Tests of edgemon record/attach/mark (included from tests/CMakeLists.txt).
#
# edgemon_record_tests: the pure pieces (rail tree, summary JSON, CSV, Chrome
# trace JSON, report.html's data and escaping, --items-from matching).
# record_e2e: edgemon-sim + edgemond on a unix socket, then `edgemon record`
# checked against the simulator's analytic energy (sidecar), exit codes,
# marks, --items, attach, and a daemon killed and restarted mid-recording.
# Its folder is shared with the other subcommands' tests (cli.cmake): each lists its files.
edgemon_area_tests(edgemon_record_tests 60
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/record_report_test.cc ${CMAKE_CURRENT_LIST_DIR}/supervisor_test.cc
          ${CMAKE_CURRENT_LIST_DIR}/record_html_test.cc ${CMAKE_CURRENT_LIST_DIR}/compare_test.cc
  LIBS edgemon_cli)

add_test(NAME record_e2e
         COMMAND ${EDGEMON_SYSTEM_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/record_e2e.py
                 --edgemon $<TARGET_FILE:edgemon>
                 --edgemond $<TARGET_FILE:edgemond>
                 --sim $<TARGET_FILE:edgemon-sim>
                 --fixtures ${PROJECT_SOURCE_DIR}/tests/fixtures)
set_tests_properties(record_e2e PROPERTIES TIMEOUT 300)
