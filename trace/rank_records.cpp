#include "trace/rank_records.hpp"

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <unordered_map>

namespace gradsync {
namespace {

template <class T>
void put(std::string& out, const T& value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof value);
}

class Reader {
 public:
  explicit Reader(std::string_view bytes) : bytes_(bytes) {}
  template <class T>
  T get() {
    T value;
    need(sizeof value);
    std::memcpy(&value, bytes_.data() + at_, sizeof value);
    at_ += sizeof value;
    return value;
  }
  std::string_view take(std::size_t n) {
    need(n);
    const std::string_view s = bytes_.substr(at_, n);
    at_ += n;
    return s;
  }
  bool done() const { return at_ == bytes_.size(); }

 private:
  void need(std::size_t n) const {
    if (bytes_.size() - at_ < n) throw std::runtime_error("trace: a rank's records are truncated");
  }
  std::string_view bytes_;
  std::size_t at_ = 0;
};

}  // namespace

std::string encode_records(const std::vector<Span>& spans, const std::vector<CollectiveEntry>& entries) {
  std::unordered_map<const char*, std::uint32_t> index;
  std::vector<const char*> names;
  for (const Span& s : spans)
    if (index.emplace(s.name, static_cast<std::uint32_t>(names.size())).second) names.push_back(s.name);
  std::string out;
  put(out, static_cast<std::uint64_t>(names.size()));
  for (const char* n : names) {
    put(out, static_cast<std::uint64_t>(std::strlen(n)));
    out.append(n);
  }
  put(out, static_cast<std::uint64_t>(spans.size()));
  for (Span s : spans) {
    const std::uint32_t i = index.at(s.name);
    s.name = nullptr;
    put(out, s);
    put(out, i);
  }
  put(out, static_cast<std::uint64_t>(entries.size()));
  for (const CollectiveEntry& e : entries) put(out, e);
  return out;
}

RankRecords decode_records(std::string_view bytes) {
  RankRecords r;
  Reader in(bytes);
  const auto names = in.get<std::uint64_t>();
  for (std::uint64_t i = 0; i < names; ++i) r.names.emplace_back(in.take(in.get<std::uint64_t>()));
  const auto spans = in.get<std::uint64_t>();
  for (std::uint64_t i = 0; i < spans; ++i) {
    Span s = in.get<Span>();
    const auto name = in.get<std::uint32_t>();
    if (name >= r.names.size()) throw std::runtime_error("trace: a span names a string that was not sent");
    s.name = r.names[name].c_str();
    r.spans.push_back(s);
  }
  const auto entries = in.get<std::uint64_t>();
  for (std::uint64_t i = 0; i < entries; ++i) r.entries.push_back(in.get<CollectiveEntry>());
  if (!in.done()) throw std::runtime_error("trace: a rank's records have trailing bytes");
  return r;
}

}  // namespace gradsync
