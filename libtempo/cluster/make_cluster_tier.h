// The cluster tier the settings name (`cluster.backend`): none, or RADOS.
#pragma once

#include <memory>
#include <string>

#include "cluster/cluster_tier.h"
#include "config/settings.h"

namespace tempo {

// 0 with *out null (`off`) or the opened tier; or a negative errno with `error` saying why:
// -ENOTSUP when the library was built without the backend, the backend's own error (no
// such pool, no monitor answered within cluster.op_timeout_s...).
int make_cluster_tier(const ClusterSettings& settings, std::unique_ptr<ClusterTier>* out,
                      std::string* error);

}  // namespace tempo
