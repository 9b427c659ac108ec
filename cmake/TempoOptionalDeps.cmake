# Optional dependencies of the product. Each one found is linked PRIVATE to tempo_core (a
# consumer of libtempo.so never sees it); a missing one disables what needs it, says so at
# configure time, and the C ABI answers -EOPNOTSUPP for that device:
#   liburing + libxxhash  the uring device and its object store  (TEMPO_HAVE_URING)
#   libnuma               a DRAM fast tier bound to a NUMA node   (TEMPO_HAVE_NUMA)
#   libdaxctl             a Device-DAX fast tier                  (TEMPO_HAVE_DAXCTL)
# TEMPO_WITHOUT builds as if the listed ones were absent (the check in tests/uring does).
include_guard(GLOBAL)
find_package(PkgConfig REQUIRED)

set(TEMPO_WITHOUT "" CACHE STRING "Optional dependencies to build without: liburing;libnuma;libdaxctl")

# tempo_optional_dep(VAR NAME WHAT pkg-config-module...): VAR is ON when every module is
# found and NAME is not in TEMPO_WITHOUT; then PkgConfig::VAR is an imported target.
function(tempo_optional_dep var name what)
  set(found OFF)
  if(NOT name IN_LIST TEMPO_WITHOUT)
    pkg_check_modules(${var} QUIET IMPORTED_TARGET GLOBAL ${ARGN})
    if(${var}_FOUND)
      set(found ON)
    endif()
  endif()
  if(NOT found)
    string(JOIN " " modules ${ARGN})
    message(WARNING "tempokv: building without ${name} (${modules}): ${what} is disabled")
  endif()
  set(${var} ${found} PARENT_SCOPE)
endfunction()

tempo_optional_dep(TEMPO_HAVE_URING liburing "the uring device (device=uring)" liburing libxxhash)
tempo_optional_dep(TEMPO_HAVE_NUMA libnuma "binding the fast tier to a NUMA node (uring.numa_node)" numa)
tempo_optional_dep(TEMPO_HAVE_DAXCTL libdaxctl "the Device-DAX fast tier (uring.fast_tier=dax)" libdaxctl)

# tempo_uring_gated(source...): sources of tempo_core (in the calling folder) that create
# the uring device outside the uring stack; built without liburing, they see
# TEMPO_WITHOUT_URING and refuse device=uring with -EOPNOTSUPP. Only these sources get the
# definition, so every other object is the same in both builds (and ccache reuses it).
function(tempo_uring_gated)
  if(NOT TEMPO_HAVE_URING)
    set_property(SOURCE ${ARGN} TARGET_DIRECTORY tempo_core APPEND PROPERTY COMPILE_DEFINITIONS
                 TEMPO_WITHOUT_URING)
  endif()
endfunction()
