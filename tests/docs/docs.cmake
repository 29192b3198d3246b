# The documentation's examples (included from tests/CMakeLists.txt inside
# if(EDGEMON_BUILD_TESTS)): every fenced block of README.md and docs/*.md
# carries a marker (docs/testing.md); docs_snippets.py runs the runnable ones
# against edgemond on simulated boards with the built programs on PATH and the
# Python packages on PYTHONPATH, compares the output samples' shape, and
# checks that every docs page is linked and README.md stays short.
edgemon_test_tool(EDGEMON_DOCS_TMUX tmux)
edgemon_test_tool(EDGEMON_DOCS_CURL curl)
if(EDGEMON_PYTHON_DIR AND TARGET edgemon_python AND EDGEMON_DOCS_TMUX AND EDGEMON_DOCS_CURL)
  add_test(NAME docs_snippets
           COMMAND ${EDGEMON_SYSTEM_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/docs_snippets.py
                   --source ${PROJECT_SOURCE_DIR}
                   --edgemon $<TARGET_FILE:edgemon> --edgemond $<TARGET_FILE:edgemond>
                   --edgetop $<TARGET_FILE:edgetop> --sim $<TARGET_FILE:edgemon-sim>
                   --probe $<TARGET_FILE:edgemon-probe>
                   --python-dir ${EDGEMON_PYTHON_DIR}
                   --fixtures ${CMAKE_CURRENT_LIST_DIR}/../fixtures
                   --tmux ${EDGEMON_DOCS_TMUX})
  set_tests_properties(docs_snippets PROPERTIES TIMEOUT 600
                       ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")
else()
  edgemon_tests_left_out(docs_snippets)
endif()

# The man pages (packaging/man/) against the programs' --help (every option,
# every edgemon subcommand's options, both ways), the configuration keys of
# daemon/runtime/config.cc (edgemond(8), packaging/edgemond.toml, docs/daemon.md and
# docs/control.md), the exit status constants and the install list.
add_test(NAME man_pages
         COMMAND ${EDGEMON_SYSTEM_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/man_pages.py
                 --source ${PROJECT_SOURCE_DIR}
                 --edgemond $<TARGET_FILE:edgemond> --edgemon $<TARGET_FILE:edgemon>
                 --edgetop $<TARGET_FILE:edgetop> --sim $<TARGET_FILE:edgemon-sim>
                 --control $<TARGET_FILE:edgemon-control> --probe $<TARGET_FILE:edgemon-probe>)
set_tests_properties(man_pages PROPERTIES TIMEOUT 120 LABELS docs
                     ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")
