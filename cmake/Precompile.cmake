# orrery_precompile(TARGET [ENGINE] [TESTS])
# Precompiles the library headers most of TARGET's sources include (the standard containers, fmt, nlohmann/json;
# with ENGINE Boost.Graph's CSR graph, which sim/engine/workload_graph.h includes; with TESTS Catch2), so each
# source parses them from one precompiled header instead of again: they are most of a source's compile time
# (nlohmann/json.hpp alone takes 1.4 s, Boost's CSR graph 1.2 s, catch.hpp 0.9 s on this project's 2-core machine).
# Only third-party and standard headers go in, so an edit to the project's own headers rebuilds what it did before.
# ORRERY_PCH=OFF builds without, which also checks that every source includes what it uses.
function(orrery_precompile target)
  if(NOT ORRERY_PCH)
    return()
  endif()
  cmake_parse_arguments(PARSE_ARGV 1 arg "ENGINE;TESTS" "" "")
  set(headers <algorithm> <array> <cstdint> <functional> <map> <memory> <optional> <string> <unordered_map>
              <variant> <vector> <fmt/format.h> <nlohmann/json.hpp>)
  if(arg_ENGINE)
    list(APPEND headers <boost/graph/compressed_sparse_row_graph.hpp>)
  endif()
  if(arg_TESTS)
    list(APPEND headers <catch2/catch.hpp>)
  endif()
  target_precompile_headers(${target} PRIVATE ${headers})
endfunction()
