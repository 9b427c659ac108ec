#include <cstdlib>

#include "surface/claim_surface.h"
#include "surface/daemon_surface.h"
#include "surface/stack_surface.h"

namespace tempo {

int open_claim_surface(const Settings& settings, std::unique_ptr<ClaimSurface>* out,
                       std::string* error) {
  const char* env = std::getenv("TEMPO_DAEMON");
  if (env && *env) return DaemonSurface::open(env, settings.daemon.engine, out, error);
  if (settings.device == "daemon")
    return DaemonSurface::open(settings.daemon.socket, settings.daemon.engine, out, error);
  return StackSurface::open(settings, out, error);
}

}  // namespace tempo
