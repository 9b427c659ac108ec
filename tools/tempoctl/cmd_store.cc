// tempoctl store ls | verify | gc: an object store at rest (--store; not while a uring
// instance has it), or the live store of a tempod through the daemon (--daemon).
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "cli.h"
#include "client/daemon_client.h"
#include "store/object_store.h"
#include "store/verify_objects.h"

namespace tempo::ctl {
namespace {

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string errno_name(int err) {
  switch (-err) {
    case EBADMSG:
      return "EBADMSG";
    case EIO:
      return "EIO";
    case ENOENT:
      return "ENOENT";
    default:
      return std::to_string(err);
  }
}

// ls and verify inspect: read-only, so they work on a read-only store and change nothing
// (a torn tail is reported, not cut). gc writes.
int open_store(const Args& args, bool read_only, std::unique_ptr<ObjectStore>* store,
               RecoveryReport* report, std::string* error) {
  const std::string dir = args.get("store");
  if (dir.empty()) {
    *error = "--store=<dir> is needed";
    return -EINVAL;
  }
  if (!std::filesystem::exists(dir + "/catalog")) {
    *error = "'" + dir + "' is not an object store (no catalog)";
    return -ENOENT;
  }
  ObjectStoreOptions o;
  o.dir = dir;
  o.data_path = args.get("data");
  o.read_only = read_only;
  if (const int r = ObjectStore::open(o, store, report); r != 0) {
    *error = "cannot open '" + dir + "': " + std::strerror(-r);
    for (const std::string& e : report->errors) *error += "\n  " + e;
    return r;
  }
  return 0;
}

int print_ls(const Args& args, std::vector<ObjectInfo> objs,
             const std::vector<QuarantinedObject>& quarantined) {
  std::sort(objs.begin(), objs.end(), [](auto& a, auto& b) { return a.key < b.key; });
  if (args.has("json")) {
    json out = json::array();
    for (const ObjectInfo& i : objs)
      out.push_back({{"key", i.key},
                     {"size", i.size},
                     {"offset", i.offset},
                     {"checksum", hex(i.checksum)},
                     {"seq", i.seq}});
    for (const QuarantinedObject& q : quarantined)
      out.push_back({{"key", q.key}, {"quarantined", errno_name(q.error)}, {"reason", q.reason}});
    print_json(out);
    return 0;
  }
  std::printf("%-18s %12s %14s %-16s\n", "KEY", "SIZE", "OFFSET", "CHECKSUM");
  uint64_t bytes = 0;
  for (const ObjectInfo& i : objs) {
    std::printf("%-18s %12llu %14llu %-16s\n", hex(i.key).c_str(),
                static_cast<unsigned long long>(i.size), static_cast<unsigned long long>(i.offset),
                hex(i.checksum).c_str());
    bytes += i.size;
  }
  for (const QuarantinedObject& q : quarantined)
    std::printf("%-18s quarantined (%s): %s\n", hex(q.key).c_str(), errno_name(q.error).c_str(),
                q.reason.c_str());
  std::printf("%zu objects, %s, %zu quarantined\n", objs.size(), human_bytes(double(bytes)).c_str(),
              quarantined.size());
  return 0;
}

int print_verify(const Args& args, uint64_t ok, uint64_t bytes, const json& bad,
                 const std::vector<std::string>& catalog_errors) {
  if (args.has("json")) {
    print_json({{"store", args.has("daemon") ? args.get("daemon") : args.get("store")},
                {"verified", ok},
                {"verified_bytes", bytes},
                {"bad", bad},
                {"catalog_errors", catalog_errors}});
  } else {
    for (const json& b : bad)
      std::printf("BAD %s %s: %s\n", hex(b["key"].get<uint64_t>()).c_str(),
                  b["error"].get<std::string>().c_str(), b["reason"].get<std::string>().c_str());
    for (const std::string& e : catalog_errors) std::printf("catalog: %s\n", e.c_str());
    std::printf("%llu objects verified (%s), %zu bad%s\n", static_cast<unsigned long long>(ok),
                human_bytes(double(bytes)).c_str(), bad.size(),
                catalog_errors.empty()
                    ? ""
                    : (", " + std::to_string(catalog_errors.size()) + " catalog errors").c_str());
  }
  return bad.empty() && catalog_errors.empty() ? 0 : 1;
}

int print_gc(const Args& args, uint64_t removed, uint64_t before, uint64_t after,
             uint64_t objects) {
  if (args.has("json")) {
    print_json({{"store", args.has("daemon") ? args.get("daemon") : args.get("store")},
                {"removed_quarantined", removed},
                {"catalog_bytes_before", before},
                {"catalog_bytes_after", after},
                {"objects", objects}});
  } else {
    std::printf("removed %llu quarantined objects; catalog %s -> %s; %llu objects\n",
                static_cast<unsigned long long>(removed), human_bytes(double(before)).c_str(),
                human_bytes(double(after)).c_str(), static_cast<unsigned long long>(objects));
  }
  return 0;
}

int store_verify(const Args& args, ObjectStore& store, const RecoveryReport& report) {
  const StoreVerification v = verify_objects(store);
  json bad = json::array();
  for (const BadObject& b : v.bad)
    bad.push_back({{"key", b.key}, {"error", errno_name(b.error)}, {"reason", b.reason}});
  return print_verify(args, v.verified, v.verified_bytes, bad, report.errors);
}

// Reads every object (a bad checksum quarantines it), so damage found by nobody yet counts.
void read_all(ObjectStore& store) {
  for (const ObjectInfo& i : store.list()) {
    std::vector<std::byte> buf(i.size);
    store.get(i.key, buf);
  }
}

int store_gc(const Args& args, ObjectStore& store) {
  const uint64_t before = store.catalog_bytes();
  read_all(store);
  uint64_t removed = 0;
  for (const QuarantinedObject& q : store.quarantined())
    if (store.remove(q.key) == 0) ++removed;
  if (const int r = store.compact(); r != 0)
    return fail("store gc", std::string("compacting the catalog: ") + std::strerror(-r));
  return print_gc(args, removed, before, store.catalog_bytes(), store.size());
}

// The same actions on a tempod's live store, run by the daemon itself (its put thread, in
// turn with the engines' puts): nothing touches the store behind its owner's back.
int daemon_store(const Args& args, const std::string& action) {
  const std::string cmd = "store " + action;
  std::unique_ptr<DaemonClient> client;
  std::string error;
  if (DaemonClient::connect(args.get("daemon"), "tempoctl", &client, &error) != 0)
    return fail(cmd.c_str(), error);
  auto failed = [&](int r) {
    return fail(cmd.c_str(), std::string("tempod: ") + std::strerror(-r));
  };
  auto reason = [](const tempod_store_object& o) {
    return std::string(o.reason, strnlen(o.reason, sizeof(o.reason)));
  };
  if (action == "ls") {
    std::vector<tempod_store_object> objs, quarantined;
    if (const int r = client->store_list(false, &objs); r != 0) return failed(r);
    if (const int r = client->store_list(true, &quarantined); r != 0) return failed(r);
    std::vector<ObjectInfo> infos;
    for (const tempod_store_object& o : objs)
      infos.push_back(ObjectInfo{o.key, o.offset, o.size, o.checksum, o.seq});
    std::vector<QuarantinedObject> q;
    for (const tempod_store_object& o : quarantined) q.push_back({o.key, o.error, reason(o)});
    return print_ls(args, std::move(infos), q);
  }
  if (action == "verify") {
    tempod_store_verified v{};
    std::vector<tempod_store_object> bad;
    if (const int r = client->store_verify(&v, &bad); r != 0) return failed(r);
    json list = json::array();
    for (const tempod_store_object& o : bad)
      list.push_back({{"key", o.key}, {"error", errno_name(o.error)}, {"reason", reason(o)}});
    std::vector<std::string> catalog;
    if (v.catalog_errors)
      catalog.push_back(std::to_string(v.catalog_errors) +
                        " problems found when tempod opened the store (its log names them)");
    if (v.bad > v.listed)
      catalog.push_back(std::to_string(v.bad - v.listed) + " more bad objects not listed");
    return print_verify(args, v.verified, v.verified_bytes, list, catalog);
  }
  tempod_store_gc_reply g{};
  if (const int r = client->store_gc(&g); r != 0) return failed(r);
  return print_gc(args, g.removed, g.catalog_bytes_before, g.catalog_bytes_after, g.objects);
}

}  // namespace

int cmd_store(const Args& args) {
  if (args.positional.size() != 1) return fail("store", "one action is needed: ls, verify or gc");
  const std::string action = args.positional[0];
  if (action != "ls" && action != "verify" && action != "gc")
    return fail("store", "unknown action '" + action + "': accepted ls, verify, gc");
  if (args.has("daemon") && args.has("store"))
    return fail("store", "give one of --store=<dir> and --daemon=<path>");
  if (args.has("daemon")) return daemon_store(args, action);
  std::unique_ptr<ObjectStore> store;
  RecoveryReport report;
  std::string error;
  if (open_store(args, action != "gc", &store, &report, &error) != 0) return fail("store", error);
  if (action == "ls") return print_ls(args, store->list(), store->quarantined());
  if (action == "verify") return store_verify(args, *store, report);
  return store_gc(args, *store);
}

}  // namespace tempo::ctl
