# `make install` (cmake --install --component tempokv): libtempo.so with its SONAME and
# versioned symbols, the header, a pkg-config file, a CMake package (find_package(tempokv)),
# tempo.ko's sources with a dkms.conf, tempo.ko's uapi header, the eBPF tools and bpftrace
# scripts and the documentation. Everything here is in the install component "tempokv"
# (tempoctl and the Python package add theirs to it); Documentation/install.md lists it.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(_tempo_pkg ${PROJECT_SOURCE_DIR}/packaging)
set(_tempo_cmakedir ${CMAKE_INSTALL_LIBDIR}/cmake/tempokv)

install(TARGETS tempo EXPORT tempokvTargets COMPONENT tempokv
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${PROJECT_SOURCE_DIR}/libtempo/include/tempo/tempo.h
              ${PROJECT_SOURCE_DIR}/libtempo/include/tempo/tempo_sim.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tempo COMPONENT tempokv)
install(FILES ${PROJECT_SOURCE_DIR}/kmod/include/uapi/linux/tempo.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/linux COMPONENT tempokv)

# pkg-config: the prefix is found relative to the .pc file, so --prefix at install time works.
file(RELATIVE_PATH TEMPO_PC_PREFIX_FROM_PCDIR /p/${CMAKE_INSTALL_LIBDIR}/pkgconfig /p)
string(REGEX REPLACE "/$" "" TEMPO_PC_PREFIX_FROM_PCDIR "${TEMPO_PC_PREFIX_FROM_PCDIR}")
configure_file(${_tempo_pkg}/tempokv.pc.in ${PROJECT_BINARY_DIR}/packaging/tempokv.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/packaging/tempokv.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT tempokv)

install(EXPORT tempokvTargets NAMESPACE tempokv:: DESTINATION ${_tempo_cmakedir}
        COMPONENT tempokv)
configure_package_config_file(${_tempo_pkg}/tempokvConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/packaging/tempokvConfig.cmake
                              INSTALL_DESTINATION ${_tempo_cmakedir})
# A newer minor keeps every older version node of libtempo.map: callers built against 0.1
# run on 0.2, so any version of the same major satisfies a request.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/packaging/tempokvConfigVersion.cmake
                                  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/packaging/tempokvConfig.cmake
              ${PROJECT_BINARY_DIR}/packaging/tempokvConfigVersion.cmake
        DESTINATION ${_tempo_cmakedir} COMPONENT tempokv)

# tempo.ko for DKMS: /usr/src/tempo-<version>/ holds the module sources as kmod/ lays them out.
set(_tempo_dkms src/tempo-${PROJECT_VERSION})
configure_file(${_tempo_pkg}/dkms.conf.in ${PROJECT_BINARY_DIR}/packaging/dkms.conf @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/packaging/dkms.conf DESTINATION ${_tempo_dkms}
        COMPONENT tempokv)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/kmod/ DESTINATION ${_tempo_dkms} COMPONENT tempokv
        FILES_MATCHING PATTERN "*.c" PATTERN "*.h" PATTERN "Kbuild")

install(DIRECTORY ${PROJECT_SOURCE_DIR}/Documentation/ DESTINATION ${CMAKE_INSTALL_DOCDIR}
        COMPONENT tempokv FILES_MATCHING PATTERN "*.md" PATTERN "*.png")
install(DIRECTORY ${PROJECT_SOURCE_DIR}/examples/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples
        COMPONENT tempokv)

# The eBPF tools (`make ebpf` builds them into build-ebpf/ with clang, bpftool and libbpf;
# `make install` builds them when that toolchain is present) and the bpftrace scripts with
# their example outputs. Tools that were not built are skipped (OPTIONAL).
set(TEMPO_EBPF_DIR ${PROJECT_SOURCE_DIR}/build-ebpf CACHE PATH
    "Where `make ebpf` puts tempostat and tempomargin (installed when present)")
install(PROGRAMS ${TEMPO_EBPF_DIR}/tempostat ${TEMPO_EBPF_DIR}/tempomargin
        DESTINATION ${CMAKE_INSTALL_SBINDIR} COMPONENT tempokv OPTIONAL)
file(GLOB _tempo_bt CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/ebpf/bpftrace/*.bt)
file(GLOB _tempo_bt_examples CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/ebpf/bpftrace/*.example.txt)
install(PROGRAMS ${_tempo_bt} DESTINATION ${CMAKE_INSTALL_DATADIR}/tempokv/bpftrace COMPONENT tempokv)
install(FILES ${_tempo_bt_examples} DESTINATION ${CMAKE_INSTALL_DATADIR}/tempokv/bpftrace
        COMPONENT tempokv)
