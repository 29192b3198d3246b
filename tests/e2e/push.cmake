# The push shipper against Debian's prometheus and victoria-metrics (an
# outage of one), scripted receivers (429/500/400) and a kill -9 mid-drain,
# all side by side (tests/e2e/push_test.py).
edgemon_test_tool(EDGEMON_PUSH_PROMETHEUS prometheus)
edgemon_test_tool(EDGEMON_VICTORIA_METRICS victoria-metrics)
if(EDGEMON_PUSH_PROMETHEUS AND EDGEMON_VICTORIA_METRICS)
  add_test(NAME push_e2e
           COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/e2e/push_test.py
                   --edgemond $<TARGET_FILE:edgemond> --sim $<TARGET_FILE:edgemon-sim>
                   --fixtures ${CMAKE_CURRENT_SOURCE_DIR}/fixtures
                   --prometheus ${EDGEMON_PUSH_PROMETHEUS}
                   --victoria-metrics ${EDGEMON_VICTORIA_METRICS})
  set_tests_properties(push_e2e PROPERTIES TIMEOUT 300)
else()
  edgemon_tests_left_out(push_e2e)
endif()
