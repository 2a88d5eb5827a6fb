# Installing carton as a package: static libraries, public headers, the CLI,
# the noop runner, a CMake package config (find_package(carton)) and a
# pkg-config file. Relocatable: `cmake --install build --prefix DIR`.
include(CMakePackageConfigHelpers)

# carton::carton is what a runner or a program that loads cartons links:
# the runner SDK and the loader, which bring the other modules.
add_library(carton_package INTERFACE)
add_library(carton::carton ALIAS carton_package)
set_target_properties(carton_package PROPERTIES EXPORT_NAME carton)
target_link_libraries(carton_package INTERFACE carton_runner carton_loader)
if(CARTON_SANITIZE)
  # Sanitized static libraries need the sanitizer runtimes where they are linked.
  target_link_options(carton_package INTERFACE -fsanitize=address,undefined)
endif()

set(CARTON_INSTALLED_LIBRARIES carton_common carton_gpu carton_safetensors carton_manifest carton_sign
    carton_net carton_links carton_zip carton_format carton_core carton_oci carton_loader
    carton_runner)
foreach(module common gpu safetensors manifest sign net links zip format oci loader runner)
  set_target_properties(carton_${module} PROPERTIES EXPORT_NAME ${module})
endforeach()
set_target_properties(carton_core PROPERTIES EXPORT_NAME core)

install(TARGETS ${CARTON_INSTALLED_LIBRARIES} carton_package EXPORT cartonTargets
        ARCHIVE DESTINATION lib LIBRARY DESTINATION lib INCLUDES DESTINATION include)
foreach(dir common gpu safetensors manifest sign net links carton/zip carton/format carton oci loader
            runner)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${dir}/include/ DESTINATION include)
endforeach()
install(EXPORT cartonTargets NAMESPACE carton:: DESTINATION lib/cmake/carton)
# A stripped install (CARTON_INSTALL_STRIP, or --strip) also drops the static
# libraries' debug sections, most of their size.
if(CMAKE_STRIP)
  foreach(lib ${CARTON_INSTALLED_LIBRARIES})
    install(CODE "if(CMAKE_INSTALL_DO_STRIP)
  execute_process(COMMAND \"${CMAKE_STRIP}\" --strip-debug
                  \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/lib/$<TARGET_FILE_NAME:${lib}>\")
endif()")
  endforeach()
endif()

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/cartonConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cartonConfig.cmake INSTALL_DESTINATION lib/cmake/carton)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cartonConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cartonConfig.cmake ${PROJECT_BINARY_DIR}/cartonConfigVersion.cmake
        DESTINATION lib/cmake/carton)
configure_file(${PROJECT_SOURCE_DIR}/cmake/carton.pc.in ${PROJECT_BINARY_DIR}/carton.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/carton.pc DESTINATION lib/pkgconfig)

# The C API (capi/): libcarton_c.so (with its SOVERSION links), its header
# carton/c/carton.h and `pkg-config carton-c`; also installable alone
# (`cmake --install build --component capi`).
install(TARGETS carton_c LIBRARY DESTINATION lib COMPONENT capi)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/capi/include/ DESTINATION include COMPONENT capi)
install(FILES ${PROJECT_BINARY_DIR}/carton-c.pc DESTINATION lib/pkgconfig COMPONENT capi)
