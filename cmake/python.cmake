# Python for the Python runner, the Python package and the bridge they
# share: CPython's headers and libpython (python3-dev), numpy (python3-numpy)
# and pybind11 (pybind11-dev), all of one interpreter. Sets
# CARTON_PYTHON_FOUND when everything is there; the targets that need Python
# are skipped otherwise.
#
# The interpreter is the one the build, the embedded runner and the tests
# agree on. On Debian, `python3` on PATH may be another installation (a
# version manager's) that does not see Debian's python3-numpy, so Debian's
# /usr/bin/python3 is the default; -DPython3_EXECUTABLE=... chooses another.
set(CARTON_PYTHON_FOUND OFF)
if(NOT DEFINED Python3_EXECUTABLE AND NOT DEFINED PYTHON_EXECUTABLE AND EXISTS /usr/bin/python3)
  set(Python3_EXECUTABLE /usr/bin/python3)
elseif(NOT DEFINED Python3_EXECUTABLE AND DEFINED PYTHON_EXECUTABLE)
  set(Python3_EXECUTABLE "${PYTHON_EXECUTABLE}")
endif()
find_package(Python3 3.8 QUIET COMPONENTS Interpreter Development NumPy)
if(Python3_FOUND)
  # Found after Python3, pybind11 uses that interpreter (its FindPython mode).
  find_package(pybind11 2.10 CONFIG QUIET)
endif()
if(Python3_FOUND AND pybind11_FOUND)
  set(CARTON_PYTHON_FOUND ON)
  message(STATUS "Python ${Python3_VERSION} (${Python3_EXECUTABLE}), numpy ${Python3_NumPy_VERSION}, "
                 "pybind11 ${pybind11_VERSION}: building the Python runner and package")
  # The package's extension module is a shared object that links the
  # static libraries, so every library is compiled as position-independent
  # code (included from the top level: this applies to every module).
  set(CMAKE_POSITION_INDEPENDENT_CODE ON)

  # site-packages relative to the install prefix, as the interpreter names it:
  # Debian's Python reads <prefix>/lib/python3.X/dist-packages for /usr and
  # /usr/local, other builds <prefix>/lib/python3.X/site-packages.
  if(NOT DEFINED CARTON_PYTHON_INSTALL_DIR)
    execute_process(
      COMMAND ${Python3_EXECUTABLE} -c
        "import sysconfig; v = sysconfig.get_python_version(); d = 'dist-packages' if 'deb_system' in sysconfig.get_scheme_names() else 'site-packages'; print(f'lib/python{v}/{d}')"
      OUTPUT_VARIABLE detected_dir OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE detected)
    if(NOT detected EQUAL 0 OR detected_dir STREQUAL "")
      set(detected_dir "lib/python${Python3_VERSION_MAJOR}.${Python3_VERSION_MINOR}/site-packages")
    endif()
    set(CARTON_PYTHON_INSTALL_DIR "${detected_dir}" CACHE STRING
        "Where `cmake --install` puts the carton package, relative to the install prefix")
  endif()
else()
  message(STATUS "Python 3 with numpy and pybind11 not found (python3-dev, python3-numpy, "
                 "pybind11-dev): the Python runner and package are not built")
endif()
