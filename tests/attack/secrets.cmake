# attack_secrets: the files edgemon trusts (tests/attack/secrets_attack.py).
# A token file (daemon.tcp_token_file, daemon.metrics_token_file, a push's
# bearer_token_file, edgemon --token-file) that is a symlink, group-readable
# or owned by another uid: edgemond does not start and edgemon does not
# connect, each with one line naming the file and the rule; the good file
# is served. `edgemon tegrastats --stop` leaves a sleep of the same user
# alive though the pid file names it at its true start time, and refuses a
# FIFO or a link as its pid file at once. Needs root (skipped otherwise).
add_test(NAME attack_secrets
         COMMAND ${EDGEMON_SYSTEM_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/secrets_attack.py
                 --edgemond $<TARGET_FILE:edgemond>
                 --edgemon $<TARGET_FILE:edgemon>
                 --fixtures ${CMAKE_CURRENT_LIST_DIR}/../fixtures)
set_tests_properties(attack_secrets PROPERTIES TIMEOUT 180 SKIP_RETURN_CODE 77 LABELS attack)
