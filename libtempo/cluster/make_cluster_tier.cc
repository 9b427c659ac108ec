#include "cluster/make_cluster_tier.h"

#include <cerrno>

#ifdef TEMPO_HAVE_RADOS
#include "cluster/rados_tier.h"
#endif

namespace tempo {

int make_cluster_tier(const ClusterSettings& s, std::unique_ptr<ClusterTier>* out,
                      std::string* error) {
  out->reset();
  if (s.backend == "off") return 0;
#ifdef TEMPO_HAVE_RADOS
  RadosTierOptions o{s.conf, s.client, s.pool, s.prefix, s.op_timeout_s};
  std::unique_ptr<RadosTier> tier;
  std::string why;
  if (const int r = RadosTier::open(o, &tier, &why); r < 0) {
    *error = "cluster.backend = rados (pool '" + s.pool + "'): " + why;
    return r;
  }
  *out = std::move(tier);
  return 0;
#else
  *error = "cluster.backend = " + s.backend +
           ": this libtempo was built without librados (scripts/deps.sh cluster)";
  return -ENOTSUP;
#endif
}

}  // namespace tempo
