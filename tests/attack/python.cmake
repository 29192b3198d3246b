# attack_python: nan, inf, huge, negative, tiny and bool numbers through the
# Python packages (edgemon and the jtop shim) against a real edgemond on a
# fixture board: each is edgemon.InvalidArgument naming the argument, raised
# before anything is sent; arguments of the wrong type or value to every
# public function of the edgemon package (a number as an address or token
# file, a bare string as channel keys, bytes as a label, a non-bool flag):
# each edgemon.InvalidArgument naming the argument, never a bare TypeError; jtop(interval=nan) does not make the daemon spin
# (its CPU time over 2 s stays under 0.5 s); jtop.ok() is False once the
# sampling thread died. Needs the assembled packages (client/python).
if(EDGEMON_PYTHON_DIR AND TARGET edgemon_python)
  add_test(NAME attack_python
           COMMAND ${EDGEMON_SYSTEM_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/python_attack.py
                   --edgemond $<TARGET_FILE:edgemond>
                   --python-dir ${EDGEMON_PYTHON_DIR}
                   --fixtures ${CMAKE_CURRENT_LIST_DIR}/../fixtures)
  set_tests_properties(attack_python PROPERTIES TIMEOUT 180 LABELS attack
                       ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")
else()
  edgemon_tests_left_out(attack_python)
endif()
