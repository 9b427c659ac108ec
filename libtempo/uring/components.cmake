# The uring device stack: object store (store/), fast tier (fasttier/), staging engine and
# device (uring/) and the wall-clock runtime loop (runtime_loop/). Included from each of
# those folders' CMakeLists.txt; the guard adds the sources to tempo_core once.
include_guard(GLOBAL)

find_package(PkgConfig REQUIRED)
pkg_check_modules(TEMPO_URING_DEPS IMPORTED_TARGET liburing libxxhash numa libdaxctl)
if(NOT TEMPO_URING_DEPS_FOUND)
  message(FATAL_ERROR "the uring device needs liburing, libxxhash, libnuma and libdaxctl: "
                      "run `scripts/deps.sh uring`")
endif()
target_link_libraries(tempo_core PUBLIC PkgConfig::TEMPO_URING_DEPS)

set(_tempo_root ${CMAKE_CURRENT_LIST_DIR}/..)
file(GLOB _tempo_uring_sources CONFIGURE_DEPENDS
     ${_tempo_root}/store/*.cc ${_tempo_root}/fasttier/*.cc ${_tempo_root}/uring/*.cc
     ${_tempo_root}/runtime_loop/*.cc)
target_sources(tempo_core PRIVATE ${_tempo_uring_sources})
