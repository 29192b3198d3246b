# Tests of the cli area (included from tests/CMakeLists.txt).
#
# edgemon_cli_tests: the pure pieces of edgemon's reading subcommands: the
# tegrastats formatter (checked with a parser written from tegrastats'
# published format), time/duration parsing (the cases of
# tests/data/timespec_cases.json), channel selection.
# cli_e2e: edgemon-sim + edgemond (unix socket and loopback TCP), then
# `edgemon now/sensors/watch/tegrastats/query` against them, exit codes.
# Its folder is shared with edgemon record's tests (record.cmake): each lists its files.
edgemon_area_tests(edgemon_cli_tests 60
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/csv_field_test.cc
          ${CMAKE_CURRENT_LIST_DIR}/tegrastats_background_test.cc
          ${CMAKE_CURRENT_LIST_DIR}/tegrastats_format_test.cc
          ${CMAKE_CURRENT_LIST_DIR}/timespec_test.cc
  LIBS edgemon_cli)
# The time syntax's cases, shared with the Python client's tests.
target_compile_definitions(edgemon_cli_tests PRIVATE
  EDGEMON_TIMESPEC_CASES="${PROJECT_SOURCE_DIR}/tests/data/timespec_cases.json")

add_test(NAME cli_e2e
         COMMAND ${EDGEMON_SYSTEM_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/cli_e2e.py
                 --edgemon $<TARGET_FILE:edgemon>
                 --edgemond $<TARGET_FILE:edgemond>
                 --sim $<TARGET_FILE:edgemon-sim>
                 --fixtures ${PROJECT_SOURCE_DIR}/tests/fixtures)
set_tests_properties(cli_e2e PROPERTIES TIMEOUT 300)

# tegrastats --start/--stop: the background instance against edgemond on a
# simulated board (lines in the logfile, a second --start refused, --stop,
# a stale pid file's pid never signalled, nor an instance of another edgemon
# executable).
add_test(NAME tegrastats_background_e2e
         COMMAND ${EDGEMON_SYSTEM_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/tegrastats_background_e2e.py
                 --edgemon $<TARGET_FILE:edgemon>
                 --edgemond $<TARGET_FILE:edgemond>
                 --sim $<TARGET_FILE:edgemon-sim>
                 --fixtures ${PROJECT_SOURCE_DIR}/tests/fixtures)
set_tests_properties(tegrastats_background_e2e PROPERTIES TIMEOUT 300)
