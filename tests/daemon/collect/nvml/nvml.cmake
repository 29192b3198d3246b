# Tests of NVML (included from tests/CMakeLists.txt).
#
# edgemon_fake_nvml: a stand-in libnvidia-ml.so.1 (tests/support/fake_nvml.cc)
# that answers as a file says (Orin: NOT_SUPPORTED to everything; Thor:
# utilisation, codecs and processes, no memory; a driver that loads late).
# edgemon_nvml_tests: the NVML collector and the process reader against it;
# the binary's RUNPATH names the stand-in's folder, so dlopen finds it there
# when run by hand, and ctest sets LD_LIBRARY_PATH too: under ASan, dlopen
# goes through the sanitizer's runtime, whose RUNPATH is not the binary's.
# nvml_e2e: edgemond with the stand-in (LD_LIBRARY_PATH), a driver that
# loads after the daemon, read back through `edgemon`.
set(EDGEMON_FAKE_NVML_DIR ${PROJECT_BINARY_DIR}/tests/fake_nvml)
add_library(edgemon_fake_nvml SHARED ${PROJECT_SOURCE_DIR}/tests/support/fake_nvml.cc)
set_target_properties(edgemon_fake_nvml PROPERTIES
  OUTPUT_NAME nvidia-ml SOVERSION 1 LIBRARY_OUTPUT_DIRECTORY ${EDGEMON_FAKE_NVML_DIR})
edgemon_warnings(edgemon_fake_nvml)

edgemon_area_tests(edgemon_nvml_tests 60 DIR ${CMAKE_CURRENT_LIST_DIR} LIBS edgemon_testing
  ENVIRONMENT LD_LIBRARY_PATH=${EDGEMON_FAKE_NVML_DIR})
add_dependencies(edgemon_nvml_tests edgemon_fake_nvml)
set_target_properties(edgemon_nvml_tests PROPERTIES BUILD_RPATH ${EDGEMON_FAKE_NVML_DIR})
target_link_options(edgemon_nvml_tests PRIVATE -Wl,--enable-new-dtags)

add_test(NAME nvml_e2e
         COMMAND ${EDGEMON_SYSTEM_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/nvml_e2e.py
                 --edgemon $<TARGET_FILE:edgemon> --edgemond $<TARGET_FILE:edgemond>
                 --fake-nvml-dir ${EDGEMON_FAKE_NVML_DIR}
                 --fixtures ${PROJECT_SOURCE_DIR}/tests/fixtures
                 --python-dir ${PROJECT_BINARY_DIR}/python)
set_tests_properties(nvml_e2e PROPERTIES TIMEOUT 120)
