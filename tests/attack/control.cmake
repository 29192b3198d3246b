# attack_control: edgemon-control, the root helper, attacked through its
# board root and by a second uid (tests/attack/control_attack.py): a pwm1
# symlink out of the root, a FIFO in place of a value file, nobody ending
# root's lease, a 60 KB fan name of escape sequences in the log. Needs root
# and setpriv (skipped otherwise).
add_test(NAME attack_control
         COMMAND ${EDGEMON_SYSTEM_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/control_attack.py
                 --control $<TARGET_FILE:edgemon-control>
                 --edgemon $<TARGET_FILE:edgemon>
                 --edgemond $<TARGET_FILE:edgemond>
                 --sim $<TARGET_FILE:edgemon-sim>
                 --fixtures ${CMAKE_CURRENT_LIST_DIR}/../fixtures)
set_tests_properties(attack_control PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77)
