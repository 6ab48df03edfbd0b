# cmake/wgmma_guard.sh against ptxas itself: the guard must pass a compile whose wgmmas stay
# pipelined and fail the two whose wgmmas ptxas serializes, keeping the compiler's own messages.
# Run by ctest as build.wgmma_guard with -DGUARD, -DNVCC, -DSOURCE and -DWORK_DIR.
file(MAKE_DIRECTORY ${WORK_DIR})

function(compile_through_guard define expect_failure)
  execute_process(
    COMMAND ${GUARD} ${NVCC} ${define} -gencode arch=compute_90a,code=sm_90a -c ${SOURCE}
            -o ${WORK_DIR}/wgmma_pipeline.o
    RESULT_VARIABLE result ERROR_VARIABLE errors)
  if(expect_failure)
    if(result EQUAL 0)
      message(FATAL_ERROR "the guard passed a compile with serialized wgmmas (${define}):\n${errors}")
    endif()
    if(NOT errors MATCHES "wgmma_guard: ptxas serialized wgmmas"
       OR NOT errors MATCHES "wgmma.mma_async instructions are serialized")
      message(FATAL_ERROR "the guard failed ${define} without saying why:\n${errors}")
    endif()
  elseif(NOT result EQUAL 0)
    message(FATAL_ERROR "the guard failed a pipelined compile (rc ${result}):\n${errors}")
  endif()
  message(STATUS "${define}: rc ${result} as expected")
endfunction()

compile_through_guard("-DPIPELINED" FALSE)
compile_through_guard("-DREAD_ACCUMULATOR" TRUE)
compile_through_guard("-DWRITE_ACCUMULATOR" TRUE)
