# deps_scripts: scripts/quickstart.sh installs the build list only,
# scripts/test.sh the whole list, and scripts/install-deps.sh starts and
# enables no service (a scratch root and stand-ins for apt-get and dpkg-query:
# nothing is installed; deps_test.py).
add_test(NAME deps_scripts
         COMMAND ${EDGEMON_SYSTEM_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/deps_test.py
                 --source-dir ${PROJECT_SOURCE_DIR})
set_tests_properties(deps_scripts PROPERTIES TIMEOUT 120)

# nonroot_quickstart: the README's path without root, as a user created for
# the test (as root; as the caller otherwise): install-deps.sh --build asks
# no sudo where the packages are there, quickstart.sh --no-install runs
# edgemond on a simulated board with the programs already built, and the
# Python packages install into a venv with pip from the tree (nonroot_test.py).
add_test(NAME nonroot_quickstart
         COMMAND ${EDGEMON_SYSTEM_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/nonroot_test.py
                 --source-dir ${PROJECT_SOURCE_DIR} --build-dir ${PROJECT_BINARY_DIR})
set_tests_properties(nonroot_quickstart PROPERTIES TIMEOUT 300)

# floor_bench_dead_process: bench/floor_bench.py fails, naming the process,
# when one it measures has exited, in each of its modes, instead of reading
# its CPU as none, and refuses a --commit-interval-ms out of the daemon's
# range at once (bench_test.py).
if(EDGEMON_BUILD_BENCH)
  add_test(NAME floor_bench_dead_process
           COMMAND ${EDGEMON_SYSTEM_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/bench_test.py
                   --source-dir ${PROJECT_SOURCE_DIR} --build-dir ${PROJECT_BINARY_DIR})
  set_tests_properties(floor_bench_dead_process PROPERTIES TIMEOUT 300)
endif()
