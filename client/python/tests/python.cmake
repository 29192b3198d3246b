# pytest over the edgemon and jtop packages against edgemond on simulated
# boards (client/python/tests). Included from client/python/CMakeLists.txt.
find_program(EDGEMON_SYSTEM_PYTHON3_FOR_PYTEST python3 PATHS /usr/bin NO_DEFAULT_PATH)
execute_process(COMMAND ${EDGEMON_SYSTEM_PYTHON3_FOR_PYTEST} -c "import pytest"
                RESULT_VARIABLE edgemon_no_pytest OUTPUT_QUIET ERROR_QUIET)
if(edgemon_no_pytest)
  edgemon_missing_for_tests("pytest (python3-pytest)")
  edgemon_tests_left_out(python_client)
  return()
endif()
# edgemon.torch's tests need PyTorch (Debian's python3-torch, CPU).
execute_process(COMMAND ${EDGEMON_SYSTEM_PYTHON3_FOR_PYTEST} -c "import torch"
                RESULT_VARIABLE edgemon_no_torch OUTPUT_QUIET ERROR_QUIET)
if(edgemon_no_torch)
  edgemon_missing_for_tests("PyTorch (python3-torch)")
  edgemon_tests_left_out("python_client's edgemon.torch tests")
endif()
add_test(NAME python_client
         COMMAND ${EDGEMON_SYSTEM_PYTHON3_FOR_PYTEST} -m pytest -q -rs -p no:cacheprovider
                 ${CMAKE_CURRENT_LIST_DIR})
set_tests_properties(python_client PROPERTIES
  TIMEOUT 600
  ENVIRONMENT "PYTHONPATH=${EDGEMON_PYTHON_DIR};PYTHONDONTWRITEBYTECODE=1;EDGEMON_TEST_EDGEMOND=$<TARGET_FILE:edgemond>;EDGEMON_TEST_CONTROL=$<TARGET_FILE:edgemon-control>;EDGEMON_TEST_SIM=$<TARGET_FILE:edgemon-sim>;EDGEMON_TEST_CLI=$<TARGET_FILE:edgemon>;EDGEMON_TEST_FIXTURES=${PROJECT_SOURCE_DIR}/tests/fixtures")
# measure(nvtx=True): the injection library and an NVTX-annotated library
# (tests/client/cli/record.cmake), where the NVTX headers are.
if(EDGEMON_NVTX_FOUND)
  set_property(TEST python_client APPEND PROPERTY ENVIRONMENT
    "EDGEMON_TEST_NVTX_LIBRARY=$<TARGET_FILE:edgemon_nvtx>"
    "EDGEMON_TEST_NVTX_RANGES=$<TARGET_FILE:nvtx_ranges_lib>")
endif()
