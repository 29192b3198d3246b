# attack_escape: names with escape sequences (ESC, BEL, the C1 CSI, a 10 KB
# name) in a thermal zone, an hwmon chip and label, a RAPL domain and the DMI
# product of a copied fixture board, through a real edgemond and the real
# `edgemon now/sensors/watch/query/tegrastats`, an error echoing a hostile
# pattern and `edgemond --print`: no raw control byte reaches stdout or
# stderr, the escaped form does, and JSON/CSV keep the exact name. Also
# --root on a missing directory and store.max_size at and over 1 TiB.
add_test(NAME attack_escape
         COMMAND ${EDGEMON_SYSTEM_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/escape_attack.py
                 --edgemond $<TARGET_FILE:edgemond> --edgemon $<TARGET_FILE:edgemon>
                 --fixtures ${CMAKE_CURRENT_LIST_DIR}/../fixtures)
set_tests_properties(attack_escape PROPERTIES TIMEOUT 180 LABELS attack)
