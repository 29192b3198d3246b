# Tests of the cli area (included from tests/CMakeLists.txt).
#
# edgemon_cli_tests: the pure pieces of edgemon's reading subcommands: the
# tegrastats formatter (checked with a parser written from tegrastats'
# published format), time/duration parsing, channel selection.
# cli_e2e: edgemon-sim + edgemond (unix socket and loopback TCP), then
# `edgemon now/sensors/watch/tegrastats/query` against them, exit codes.
file(GLOB EDGEMON_CLI_TESTS CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*_test.cc)
add_executable(edgemon_cli_tests ${EDGEMON_CLI_TESTS})
target_link_libraries(edgemon_cli_tests PRIVATE edgemon_cli GTest::gtest_main)
edgemon_warnings(edgemon_cli_tests)
gtest_discover_tests(edgemon_cli_tests PROPERTIES TIMEOUT 60)

find_program(EDGEMON_CLI_PYTHON3 python3 PATHS /usr/bin NO_DEFAULT_PATH REQUIRED)
add_test(NAME cli_e2e
         COMMAND ${EDGEMON_CLI_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/cli_e2e.py
                 --edgemon $<TARGET_FILE:edgemon>
                 --edgemond $<TARGET_FILE:edgemond>
                 --sim $<TARGET_FILE:edgemon-sim>
                 --fixtures ${CMAKE_CURRENT_LIST_DIR}/../fixtures)
set_tests_properties(cli_e2e PROPERTIES TIMEOUT 300)
