# Tests of edgemon-control (included from tests/CMakeLists.txt).
#
# control_e2e: edgemon-sim (agx-orin, with its simulated nvpmodel and
# jetson_clocks) + edgemon-control on a unix socket + edgemond, driven by the
# edgemon command line: record --lock-clocks --mode leaves the board as it
# was; refusals (unknown mode or fan, reboot needed, outside the group,
# disabled, lease held by another); client or helper killed mid-lease; a write
# the kernel refuses rolled back. Needs root (skipped otherwise).
add_test(NAME control_e2e
         COMMAND ${EDGEMON_SYSTEM_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/control_e2e.py
                 --control $<TARGET_FILE:edgemon-control>
                 --edgemon $<TARGET_FILE:edgemon>
                 --edgemond $<TARGET_FILE:edgemond>
                 --sim $<TARGET_FILE:edgemon-sim>
                 --fixtures ${PROJECT_SOURCE_DIR}/tests/fixtures)
set_tests_properties(control_e2e PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77)

# BoardControl's writes and restores on a scratch tree (no tools run).
edgemon_area_tests(edgemon_control_tests 60 DIR ${CMAKE_CURRENT_LIST_DIR} LIBS edgemon_control edgemon_testing)
