# Tests of the cli area (included from tests/CMakeLists.txt).
