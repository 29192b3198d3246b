# attack_daemon: attacks on a real edgemond (tests/attack/daemon_attack.py):
# a second daemon on the same store through a symlink and a hard link; ten
# daemons started at once on one socket; a second daemon on a live socket
# (the first's flight recorder untouched); a clean stop leaving no frames to
# replay; lease theft, lease exhaustion and window squatting by another uid
# (as nobody in group edgemon); and wall-clock steps under libfaketime with
# record and attach right after them; the local feed against a uid outside
# the group, bad requests and floods. Needs root (skipped otherwise).
add_test(NAME attack_daemon
         COMMAND ${EDGEMON_SYSTEM_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/daemon_attack.py
                 --edgemond $<TARGET_FILE:edgemond>
                 --edgemon $<TARGET_FILE:edgemon>
                 --protoc $<TARGET_FILE:protobuf::protoc>
                 --plugin ${EDGEMON_GRPC_PYTHON_PLUGIN}
                 --proto-dir ${CMAKE_CURRENT_LIST_DIR}/../../proto
                 --fixtures ${CMAKE_CURRENT_LIST_DIR}/../fixtures)
set_tests_properties(attack_daemon PROPERTIES TIMEOUT 400 SKIP_RETURN_CODE 77)
