# attack_query: Query, Summarize and ListWindows with time ranges and steps at
# the ends of int64 (the real `edgemon query --since 1678-01-01 --until
# 2262-01-01 --step 3000d`, and INT64_MIN..INT64_MAX with a 2^62 step over
# raw gRPC) against a real edgemond on a fixture board: each is answered or
# refused with INVALID_ARGUMENT, and the daemon lives on.
if(EDGEMON_GRPC_PYTHON_PLUGIN)
  add_test(NAME attack_query
           COMMAND ${EDGEMON_SYSTEM_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/query_attack.py
                   --edgemond $<TARGET_FILE:edgemond> --edgemon $<TARGET_FILE:edgemon>
                   --protoc $<TARGET_FILE:protobuf::protoc>
                   --plugin ${EDGEMON_GRPC_PYTHON_PLUGIN}
                   --proto-dir ${CMAKE_CURRENT_LIST_DIR}/../../proto
                   --fixtures ${CMAKE_CURRENT_LIST_DIR}/../fixtures)
  set_tests_properties(attack_query PROPERTIES TIMEOUT 180 LABELS attack)
else()
  edgemon_tests_left_out(attack_query)
endif()
