# ctest example-fp8-first-last-bf16: what a plugin author does, end to end.
# Installs this build into WORK_DIR/install, configures and builds
# examples/fp8-first-last-bf16 out of tree against that prefix (it knows
# nothing of the build tree), then runs the example's own lit test.
# Run by ctest with -D for every variable below (see test/CMakeLists.txt).
foreach(var GPTC_BUILD_DIR EXAMPLE_DIR WORK_DIR GENERATOR MAKE_PROGRAM
            C_COMPILER CXX_COMPILER)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "build-example-plugin.cmake needs -D${var}=...")
  endif()
endforeach()

# From scratch each time, so a stale install or cache cannot hide a gap in
# the install rules.
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/install)

function(step)
  string(JOIN " " text ${ARGN})
  message(STATUS "example plugin: ${text}")
  execute_process(COMMAND ${ARGN} COMMAND_ERROR_IS_FATAL ANY)
endfunction()

step(${CMAKE_COMMAND} --install ${GPTC_BUILD_DIR} --prefix ${prefix})
step(${CMAKE_COMMAND} -G ${GENERATOR} -S ${EXAMPLE_DIR} -B ${WORK_DIR}/build
     -DCMAKE_BUILD_TYPE=Release
     -DCMAKE_PREFIX_PATH=${prefix}
     -DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}
     -DCMAKE_C_COMPILER=${C_COMPILER}
     -DCMAKE_CXX_COMPILER=${CXX_COMPILER})
step(${CMAKE_COMMAND} --build ${WORK_DIR}/build --parallel 2)
step(${CMAKE_COMMAND} --build ${WORK_DIR}/build --target check)
