#include "trainers/core/sync_registry.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace gradsync {

// Each entry is defined in its family's file; this table is the only list of them.
#define GRADSYNC_SYNC_FAMILY(id) extern const SyncFamilyInfo id##_sync_family;
#include "trainers/core/sync_families.def"
#undef GRADSYNC_SYNC_FAMILY

namespace {

constexpr const SyncFamilyInfo* kFamilies[] = {
#define GRADSYNC_SYNC_FAMILY(id) &id##_sync_family,
#include "trainers/core/sync_families.def"
#undef GRADSYNC_SYNC_FAMILY
};

}  // namespace

std::span<const SyncFamilyInfo* const> sync_family_table() { return kFamilies; }

const SyncFamilyInfo& sync_family(SyncFamily family) { return *kFamilies[static_cast<std::size_t>(family)]; }

std::string_view SyncMethod::name() const { return allreduce ? allreduce->name : sync_family(family).name; }

std::optional<SyncMethod> find_sync_method(std::string_view text) {
  for (const SyncFamilyInfo* f : kFamilies)
    if (!f->name.empty() && f->name == text) return SyncMethod{f->family, nullptr};
  const AllreduceMethod* method = find_allreduce_method(text);
  if (!method || !trains(*method)) return std::nullopt;
  for (const SyncFamilyInfo* f : kFamilies)
    if (f->name.empty()) return SyncMethod{f->family, method};
  return std::nullopt;
}

SyncMethod sync_method(std::string_view text) {
  if (const std::optional<SyncMethod> m = find_sync_method(text)) return *m;
  throw std::invalid_argument(fmt::format("sync_method: '{}' is not a synchronization method", text));
}

std::string sync_family_names(std::string_view separator) {
  std::string names;
  for (const SyncFamilyInfo* f : kFamilies)
    if (!f->name.empty()) names += fmt::format("{}{}", names.empty() ? "" : separator, f->name);
  return names;
}

}  // namespace gradsync
