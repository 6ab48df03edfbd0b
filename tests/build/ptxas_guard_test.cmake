# cmake/ptxas_guard.sh against ptxas itself: the guard must pass a compile whose wgmmas stay
# pipelined and that spills nothing, and fail the two whose wgmmas ptxas serializes and the one
# whose kernel spills past the budget, keeping the compiler's own messages. Run by ctest as
# build.ptxas_guard with -DGUARD, -DNVCC, -DSOURCE and -DWORK_DIR.
file(MAKE_DIRECTORY ${WORK_DIR})

# `define` selects the kernel's variant (tests/build/ptxas_guard_kernel.cu); `why` is the guard's
# message the failure must carry, `ptxas_says` ptxas's own, or both empty where the compile must
# pass. Compiled as the library's kernels are: sm_90a, ptxas warning of spills.
function(compile_through_guard define why ptxas_says)
  execute_process(
    COMMAND ${GUARD} ${NVCC} ${define} -Xptxas=--warn-on-spills -gencode arch=compute_90a,code=sm_90a
            -c ${SOURCE} -o ${WORK_DIR}/ptxas_guard_kernel.o
    RESULT_VARIABLE result ERROR_VARIABLE errors)
  if(why STREQUAL "")
    if(NOT result EQUAL 0)
      message(FATAL_ERROR "the guard failed a clean compile (${define}, rc ${result}):\n${errors}")
    endif()
  else()
    if(result EQUAL 0)
      message(FATAL_ERROR "the guard passed ${define}:\n${errors}")
    endif()
    if(NOT errors MATCHES "${why}" OR NOT errors MATCHES "${ptxas_says}")
      message(FATAL_ERROR "the guard failed ${define} without saying why:\n${errors}")
    endif()
  endif()
  message(STATUS "${define}: rc ${result} as expected")
endfunction()

set(serialized "ptxas_guard: ptxas serialized wgmmas")
set(wgmma_info "wgmma.mma_async instructions are serialized")
compile_through_guard("-DPIPELINED" "" "")
compile_through_guard("-DREAD_ACCUMULATOR" "${serialized}" "${wgmma_info}")
compile_through_guard("-DWRITE_ACCUMULATOR" "${serialized}" "${wgmma_info}")
compile_through_guard("-DSPILLING" "ptxas_guard: kernels spill more than 128 bytes"
                      "Registers are spilled to local memory in function '_Z8spillingPfPKf'")
