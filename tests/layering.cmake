# Includes point down only: launcher > solvers > io > comm (docs/layout.md). `layering` reads the #include
# lines of comm/, io/ and solvers/ and fails naming file:line for each one that points up a layer;
# `layering.detects_upward_includes` runs the same check on a small tree with four upward includes (one
# relative, one in angle brackets) and passes only when it names each of them and fails.
add_test(NAME layering COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/layering/check_layering.sh ${PROJECT_SOURCE_DIR})
set_tests_properties(layering PROPERTIES LABELS unit TIMEOUT 120)
add_test(NAME layering.detects_upward_includes
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/layering/check_layering.sh ${CMAKE_CURRENT_SOURCE_DIR}/layering/upward)
set_tests_properties(layering.detects_upward_includes PROPERTIES LABELS unit TIMEOUT 120
  PASS_REGULAR_EXPRESSION "comm/bad.hpp:5: includes \"io/input_file.hpp\".*comm/bad.hpp:6: includes \"solvers/solver.hpp\".*io/bad.cpp:3: includes \"launcher/deck/deck.hpp\".*solvers/toy/bad.hpp:3: includes \"../../launcher/x.hpp\".*layering: FAILED: 4 upward include")
