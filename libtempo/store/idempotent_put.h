// Idempotent put for engines that save whatever they computed: the same key with the same
// bytes succeeds again (a re-run, two workers saving one prefix), the same key with other
// bytes is refused, so an object is never silently replaced under a reader.
#pragma once

#include <cstddef>
#include <span>

#include "core/object.h"

namespace tempo {

class ObjectStore;

// Stores `data` as `key` unless the store holds it: 0 when stored now or already held with
// exactly these bytes (compared by size, checksum, then byte for byte), -EEXIST when held
// with other bytes, -EINVAL empty data, else put()'s or get()'s errors (a held object that
// reads back -EBADMSG is reported as such: delete it first).
int put_idempotent(ObjectStore& store, ObjectKey key, std::span<const std::byte> data);

}  // namespace tempo
