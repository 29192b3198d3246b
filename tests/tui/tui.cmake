# Tests of the tui area (included from tests/CMakeLists.txt).
# View-model tests on fixture boards (goldens in tests/tui/golden/; set
# EDGETOP_UPDATE_GOLDEN=1 to rewrite them), and edgetop in a real terminal.
file(GLOB EDGETOP_TESTS CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*_test.cc)
add_executable(edgetop_tests ${EDGETOP_TESTS})
target_link_libraries(edgetop_tests PRIVATE edgetop_view edgemon_testing GTest::gtest_main)
target_compile_definitions(edgetop_tests PRIVATE
  EDGETOP_GOLDEN_DIR="${CMAKE_CURRENT_LIST_DIR}/golden")
edgemon_warnings(edgetop_tests)
gtest_discover_tests(edgetop_tests PROPERTIES TIMEOUT 60)

find_program(TMUX tmux)
if(TMUX)
  add_test(NAME edgetop_tmux_e2e
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/edgetop_e2e.py
                   --edgetop $<TARGET_FILE:edgetop> --edgemond $<TARGET_FILE:edgemond>
                   --sim $<TARGET_FILE:edgemon-sim> --probe $<TARGET_FILE:edgemon-probe>
                   --tmux ${TMUX})
  set_tests_properties(edgetop_tmux_e2e PROPERTIES TIMEOUT 180)
else()
  message(WARNING "tmux not found: edgetop_tmux_e2e is not registered")
endif()
