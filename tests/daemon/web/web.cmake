# Tests of the live page (included from tests/CMakeLists.txt inside
# if(EDGEMON_BUILD_TESTS)): its JSON and parameter checks, and its routes on
# a real listener and store (gtest); the page in a headless chromium against
# edgemond on a simulated board (live_page_test.py).
edgemon_area_tests(edgemon_web_tests 120 DIR ${CMAKE_CURRENT_LIST_DIR} LIBS edgemon_web
  edgemon_metrics edgemon_testing PkgConfig::HTTPLIB nlohmann_json::nlohmann_json)

edgemon_test_tool(EDGEMON_CHROMIUM chromium)
if(EDGEMON_CHROMIUM)
  add_test(NAME live_page
           COMMAND /usr/bin/python3 ${PROJECT_SOURCE_DIR}/tests/e2e/live_page_test.py
                   --edgemon $<TARGET_FILE:edgemon> --edgemond $<TARGET_FILE:edgemond>
                   --sim $<TARGET_FILE:edgemon-sim> --fixtures ${PROJECT_SOURCE_DIR}/tests/fixtures
                   --chromium ${EDGEMON_CHROMIUM}
                   --artifacts ${PROJECT_BINARY_DIR}/test-artifacts/live_page)
  set_tests_properties(live_page PROPERTIES TIMEOUT 180)
else()
  edgemon_tests_left_out(live_page)
endif()
