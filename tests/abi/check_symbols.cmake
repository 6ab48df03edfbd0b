# The library's symbols (run by ctest as `cmake -P`):
#   1. without CUTLASS, no symbol at all (static or dynamic) demangles to cutlass:: or cute::;
#   2. the dynamic symbol table exports only metrale_* names, and at least the core ones;
#   3. the C99 test (CALLER) imports every exported name, so it calls every exported function.
# Inputs: -DLIB=<libmetrale.so> -DNM=<nm> -DHAS_CUTLASS=<ON|OFF> -DCALLER=<abi_c99 executable>
cmake_minimum_required(VERSION 3.25)
foreach(var LIB NM HAS_CUTLASS CALLER)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check_symbols.cmake: -D${var}=... is required")
  endif()
endforeach()

function(run_nm out)
  execute_process(COMMAND ${NM} ${ARGN} OUTPUT_VARIABLE text RESULT_VARIABLE rc
                  ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${NM} ${ARGN} failed (${rc}): ${err}")
  endif()
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

# Symbol names (third column) of nm output, one list entry each.
function(symbol_names text out)
  string(REPLACE "\n" ";" lines "${text}")
  set(names "")
  foreach(line IN LISTS lines)
    if(line MATCHES "^[0-9a-fA-F ]+ [A-Za-z] ([^ ]+)")
      list(APPEND names "${CMAKE_MATCH_1}")
    endif()
  endforeach()
  set(${out} "${names}" PARENT_SCOPE)
endfunction()

set(failures 0)

# 1. No CUTLASS code in a build without CUTLASS.
if(NOT HAS_CUTLASS)
  run_nm(all -C ${LIB})
  string(REPLACE "\n" ";" lines "${all}")
  foreach(line IN LISTS lines)
    if(line MATCHES "cutlass::|cute::")
      message(SEND_ERROR "CUTLASS symbol in a build without CUTLASS: ${line}")
      math(EXPR failures "${failures} + 1")
    endif()
  endforeach()
endif()

# 2. Only metrale_* is exported.
run_nm(dynamic -D --defined-only ${LIB})
symbol_names("${dynamic}" exported)
foreach(name IN LISTS exported)
  if(NOT name MATCHES "^metrale_")
    message(SEND_ERROR "exported symbol outside the C ABI: ${name}")
    math(EXPR failures "${failures} + 1")
  endif()
endforeach()
foreach(required metrale_last_error metrale_version metrale_cpu_nvfp4_grouped_down
                 metrale_nvfp4_grouped_gate_up_fused metrale_cutlass_nvfp4_grouped_down)
  if(NOT required IN_LIST exported)
    message(SEND_ERROR "${required} is not exported")
    math(EXPR failures "${failures} + 1")
  endif()
endforeach()

# 3. The C99 caller imports every exported function.
run_nm(imports -D --undefined-only ${CALLER})
string(REPLACE "\n" ";" import_lines "${imports}")
set(imported "")
foreach(line IN LISTS import_lines)
  if(line MATCHES "U (metrale_[A-Za-z0-9_]+)")
    list(APPEND imported "${CMAKE_MATCH_1}")
  endif()
endforeach()
foreach(name IN LISTS exported)
  if(name MATCHES "^metrale_" AND NOT name IN_LIST imported)
    message(SEND_ERROR "the C99 test never calls ${name}")
    math(EXPR failures "${failures} + 1")
  endif()
endforeach()

list(LENGTH exported n_exported)
if(failures GREATER 0)
  message(FATAL_ERROR "${failures} symbol check(s) failed")
endif()
message(STATUS "symbols ok: ${n_exported} exported, all metrale_*, all called from C99"
               "; CUTLASS built: ${HAS_CUTLASS}")
