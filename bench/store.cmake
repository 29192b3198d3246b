# store_bench: bytes per frame, CPU per stored frame, downsample read time.
# Included from bench/CMakeLists.txt.
add_executable(store_bench ${CMAKE_CURRENT_LIST_DIR}/store_bench.cc)
target_link_libraries(store_bench PRIVATE edgemon_store benchmark::benchmark)
# The shared AGX Orin-like inventory lives with the test support code.
edgemon_warnings(store_bench)
