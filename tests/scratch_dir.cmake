# The test run's scratch directory, the TMPDIR of every test (the fixture
# tune_scratch in tests/CMakeLists.txt). Run as
#   cmake -DDIR=<dir> -DMODE=setup|check -P scratch_dir.cmake
# setup: an empty DIR. check: DIR must be empty again after the tests, since
# every test removes what it made, also when it fails; anything left is
# listed, removed, and fails this check.
if(MODE STREQUAL "setup")
  file(REMOVE_RECURSE "${DIR}")
  file(MAKE_DIRECTORY "${DIR}")
elseif(MODE STREQUAL "check")
  file(GLOB left LIST_DIRECTORIES true "${DIR}/*" "${DIR}/.*")
  file(REMOVE_RECURSE "${DIR}")
  if(left)
    list(LENGTH left n)
    string(REPLACE ";" "\n  " names "${left}")
    message(FATAL_ERROR "${n} leftover(s) in the tests' temporary directory ${DIR} "
                        "(a test did not clean up after itself):\n  ${names}")
  endif()
  message(STATUS "no leftovers in ${DIR}")
else()
  message(FATAL_ERROR "scratch_dir.cmake: MODE must be setup or check, not '${MODE}'")
endif()
