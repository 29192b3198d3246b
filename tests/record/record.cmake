# Tests of edgemon record/attach/mark (included from tests/CMakeLists.txt).
