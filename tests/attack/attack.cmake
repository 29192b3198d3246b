# The attack suite (included from tests/CMakeLists.txt): each file here
# reproduces one class of attack against the real programs (edgemond,
# edgemon-control, the installer, the Python package) and checks that it
# fails. One include file per area, so each area registers its own tests.
file(GLOB EDGEMON_ATTACK_AREAS CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*.cmake)
list(REMOVE_ITEM EDGEMON_ATTACK_AREAS ${CMAKE_CURRENT_LIST_FILE})
foreach(area IN LISTS EDGEMON_ATTACK_AREAS)
  include(${area})
endforeach()
