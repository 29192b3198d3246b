# Tests of the tui area (included from tests/CMakeLists.txt).
