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
                   --victoria-metrics ${EDGEMON_VICTORIA_METRICS}
                   --edgemon $<TARGET_FILE:edgemon> --python-dir ${PROJECT_BINARY_DIR}/python)
  set_tests_properties(push_e2e PROPERTIES TIMEOUT 300)
else()
  edgemon_tests_left_out(push_e2e)
endif()

# The OTLP wire against the official OpenTelemetry JS SDK exporter, installed
# from npm into the build tree by a fixture (scripts/install-otel-js.sh).
edgemon_test_tool(EDGEMON_NODE node)
edgemon_test_tool(EDGEMON_NPM npm)
if(EDGEMON_NODE AND EDGEMON_NPM)
  add_test(NAME otlp_js_install
           COMMAND ${PROJECT_SOURCE_DIR}/scripts/install-otel-js.sh ${CMAKE_BINARY_DIR}/otel-js)
  set_tests_properties(otlp_js_install PROPERTIES FIXTURES_SETUP otel_js TIMEOUT 300)
  add_test(NAME otlp_js_diff
           COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/e2e/otlp_js_test.py
                   --edgemond $<TARGET_FILE:edgemond> --sim $<TARGET_FILE:edgemon-sim>
                   --fixtures ${CMAKE_CURRENT_SOURCE_DIR}/fixtures
                   --node ${EDGEMON_NODE} --modules ${CMAKE_BINARY_DIR}/otel-js/node_modules)
  set_tests_properties(otlp_js_diff PROPERTIES FIXTURES_REQUIRED otel_js TIMEOUT 120)
else()
  edgemon_tests_left_out(otlp_js_diff)
endif()
