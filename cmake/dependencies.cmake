# Finds what metrale builds against and decides which backends are compiled in.
#   METRALE_HAS_CUDA     nvcc found (or METRALE_CUDA=ON): src/cuda and the cuBLASLt arm
#   METRALE_HAS_CUTLASS  CUDA + CUTLASS headers from CUTLASS_HOME or the nvidia-cutlass package
find_package(fmt REQUIRED)
find_package(CLI11 REQUIRED)
find_package(nlohmann_json REQUIRED)
find_package(Threads REQUIRED)

set(METRALE_HAS_CUDA OFF)
if(NOT METRALE_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      # wgmma needs the arch-specific target: sm_90a.
      set(CMAKE_CUDA_ARCHITECTURES 90a-real)
    endif()
    if(NOT CMAKE_CUDA_ARCHITECTURES MATCHES "90a")
      # Without sm_90a the wgmma kernels compile to a trap: refuse the build instead.
      message(FATAL_ERROR "CMAKE_CUDA_ARCHITECTURES = '${CMAKE_CUDA_ARCHITECTURES}' has no 90a: "
                          "the CUDA backend's kernels need sm_90a (wgmma); add 90a-real")
    endif()
    # The Hopper kernel families (src/cuda/sm90) have their own list (src/CMakeLists.txt).
    set(METRALE_SM90_ARCHS "90a-real" CACHE STRING
        "CUDA architectures of the sm90 kernel families (wgmma needs 90a)")
    if(NOT METRALE_SM90_ARCHS MATCHES "90a")
      message(FATAL_ERROR "METRALE_SM90_ARCHS = '${METRALE_SM90_ARCHS}' has no 90a: the sm90 "
                          "kernel families need sm_90a (wgmma)")
    endif()
    enable_language(CUDA)
    # CMake 3.25 does not know nvcc's C++20 flag yet: tell it.
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA_STANDARD 20)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    find_package(CUDAToolkit REQUIRED)
    set(METRALE_HAS_CUDA ON)
  elseif(METRALE_CUDA STREQUAL "ON")
    message(FATAL_ERROR "METRALE_CUDA=ON but no CUDA compiler was found")
  endif()
endif()

set(METRALE_HAS_CUTLASS OFF)
if(METRALE_HAS_CUDA AND NOT METRALE_CUTLASS STREQUAL "OFF")
  set(_cutlass_include "")
  if(DEFINED ENV{CUTLASS_HOME})
    set(_cutlass_include "$ENV{CUTLASS_HOME}/include")
  else()
    find_package(Python3 COMPONENTS Interpreter QUIET)
    if(Python3_FOUND)
      execute_process(
        COMMAND ${Python3_EXECUTABLE} -c
                "import cutlass_library, os; print(os.path.join(os.path.dirname(cutlass_library.__file__), 'source', 'include'))"
        OUTPUT_VARIABLE _cutlass_include OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    endif()
  endif()
  if(_cutlass_include AND EXISTS "${_cutlass_include}/cutlass/cutlass.h")
    set(METRALE_HAS_CUTLASS ON)
    set(METRALE_CUTLASS_INCLUDE "${_cutlass_include}")
    get_filename_component(METRALE_CUTLASS_UTIL_INCLUDE "${_cutlass_include}/../tools/util/include" ABSOLUTE)
  elseif(METRALE_CUTLASS STREQUAL "ON")
    message(FATAL_ERROR "METRALE_CUTLASS=ON but no CUTLASS headers (set CUTLASS_HOME or pip install nvidia-cutlass)")
  endif()
endif()

# Warnings for our own code.
set(METRALE_CXX_WARNINGS -Wall -Wextra -Wno-unused-parameter)
if(METRALE_WERROR)
  list(APPEND METRALE_CXX_WARNINGS -Werror)
endif()
