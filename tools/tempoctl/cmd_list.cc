// tempoctl list: what this host offers TempoKV, each source through its own library.
#include <cxl/libcxl.h>
#include <daxctl/libdaxctl.h>
#include <fcntl.h>
#include <glob.h>
#include <linux/tempo.h>
#include <ndctl/libndctl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "cli.h"
#include "config/config_file.h"
#include "store/object_store.h"

namespace tempo::ctl {
namespace {

const char* str_or(const char* s) { return s ? s : ""; }

void list_cxl(json& out, std::vector<std::string>& errors) {
  cxl_ctx* ctx = nullptr;
  if (const int r = cxl_new(&ctx); r != 0) {
    errors.push_back(std::string("libcxl: ") + std::strerror(-r));
    return;
  }
  cxl_memdev* memdev;
  cxl_memdev_foreach(ctx, memdev) {
    out["cxl_memdevs"].push_back({{"memdev", str_or(cxl_memdev_get_devname(memdev))},
                                  {"host", str_or(cxl_memdev_get_host(memdev))},
                                  {"ram_size", cxl_memdev_get_ram_size(memdev)},
                                  {"pmem_size", cxl_memdev_get_pmem_size(memdev)},
                                  {"serial", cxl_memdev_get_serial(memdev)}});
  }
  // Regions hang off the root decoders of each bus's port.
  cxl_bus* bus;
  cxl_bus_foreach(ctx, bus) {
    cxl_port* port = cxl_bus_get_port(bus);
    cxl_decoder* decoder;
    cxl_decoder_foreach(port, decoder) {
      cxl_region* region;
      cxl_region_foreach(decoder, region) {
        out["cxl_regions"].push_back({{"region", str_or(cxl_region_get_devname(region))},
                                      {"bus", str_or(cxl_bus_get_devname(bus))},
                                      {"size", cxl_region_get_size(region)},
                                      {"resource", cxl_region_get_resource(region)},
                                      {"enabled", cxl_region_is_enabled(region) == 1}});
      }
    }
  }
  cxl_unref(ctx);
}

const char* ns_mode(ndctl_namespace_mode m) {
  switch (m) {
    case NDCTL_NS_MODE_FSDAX:
      return "fsdax";
    case NDCTL_NS_MODE_SECTOR:
      return "sector";
    case NDCTL_NS_MODE_RAW:
      return "raw";
    case NDCTL_NS_MODE_DEVDAX:
      return "devdax";
    default:
      return "unknown";
  }
}

void list_ndctl(json& out, std::vector<std::string>& errors) {
  ndctl_ctx* ctx = nullptr;
  if (const int r = ndctl_new(&ctx); r != 0) {
    errors.push_back(std::string("libndctl: ") + std::strerror(-r));
    return;
  }
  ndctl_bus* bus;
  ndctl_bus_foreach(ctx, bus) {
    ndctl_region* region;
    ndctl_region_foreach(bus, region) {
      ndctl_namespace* ns;
      ndctl_namespace_foreach(region, ns) {
        if (ndctl_namespace_get_size(ns) == 0) continue;  // the idle seed namespace
        out["namespaces"].push_back({{"namespace", str_or(ndctl_namespace_get_devname(ns))},
                                     {"region", str_or(ndctl_region_get_devname(region))},
                                     {"provider", str_or(ndctl_bus_get_provider(bus))},
                                     {"mode", ns_mode(ndctl_namespace_get_mode(ns))},
                                     {"size", ndctl_namespace_get_size(ns)},
                                     {"blockdev", str_or(ndctl_namespace_get_block_device(ns))},
                                     {"enabled", ndctl_namespace_is_enabled(ns) == 1}});
      }
    }
  }
  ndctl_unref(ctx);
}

void list_dax(json& out, std::vector<std::string>& errors) {
  daxctl_ctx* ctx = nullptr;
  if (const int r = daxctl_new(&ctx); r != 0) {
    errors.push_back(std::string("libdaxctl: ") + std::strerror(-r));
    return;
  }
  daxctl_region* region;
  daxctl_region_foreach(ctx, region) {
    daxctl_dev* dev;
    daxctl_dev_foreach(region, dev) {
      out["dax_devices"].push_back({{"chardev", str_or(daxctl_dev_get_devname(dev))},
                                    {"region", daxctl_region_get_id(region)},
                                    {"size", daxctl_dev_get_size(dev)},
                                    {"enabled", daxctl_dev_is_enabled(dev) == 1}});
    }
  }
  daxctl_unref(ctx);
}

void list_tempo(json& out) {
  glob_t g{};
  if (glob("/dev/tempo[0-9]*", 0, nullptr, &g) != 0) {
    globfree(&g);
    return;
  }
  for (size_t i = 0; i < g.gl_pathc; ++i) {
    json d = {{"path", g.gl_pathv[i]}};
    const int fd = open(g.gl_pathv[i], O_RDONLY | O_CLOEXEC);
    tempo_info info{};
    if (fd < 0 || ioctl(fd, TEMPO_IOC_GET_INFO, &info) != 0) {
      d["error"] = std::strerror(errno);
    } else {
      d["size"] = info.size;
      d["fast_bytes"] = info.fast_bytes;
      d["extent_bytes"] = info.extent_bytes;
      d["pin_limit_bytes"] = info.pin_limit_bytes;
      d["fast_kind"] = info.fast_kind == TEMPO_FAST_DAX ? "dax" : "pages";
    }
    if (fd >= 0) close(fd);
    out["tempo_devices"].push_back(d);
  }
  globfree(&g);
}

json describe_store(const std::string& dir) {
  json s = {{"path", dir}};
  if (!std::filesystem::exists(dir + "/catalog")) {
    s["error"] = "no object store here (no catalog)";
    return s;
  }
  ObjectStoreOptions o;
  o.dir = dir;
  o.read_only = true;
  std::unique_ptr<ObjectStore> store;
  if (const int r = ObjectStore::open(o, &store); r != 0) {
    s["error"] = std::strerror(-r);
    return s;
  }
  uint64_t bytes = 0;
  for (const ObjectInfo& i : store->list()) bytes += i.size;
  s["objects"] = store->size();
  s["bytes"] = bytes;
  s["quarantined"] = store->quarantined().size();
  s["catalog_bytes"] = store->catalog_bytes();
  return s;
}

}  // namespace

int cmd_list(const Args& args) {
  json out = {{"cxl_memdevs", json::array()},   {"cxl_regions", json::array()},
              {"namespaces", json::array()},    {"dax_devices", json::array()},
              {"tempo_devices", json::array()}, {"stores", json::array()}};
  std::vector<std::string> errors;
  list_cxl(out, errors);
  list_ndctl(out, errors);
  list_dax(out, errors);
  list_tempo(out);
  std::vector<std::string> stores = args.all("store");
  if (args.has("config")) {
    Settings s;
    std::string err;
    if (load_config_file(s, args.get("config"), &err) != 0) return fail("list", err);
    if (!s.uring.store_path.empty()) stores.push_back(s.uring.store_path);
  }
  for (const std::string& dir : stores) out["stores"].push_back(describe_store(dir));
  if (!errors.empty()) out["errors"] = errors;
  if (args.has("json")) {
    print_json(out);
    return 0;
  }
  auto section = [&](const char* key, const char* title, auto&& line) {
    const json& items = out[key];
    std::printf("%s: %zu found\n", title, items.size());
    for (const json& i : items) std::printf("  %s\n", line(i).c_str());
  };
  section("cxl_memdevs", "CXL memory devices (libcxl)", [](const json& i) {
    return i["memdev"].get<std::string>() + "  ram " + human_bytes(i["ram_size"].get<double>()) +
           "  pmem " + human_bytes(i["pmem_size"].get<double>()) + "  host " +
           i["host"].get<std::string>();
  });
  section("cxl_regions", "CXL regions (libcxl)", [](const json& i) {
    return i["region"].get<std::string>() + "  " + human_bytes(i["size"].get<double>()) +
           (i["enabled"].get<bool>() ? "  enabled" : "  disabled");
  });
  section("namespaces", "persistent-memory namespaces (libndctl)", [](const json& i) {
    return i["namespace"].get<std::string>() + "  " + i["mode"].get<std::string>() + "  " +
           human_bytes(i["size"].get<double>());
  });
  section("dax_devices", "DAX devices (libdaxctl)", [](const json& i) {
    return "/dev/" + i["chardev"].get<std::string>() + "  " + human_bytes(i["size"].get<double>());
  });
  section("tempo_devices", "tempo.ko devices (/dev/tempo*)", [](const json& i) {
    if (i.contains("error"))
      return i["path"].get<std::string>() + "  " + i["error"].get<std::string>();
    return i["path"].get<std::string>() + "  " + human_bytes(i["size"].get<double>()) + "  fast " +
           human_bytes(i["fast_bytes"].get<double>()) + " (" + i["fast_kind"].get<std::string>() +
           ")";
  });
  section("stores", "object stores", [](const json& i) {
    if (i.contains("error"))
      return i["path"].get<std::string>() + "  " + i["error"].get<std::string>();
    return i["path"].get<std::string>() + "  " + std::to_string(i["objects"].get<uint64_t>()) +
           " objects  " + human_bytes(i["bytes"].get<double>()) + "  " +
           std::to_string(i["quarantined"].get<uint64_t>()) + " quarantined";
  });
  for (const std::string& e : errors) std::printf("warning: %s\n", e.c_str());
  return 0;
}

}  // namespace tempo::ctl
