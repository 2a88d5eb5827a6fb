# The Rust peer (tests/compat/rust_peer): a stand-in for the original Rust
# implementation, built offline with cargo against the crates Debian packages
# in /usr/share/cargo/registry (scripts/install-deps.sh --test installs them).
#
# CARTON_RUST_PEER: AUTO builds it when cargo and the crates are found,
# ON requires them, OFF skips it (and the compat tests).
# Sets CARTON_RUST_PEER_EXE and the target carton_rust_peer when it is built.

set(CARTON_RUST_PEER AUTO CACHE STRING "Build the Rust peer and the compat tests: AUTO, ON or OFF")
set_property(CACHE CARTON_RUST_PEER PROPERTY STRINGS AUTO ON OFF)
set(CARTON_CARGO_REGISTRY /usr/share/cargo/registry CACHE PATH
    "Directory registry holding the crates the Rust peer is built from")
# Where the peer is built; build trees may share one (scripts/test.sh gives
# the normal and the sanitizer build the same, so cargo builds it once).
set(CARTON_RUST_PEER_DIR "" CACHE PATH
    "Where the Rust peer is built (default: <build>/tests/rust_peer)")

function(carton_setup_rust_peer)
  if(CARTON_RUST_PEER STREQUAL "OFF")
    return()
  endif()
  # Debian's cargo and rustc (/usr/bin) before any other on PATH.
  find_program(CARTON_CARGO cargo HINTS /usr/bin)
  set(missing "")
  if(CARTON_CARGO)
    get_filename_component(cargo_dir "${CARTON_CARGO}" DIRECTORY)
    find_program(CARTON_RUSTC rustc PATHS "${cargo_dir}" NO_DEFAULT_PATH)
    if(NOT CARTON_RUSTC)
      list(APPEND missing "rustc beside ${CARTON_CARGO}")
    endif()
  else()
    list(APPEND missing cargo)
  endif()
  # The peer's direct dependencies, at the major versions it asks for.
  foreach(crate zip-0.6 toml-0.5 sha2-0.10 serde-1 serde_derive-1 semver-1 target-lexicon-0.12)
    file(GLOB found "${CARTON_CARGO_REGISTRY}/${crate}.*")
    if(NOT found)
      list(APPEND missing "crate ${crate} in ${CARTON_CARGO_REGISTRY}")
    endif()
  endforeach()
  if(missing)
    list(JOIN missing ", " text)
    if(CARTON_RUST_PEER STREQUAL "ON")
      message(FATAL_ERROR "CARTON_RUST_PEER=ON but missing: ${text} "
                          "(bash scripts/install-deps.sh --test installs them)")
    endif()
    message(STATUS "Rust peer and compat tests: skipped (missing ${text})")
    return()
  endif()
  message(STATUS "Rust peer and compat tests: ${CARTON_CARGO}")

  # The crate is copied into the build tree and built there, so neither
  # Cargo.lock nor target/ ever lands in the source tree.
  set(src "${CMAKE_CURRENT_SOURCE_DIR}/compat/rust_peer")
  set(work "${CMAKE_CURRENT_BINARY_DIR}/rust_peer")
  if(CARTON_RUST_PEER_DIR)
    set(work "${CARTON_RUST_PEER_DIR}")
  endif()
  file(WRITE "${work}/cargo-home/config.toml"
       "[source.crates-io]\nreplace-with = \"debian\"\n"
       "[source.debian]\ndirectory = \"${CARTON_CARGO_REGISTRY}\"\n"
       "[net]\noffline = true\n")
  file(GLOB rs_files CONFIGURE_DEPENDS "${src}/src/*.rs")
  set(exe "${work}/target/release/carton-rust-peer")
  add_custom_command(
    OUTPUT "${exe}"
    COMMAND "${CMAKE_COMMAND}" -E make_directory "${work}/crate/src"
    COMMAND "${CMAKE_COMMAND}" -E copy_if_different "${src}/Cargo.toml" "${work}/crate/"
    COMMAND "${CMAKE_COMMAND}" -E copy_if_different ${rs_files} "${work}/crate/src/"
    COMMAND "${CMAKE_COMMAND}" -E env "CARGO_HOME=${work}/cargo-home"
            "CARGO_TARGET_DIR=${work}/target" "RUSTC=${CARTON_RUSTC}"
            "${CARTON_CARGO}" build --offline --release --quiet
            --manifest-path "${work}/crate/Cargo.toml"
    # cargo leaves an up-to-date binary alone; the stamp keeps the rule quiet.
    COMMAND "${CMAKE_COMMAND}" -E touch "${exe}"
    DEPENDS "${src}/Cargo.toml" ${rs_files}
    COMMENT "Building the Rust peer with ${CARTON_CARGO} (offline, Debian's crates)"
    VERBATIM)
  add_custom_target(carton_rust_peer ALL DEPENDS "${exe}")
  set(CARTON_RUST_PEER_EXE "${exe}" PARENT_SCOPE)
endfunction()

carton_setup_rust_peer()
