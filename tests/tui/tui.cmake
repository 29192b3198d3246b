# Tests of the tui area (included from tests/CMakeLists.txt).
# View-model tests on fixture boards (goldens in tests/tui/golden/; set
# EDGETOP_UPDATE_GOLDEN=1 to rewrite them), and edgetop in a real terminal.
edgemon_area_tests(edgetop_tests 60 DIR ${CMAKE_CURRENT_LIST_DIR} LIBS edgetop_view edgemon_testing)
target_compile_definitions(edgetop_tests PRIVATE
  EDGETOP_GOLDEN_DIR="${CMAKE_CURRENT_LIST_DIR}/golden")

# The real-terminal test needs tmux (scripts/install-deps.sh installs it).
edgemon_test_tool(TMUX tmux)
if(TMUX)
  add_test(NAME edgetop_tmux_e2e
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/edgetop_e2e.py
                   --edgetop $<TARGET_FILE:edgetop> --edgemond $<TARGET_FILE:edgemond>
                   --sim $<TARGET_FILE:edgemon-sim> --probe $<TARGET_FILE:edgemon-probe>
                   --tmux ${TMUX})
  set_tests_properties(edgetop_tmux_e2e PROPERTIES TIMEOUT 180)
else()
  edgemon_tests_left_out(edgetop_tmux_e2e)
endif()

# Without a terminal edgetop stops before drawing, with one line and exit 1
# (ctest's stdout is a pipe).
add_test(NAME edgetop_needs_a_terminal
         COMMAND sh -c "$<TARGET_FILE:edgetop> --connect unix:/nonexistent/edgemon.sock 2>&1 </dev/null; echo \"exit $?\"")
set_tests_properties(edgetop_needs_a_terminal PROPERTIES
  PASS_REGULAR_EXPRESSION "^edgetop: stdin and stdout must be a terminal\nexit 1\n$")
