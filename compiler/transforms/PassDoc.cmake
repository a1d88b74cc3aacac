# Writes the pass reference (docs/passes.md) from Passes.td: a header line,
# then `mlir-tblgen -gen-pass-doc`. Run by the update-pass-docs target and by
# the pass-docs-up-to-date test (see CMakeLists.txt next to this file):
#
#   cmake -DTBLGEN=mlir-tblgen -DMLIR_INCLUDE=DIR -DTD=Passes.td -DOUT=FILE
#         [-DCHECKED_IN=docs/passes.md] -P PassDoc.cmake
#
# With CHECKED_IN, OUT is compared with it and the script fails when they
# differ, naming the fix.
foreach(var TBLGEN MLIR_INCLUDE TD OUT)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "PassDoc.cmake: -D${var}=... is required")
  endif()
endforeach()

execute_process(
  COMMAND ${TBLGEN} -gen-pass-doc -I ${MLIR_INCLUDE} ${TD}
  OUTPUT_VARIABLE body
  ERROR_VARIABLE errors
  RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${TBLGEN} -gen-pass-doc ${TD} failed (${status}):\n${errors}")
endif()

set(header "Generated from compiler/transforms/Passes.td by `ninja update-pass-docs`; do not edit.")
file(WRITE ${OUT} "${header}\n\n${body}")

if(DEFINED CHECKED_IN)
  execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${CHECKED_IN} ${OUT}
                  RESULT_VARIABLE differs)
  if(NOT differs EQUAL 0)
    find_program(DIFF diff)
    if(DIFF)
      execute_process(COMMAND ${DIFF} -u ${CHECKED_IN} ${OUT})
    endif()
    message(FATAL_ERROR
      "${CHECKED_IN} is out of date with compiler/transforms/Passes.td "
      "(regenerated: ${OUT}). Fix: ninja -C build update-pass-docs")
  endif()
endif()
