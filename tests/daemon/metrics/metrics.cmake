# Tests of the metrics area (included from tests/CMakeLists.txt inside
# if(EDGEMON_BUILD_TESTS)): the exposition, the /metrics listener and source
# (gtest), and a real Prometheus server scraping three simulated boards.
edgemon_test_tool(EDGEMON_PROMTOOL promtool)
edgemon_test_tool(EDGEMON_PROMETHEUS prometheus)
edgemon_test_tool(EDGEMON_GRPC_PYTHON_PLUGIN grpc_python_plugin)

edgemon_area_tests(edgemon_metrics_tests 120 DIR ${CMAKE_CURRENT_LIST_DIR} LIBS edgemon_metrics
  edgemon_runtime edgemon_testing PkgConfig::HTTPLIB nlohmann_json::nlohmann_json)
target_compile_definitions(edgemon_metrics_tests PRIVATE
  EDGEMON_README="${PROJECT_SOURCE_DIR}/docs/prometheus.md")
if(EDGEMON_PROMTOOL)  # the exposition checked by promtool (exposition_test.cc)
  target_compile_definitions(edgemon_metrics_tests PRIVATE EDGEMON_PROMTOOL="${EDGEMON_PROMTOOL}")
else()
  edgemon_tests_left_out("ExpositionTest's promtool check")
endif()

# Prometheus 2.42 (Debian) scrapes three edgemond on three edgemon-sim boards;
# values, increase() of the energy counter vs Summarize, promtool, 404,
# and 50 concurrent scrapers against the daemon's deadline misses.
if(EDGEMON_PROMETHEUS AND EDGEMON_PROMTOOL AND EDGEMON_GRPC_PYTHON_PLUGIN)
  add_test(NAME prometheus_e2e
           COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/prometheus_e2e.py
                   --edgemond $<TARGET_FILE:edgemond> --sim $<TARGET_FILE:edgemon-sim>
                   --prometheus ${EDGEMON_PROMETHEUS} --promtool ${EDGEMON_PROMTOOL}
                   --protoc $<TARGET_FILE:protobuf::protoc> --plugin ${EDGEMON_GRPC_PYTHON_PLUGIN}
                   --proto-dir ${PROJECT_SOURCE_DIR}/proto
                   --fixtures ${PROJECT_SOURCE_DIR}/tests/fixtures
                   --dashboards ${PROJECT_SOURCE_DIR}/packaging/grafana)
  set_tests_properties(prometheus_e2e PROPERTIES TIMEOUT 300)
else()
  edgemon_tests_left_out(prometheus_e2e)
endif()
