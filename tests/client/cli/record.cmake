# Tests of edgemon record/attach/mark (included from tests/CMakeLists.txt).
#
# edgemon_record_tests: the pure pieces (rail tree, summary JSON, CSV, Chrome
# trace JSON, report.html's data and escaping, --items-from matching, the
# --nvtx ranges file and energy per range name).
# record_e2e: edgemon-sim + edgemond on a unix socket, then `edgemon record`
# checked against the simulator's analytic energy (sidecar), exit codes,
# marks, --items, attach, a daemon killed and restarted mid-recording, the
# bundle's trace.perfetto-trace decoded with protoc, and --nvtx (energy per
# NVTX range of a C program, against the program's own stamps).
# Its folder is shared with the other subcommands' tests (cli.cmake): each lists its files.
edgemon_area_tests(edgemon_record_tests 60
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/record_report_test.cc ${CMAKE_CURRENT_LIST_DIR}/supervisor_test.cc
          ${CMAKE_CURRENT_LIST_DIR}/record_html_test.cc ${CMAKE_CURRENT_LIST_DIR}/record_nvtx_test.cc
          ${CMAKE_CURRENT_LIST_DIR}/compare_test.cc
  LIBS edgemon_cli)

# record --nvtx: a C program annotated with NVTX v3 (nvtx_ranges.c), built
# where the headers are (client/nvtx/CMakeLists.txt finds them).
set(record_nvtx_args)
if(EDGEMON_NVTX_FOUND)
  enable_language(C)
  add_executable(nvtx_ranges ${CMAKE_CURRENT_LIST_DIR}/nvtx_ranges.c)
  target_include_directories(nvtx_ranges SYSTEM PRIVATE ${EDGEMON_NVTX_INCLUDE_DIR})
  target_link_libraries(nvtx_ranges PRIVATE Threads::Threads ${CMAKE_DL_LIBS})
  add_dependencies(nvtx_ranges edgemon_nvtx)
  # The same as a library for the Python client's measure(nvtx=True) test.
  add_library(nvtx_ranges_lib MODULE ${CMAKE_CURRENT_LIST_DIR}/nvtx_ranges.c)
  target_compile_definitions(nvtx_ranges_lib PRIVATE NVTX_RANGES_LIBRARY)
  target_include_directories(nvtx_ranges_lib SYSTEM PRIVATE ${EDGEMON_NVTX_INCLUDE_DIR})
  target_link_libraries(nvtx_ranges_lib PRIVATE Threads::Threads ${CMAKE_DL_LIBS})
  set(record_nvtx_args --nvtx-program $<TARGET_FILE:nvtx_ranges>)
else()
  edgemon_missing_for_tests("the NVTX v3 headers (CUDA's include/nvtx3)")
  edgemon_tests_left_out("record --nvtx in record_e2e")
endif()
add_test(NAME record_e2e
         COMMAND ${EDGEMON_SYSTEM_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/record_e2e.py
                 --edgemon $<TARGET_FILE:edgemon>
                 --edgemond $<TARGET_FILE:edgemond>
                 --sim $<TARGET_FILE:edgemon-sim>
                 --fixtures ${PROJECT_SOURCE_DIR}/tests/fixtures ${record_nvtx_args}
                 --protoc $<TARGET_FILE:protobuf::protoc> --proto-dir ${PROJECT_SOURCE_DIR}/proto)
set_tests_properties(record_e2e PROPERTIES TIMEOUT 300)

# The bundle's trace.perfetto-trace is written with proto/perfetto/trace.proto,
# edgemon's subset of Perfetto's trace format: its field numbers against the
# published ones (record_e2e decodes a bundle's trace with protoc).
add_test(NAME perfetto_subset
         COMMAND ${EDGEMON_SYSTEM_PYTHON3} ${PROJECT_SOURCE_DIR}/tests/proto/perfetto_subset_test.py
                 --protoc $<TARGET_FILE:protobuf::protoc> --proto-dir ${PROJECT_SOURCE_DIR}/proto)
set_tests_properties(perfetto_subset PROPERTIES TIMEOUT 60)
