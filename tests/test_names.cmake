# Fails if a Catch2 TEST_CASE name in the test sources holds a ';'.
# catch_discover_tests registers each case under its name, and CTest splits
# a name at ';' into list items that match no case: Catch then runs nothing
# and passes, so the case looks green while it never runs.
#   cmake -DDIR=<tests source dir> -P test_names.cmake
file(GLOB_RECURSE sources "${DIR}/*.cc")
set(bad "")
foreach(f ${sources})
  # A line of a TEST_CASE whose quoted name has a ';' before its closing quote.
  file(STRINGS "${f}" hits REGEX "(TEST_CASE|SCENARIO)[ ]*\\([ ]*\"[^\"]*;")
  if(hits)
    file(RELATIVE_PATH rel "${DIR}" "${f}")
    list(APPEND bad "tests/${rel}")
  endif()
endforeach()
if(bad)
  string(REPLACE ";" ", " bad "${bad}")
  message(FATAL_ERROR "a TEST_CASE name holds ';', which CTest splits so the case never runs (rename it): ${bad}")
endif()
list(LENGTH sources n)
message(STATUS "${n} test sources: no TEST_CASE name holds ';'")
