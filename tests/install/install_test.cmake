# The install test (ctest `install.consumer`): `cmake --install` this build into a fresh prefix,
# check what lands where, then configure, build and run tests/install/consumer against it, once
# through find_package(metrale) and once through pkg-config. Arguments: -DBUILD_DIR, -DSOURCE_DIR,
# -DWORK_DIR, -DLIBDIR (CMAKE_INSTALL_LIBDIR), -DGENERATOR.
set(prefix ${WORK_DIR}/prefix)
file(REMOVE_RECURSE ${WORK_DIR})

function(run_step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message(STATUS "${what}:\n${out}${err}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install test: ${what} failed (exit ${rc})")
  endif()
endfunction()

run_step("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
foreach(installed ${LIBDIR}/libmetrale.so include/metrale/metrale.h bin/metrale
                  ${LIBDIR}/cmake/metrale/metrale-config.cmake
                  ${LIBDIR}/cmake/metrale/metrale-config-version.cmake
                  ${LIBDIR}/pkgconfig/metrale.pc)
  if(NOT EXISTS ${prefix}/${installed})
    message(FATAL_ERROR "install test: ${installed} is missing from the install prefix")
  endif()
endforeach()
if(EXISTS ${prefix}/include/metrale/metrale.hpp)
  message(FATAL_ERROR "install test: metrale.hpp was installed, but the .so exports no C++ API")
endif()

set(ENV{PKG_CONFIG_PATH} ${prefix}/${LIBDIR}/pkgconfig)
run_step("configure the consumer" ${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/install/consumer
         -B ${WORK_DIR}/build -G ${GENERATOR} -DCMAKE_PREFIX_PATH=${prefix})
run_step("build the consumer" ${CMAKE_COMMAND} --build ${WORK_DIR}/build)
set(ENV{LD_LIBRARY_PATH} ${prefix}/${LIBDIR})
run_step("run consumer_cmake" ${WORK_DIR}/build/consumer_cmake)
run_step("run consumer_pkgconfig" ${WORK_DIR}/build/consumer_pkgconfig)
run_step("run the installed CLI" ${prefix}/bin/metrale info)
message(STATUS "install test: passed")
