# attack_installer: the release bundle's install.sh and uninstall.sh on a
# scratch root (never /) that holds other software's files (a C library,
# pip's site-packages, /usr/local/bin programs, docs, man pages): --prefix
# /usr, /usr/local and the default /opt/edgemon, upgrades, uninstall with and
# without --purge, system directories and taken names as prefixes. Every file
# of others must survive byte for byte and every file the installer made must
# go. A manifest edited after install to list others' files (each kind of
# entry, true hashes) or writable by others, and an installed directory
# replaced by a link to a copy of it: nothing of others is removed, and
# what is left is named. The bundle is assembled from the source tree with stand-in programs (the
# installer does not run them), so no release build is needed. Needs root
# (skipped otherwise).
add_test(NAME attack_installer
         COMMAND ${EDGEMON_SYSTEM_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/installer_attack.py
                 --source-dir ${PROJECT_SOURCE_DIR})
set_tests_properties(attack_installer PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77 LABELS attack)
