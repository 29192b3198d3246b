# grpc_interop: a client that is not ours (Debian's python3-grpcio and
# python3-protobuf, stubs generated at test time with grpc_python_plugin)
# calls every RPC of edgemon.v1.Telemetry, health and reflection against a
# running edgemond on a fixture board. Include from tests/CMakeLists.txt.
# It also links the C++ client library into the unit tests (client_test.cc).
set(EDGEMON_INTEROP_INCLUDED ON)
if(EDGEMON_BUILD_TESTS)
  # Debian's grpcio is installed for the system interpreter only (not pyenv).
  find_program(EDGEMON_SYSTEM_PYTHON3 python3 PATHS /usr/bin NO_DEFAULT_PATH REQUIRED)
  edgemon_test_tool(EDGEMON_GRPC_PYTHON_PLUGIN grpc_python_plugin)
endif()
if(EDGEMON_BUILD_TESTS AND NOT EDGEMON_GRPC_PYTHON_PLUGIN)
  edgemon_tests_left_out("grpc_interop grpc_watchers memory_after_load grpc_tls damaged_store")
elseif(EDGEMON_BUILD_TESTS)
  add_test(NAME grpc_interop
           COMMAND ${EDGEMON_SYSTEM_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/interop_test.py
                   --edgemond $<TARGET_FILE:edgemond>
                   --protoc $<TARGET_FILE:protobuf::protoc>
                   --plugin ${EDGEMON_GRPC_PYTHON_PLUGIN}
                   --proto-dir ${CMAKE_CURRENT_LIST_DIR}/../../proto
                   --fixtures ${CMAKE_CURRENT_LIST_DIR}/../fixtures)
  set_tests_properties(grpc_interop PROPERTIES TIMEOUT 180)
  # 200 concurrent Watch streams, 50 never reading: bounded memory, no missed deadline.
  add_test(NAME grpc_watchers
           COMMAND ${EDGEMON_SYSTEM_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/watchers_test.py
                   --edgemond $<TARGET_FILE:edgemond>
                   --protoc $<TARGET_FILE:protobuf::protoc>
                   --plugin ${EDGEMON_GRPC_PYTHON_PLUGIN}
                   --proto-dir ${CMAKE_CURRENT_LIST_DIR}/../../proto
                   --fixtures ${CMAKE_CURRENT_LIST_DIR}/../fixtures)
  set_tests_properties(grpc_watchers PROPERTIES TIMEOUT 180)
  # Concurrent Queries, then a flood of Watch streams: RSS back within 10 % of idle.
  add_test(NAME memory_after_load
           COMMAND ${EDGEMON_SYSTEM_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/memory_test.py
                   --edgemond $<TARGET_FILE:edgemond>
                   --protoc $<TARGET_FILE:protobuf::protoc>
                   --plugin ${EDGEMON_GRPC_PYTHON_PLUGIN}
                   --proto-dir ${CMAKE_CURRENT_LIST_DIR}/../../proto
                   --fixtures ${CMAKE_CURRENT_LIST_DIR}/../fixtures)
  set_tests_properties(memory_after_load PROPERTIES TIMEOUT 420)
  # TCP: plain text on a non-loopback address is refused; TLS with a cert and key works.
  add_test(NAME grpc_tls
           COMMAND ${EDGEMON_SYSTEM_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/tls_test.py
                   --edgemond $<TARGET_FILE:edgemond> --edgemon $<TARGET_FILE:edgemon>
                   --protoc $<TARGET_FILE:protobuf::protoc>
                   --plugin ${EDGEMON_GRPC_PYTHON_PLUGIN}
                   --proto-dir ${CMAKE_CURRENT_LIST_DIR}/../../proto
                   --fixtures ${CMAKE_CURRENT_LIST_DIR}/../fixtures)
  set_tests_properties(grpc_tls PROPERTIES TIMEOUT 180)
  # A store truncated under the running daemon, and a malformed frame row.
  add_test(NAME damaged_store
           COMMAND ${EDGEMON_SYSTEM_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/damaged_store_test.py
                   --edgemond $<TARGET_FILE:edgemond> --edgemon $<TARGET_FILE:edgemon>
                   --protoc $<TARGET_FILE:protobuf::protoc>
                   --plugin ${EDGEMON_GRPC_PYTHON_PLUGIN}
                   --proto-dir ${CMAKE_CURRENT_LIST_DIR}/../../proto
                   --fixtures ${CMAKE_CURRENT_LIST_DIR}/../fixtures)
  set_tests_properties(damaged_store PROPERTIES TIMEOUT 180)
endif()
if(EDGEMON_BUILD_TESTS)
  # tests/client/*_test.cc (globbed into edgemon_tests) need the client
  # library and a daemon to run; the target name resolves whatever the order
  # of add_subdirectory(client) and add_subdirectory(tests).
  if(TARGET edgemon_tests)
    target_link_libraries(edgemon_tests PRIVATE edgemon_client)
    target_compile_definitions(edgemon_tests PRIVATE EDGEMON_EDGEMOND_PATH="$<TARGET_FILE:edgemond>")
    # A path in a compile definition is no dependency: build the daemon first.
    add_dependencies(edgemon_tests edgemond)
  endif()
endif()
