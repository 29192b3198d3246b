# Tests of the metrics area (included from tests/CMakeLists.txt).
