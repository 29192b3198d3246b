# layering: common/ and include/ include nothing from daemon/, client/, tui/
# or proto/; daemon/ nothing from client/ or tui/; daemon/runtime/ nothing of
# the telemetry pipeline; daemon/control/ nothing of the service, store,
# sampler, summary, push, metrics or web (layering.py).
add_test(NAME layering
         COMMAND ${EDGEMON_SYSTEM_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/layering.py
                 --source-dir ${PROJECT_SOURCE_DIR})
set_tests_properties(layering PROPERTIES TIMEOUT 60)
# control_links: the privileged helper's binary defines no store, summary,
# telemetry-service, push, metrics or web symbol and no SQLite, and needs no
# libsqlite3 (control_links.py, over nm and readelf).
add_test(NAME control_links
         COMMAND ${EDGEMON_SYSTEM_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/control_links.py
                 $<TARGET_FILE:edgemon-control>)
set_tests_properties(control_links PROPERTIES TIMEOUT 60)
