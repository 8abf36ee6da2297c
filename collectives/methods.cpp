#include "collectives/methods.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace gradsync {

// Each entry is defined in its method's file; this table is the only list of them.
#define GRADSYNC_ALLREDUCE_METHOD(id) extern const AllreduceMethod id##_allreduce_method;
#include "collectives/methods.def"
#undef GRADSYNC_ALLREDUCE_METHOD

namespace {

constexpr const AllreduceMethod* kTable[] = {
#define GRADSYNC_ALLREDUCE_METHOD(id) &id##_allreduce_method,
#include "collectives/methods.def"
#undef GRADSYNC_ALLREDUCE_METHOD
};

// The entries themselves, in order, for callers that take a span of them.
const std::vector<AllreduceMethod>& entries() {
  static const std::vector<AllreduceMethod> all = [] {
    std::vector<AllreduceMethod> v;
    for (const AllreduceMethod* m : kTable) v.push_back(*m);
    return v;
  }();
  return all;
}

}  // namespace

std::span<const AllreduceMethod> allreduce_method_table() { return entries(); }

const AllreduceMethod* find_allreduce_method(std::string_view name) {
  for (const AllreduceMethod& m : entries())
    if (m.name == name) return &m;
  return nullptr;
}

std::string allreduce_method_names(bool (*keep)(const AllreduceMethod&), std::string_view separator) {
  std::string names;
  for (const AllreduceMethod& m : entries())
    if (keep(m)) names += fmt::format("{}{}", names.empty() ? "" : separator, m.name);
  return names;
}

std::string allreduce_method_listing() {
  std::string out;
  for (const AllreduceMethod& m : entries()) {
    const char* servers = m.servers == ServerRanks::none  ? "servers=none"
                          : m.servers == ServerRanks::one ? "servers=1"
                                                          : "servers=k";
    out += fmt::format("{}\t{} {} {}{}{}{}{}\t{}\t{}\n", m.name, m.exact ? "exact" : "rounded",
                       m.float32_only ? "float32" : "any-type", servers, m.chunked ? " chunked" : "",
                       m.segmented ? " segmented" : "", m.two_level ? " two-level" : "", m.modelled() ? " modelled" : "",
                       m.summary, describe_method_options(m.options));
  }
  return out;
}

const std::vector<std::string>& allreduce_methods() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const AllreduceMethod& m : entries()) v.emplace_back(m.name);
    return v;
  }();
  return names;
}

std::unique_ptr<Allreduce> make_allreduce(std::string_view method, const Comm& comm, const AllreduceOptions& options) {
  auto [name, own] = parse_method_spec(method);
  const AllreduceMethod* m = find_allreduce_method(name);
  if (!m)
    throw std::invalid_argument(fmt::format("unknown allreduce method '{}' (choose from {})", name,
                                            allreduce_method_names([](const AllreduceMethod&) { return true; })));
  if (own.empty()) return m->make(comm, options);
  AllreduceOptions with = options;
  for (const auto& [key, value] : own.items()) with.own.set(key, value);  // the text's values win
  return m->make(comm, with);
}

}  // namespace gradsync
