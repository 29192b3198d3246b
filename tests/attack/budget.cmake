# attack_budget: request budgets on a real edgemond at 100 Hz frames with its
# HTTP listener (tests/attack/budget_attack.py): 32 clients of another uid
# looping the heaviest /api/history and Query requests for 15 s while a third
# uid holds 300 feeds (frames stored, RSS, root served throughout; about 45 s),
# and a GET
# whose body is a request, repeated parameters. The sanitizer the build uses
# is passed on: its slower daemon is held to a lower stored-frame floor.
# Needs root (skipped otherwise). It runs alone: the flood takes both cores
# of a small machine for half a minute, and the tests beside it would time
# the flood rather than themselves.
add_test(NAME attack_budget
         COMMAND ${EDGEMON_SYSTEM_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/budget_attack.py
                 --edgemond $<TARGET_FILE:edgemond>
                 --edgemon $<TARGET_FILE:edgemon>
                 --protoc $<TARGET_FILE:protobuf::protoc>
                 --plugin ${EDGEMON_GRPC_PYTHON_PLUGIN}
                 --proto-dir ${CMAKE_CURRENT_LIST_DIR}/../../proto
                 --fixtures ${CMAKE_CURRENT_LIST_DIR}/../fixtures
                 "--sanitizer=${EDGEMON_SANITIZE}")
set_tests_properties(attack_budget PROPERTIES TIMEOUT 240 SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
