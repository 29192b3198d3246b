# layering: common/ and include/ include nothing from daemon/, client/, tui/
# or proto/; daemon/ nothing from client/ or tui/ (layering.py).
add_test(NAME layering
         COMMAND ${EDGEMON_SYSTEM_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/layering.py
                 --source-dir ${PROJECT_SOURCE_DIR})
set_tests_properties(layering PROPERTIES TIMEOUT 60)
