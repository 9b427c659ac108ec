# The uring device stack: object store (store/) and staging engine and device (uring/), on
# liburing and libxxhash. Included from each
# of those folders' CMakeLists.txt; the guard adds the sources to tempo_core once. Without
# liburing (cmake/TempoOptionalDeps.cmake) none of it is built and the C ABI refuses
# device=uring with -EOPNOTSUPP.
include_guard(GLOBAL)

if(NOT TEMPO_HAVE_URING)
  return()
endif()
target_link_libraries(tempo_core PRIVATE PkgConfig::TEMPO_HAVE_URING)

set(_tempo_root ${CMAKE_CURRENT_LIST_DIR}/..)
file(GLOB _tempo_uring_sources CONFIGURE_DEPENDS
     ${_tempo_root}/store/*.cc ${_tempo_root}/uring/*.cc)
target_sources(tempo_core PRIVATE ${_tempo_uring_sources})
