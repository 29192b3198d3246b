# deps_scripts: scripts/quickstart.sh installs the build list only,
# scripts/test.sh the whole list, and scripts/install-deps.sh starts and
# enables no service (a scratch root and stand-ins for apt-get and dpkg-query:
# nothing is installed; deps_test.py).
add_test(NAME deps_scripts
         COMMAND ${EDGEMON_SYSTEM_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/deps_test.py
                 --source-dir ${PROJECT_SOURCE_DIR})
set_tests_properties(deps_scripts PROPERTIES TIMEOUT 120)
