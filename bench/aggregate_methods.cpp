#include "bench/aggregate_methods.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <sstream>
#include <stdexcept>

#include "collectives/allreduce.hpp"
#include "collectives/methods.hpp"
#include "collectives/robust/robust_aggregation.hpp"

namespace gradsync::bench {
namespace {

long summed(long mine, const Comm& comm) {
  std::array<long, 1> total{mine};
  comm.sum_in_place(total);
  return total[0];
}

// Integer-valued inputs, so the sum is exact and any difference is a bug (bench_allreduce's check, without its
// rounded-wire case): rank r's element i is (r + 1) (i % 7 + 1).
class RingMethod final : public AggregateMethod {
 public:
  explicit RingMethod(const Comm& comm) : ring_(make_allreduce("ring", comm)), rank_(comm.rank()), p_(comm.size()) {}
  const std::string& label() const override { return label_; }
  void fill(std::span<float> data) const override {
    for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>((rank_ + 1) * static_cast<int>(i % 7 + 1));
  }
  void run(std::span<float> data) override { ring_->run(data); }
  long count_wrong(std::span<float> data) override {
    fill(data);
    run(data);
    long wrong = 0;
    for (std::size_t i = 0; i < data.size(); ++i)
      wrong += data[i] != static_cast<float>(static_cast<long>(i % 7 + 1) * p_ * (p_ + 1) / 2);
    return summed(wrong, ring_->comm());
  }

 private:
  std::string label_ = "ring";
  std::unique_ptr<Allreduce> ring_;
  int rank_, p_;
};

// One period of a rank's input: honest ranks hold a shared pattern plus a tenth of their own noise, the last
// `byzantine` ranks ten times its opposite, so that Krum's and Bulyan's selections and the order statistics have
// outliers to reject, as in a run under attack. The period is prime, so no segment boundary lines up with it.
constexpr std::size_t kInputPeriod = 1021;

float unit_noise(std::uint64_t key) {  // splitmix64, to [-1, 1)
  key += 0x9e3779b97f4a7c15ULL;
  key = (key ^ (key >> 30)) * 0xbf58476d1ce4e5b9ULL;
  key = (key ^ (key >> 27)) * 0x94d049bb133111ebULL;
  key ^= key >> 31;
  return static_cast<float>(static_cast<double>(key >> 40) / static_cast<double>(std::uint64_t{1} << 23) - 1.0);
}

std::vector<float> input_period(int rank, int p, int byzantine) {
  std::vector<float> period(kInputPeriod);
  const bool bad = rank >= p - byzantine;
  for (std::size_t k = 0; k < kInputPeriod; ++k) {
    const float shared = unit_noise(k), own = unit_noise((std::uint64_t{1} << 32) * (rank + 1) + k);
    period[k] = bad ? -10.0f * shared + own : shared + 0.1f * own;
  }
  return period;
}

class RobustMethod final : public AggregateMethod {
 public:
  RobustMethod(const Comm& comm, std::string text, int byzantine, AggregationForm form)
      : text_(std::move(text)), byzantine_(byzantine), form_(form),
        aggregation_(make_robust_aggregation(comm, text_, byzantine, form)),
        period_(input_period(comm.rank(), comm.size(), byzantine)) {
    label_ = "agg-" + text_ + (form == AggregationForm::gathered ? "-gather" : "");
    std::replace(label_.begin(), label_.end(), ',', '+');  // the CSV's separator
  }
  const std::string& label() const override { return label_; }
  void fill(std::span<float> data) const override {
    for (std::size_t i = 0; i < data.size(); i += kInputPeriod) {
      const std::size_t n = std::min(kInputPeriod, data.size() - i);
      std::copy_n(period_.begin(), n, data.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }
  void run(std::span<float> data) override { aggregation_->run(data); }
  // The other form, built for the check alone and freed before this one runs (its root holds p whole vectors).
  long count_wrong(std::span<float> data) override {
    const Comm& comm = aggregation_->comm();
    std::vector<float> expected(data.size());
    {
      const auto other = make_robust_aggregation(
          comm, text_, byzantine_,
          form_ == AggregationForm::gathered ? AggregationForm::segmented : AggregationForm::gathered);
      fill(expected);
      other->run(expected);
    }
    fill(data);
    run(data);
    long wrong = 0;
    for (std::size_t i = 0; i < data.size(); ++i) wrong += data[i] != expected[i];
    return summed(wrong, comm);
  }

 private:
  std::string text_, label_;
  int byzantine_;
  AggregationForm form_;
  std::unique_ptr<RobustAggregation> aggregation_;
  std::vector<float> period_;
};

// "median,multikrum:1,4,cclip:1.5" -> median, multikrum:1,4, cclip:1.5.
std::vector<std::string> split_aggregators(const std::string& list) {
  std::vector<std::string> texts;
  std::stringstream ss(list);
  for (std::string piece; std::getline(ss, piece, ',');) {
    const bool number = !piece.empty() && piece.find_first_not_of("0123456789.") == std::string::npos;
    if (number && !texts.empty())
      texts.back() += "," + piece;
    else
      texts.push_back(piece);
  }
  return texts;
}

std::vector<AggregationForm> parse_forms(const std::string& list) {
  std::vector<AggregationForm> forms;
  std::stringstream ss(list);
  for (std::string piece; std::getline(ss, piece, ',');) {
    if (piece == "segmented")
      forms.push_back(AggregationForm::segmented);
    else if (piece == "gathered")
      forms.push_back(AggregationForm::gathered);
    else
      throw std::invalid_argument(fmt::format("--forms: '{}' is neither 'segmented' nor 'gathered'", piece));
  }
  if (forms.empty()) throw std::invalid_argument("--forms: name at least one of segmented, gathered");
  return forms;
}

}  // namespace

std::vector<AggregateMethodMaker> aggregate_methods(const std::string& aggregators, const std::string& forms,
                                                    int byzantine, bool with_ring, const Comm& comm) {
  if (byzantine < 0) throw std::invalid_argument(fmt::format("--byzantine {}: must be >= 0", byzantine));
  if (byzantine >= comm.size())
    throw std::invalid_argument(
        fmt::format("--byzantine {}: needs fewer than the {} ranks of this run", byzantine, comm.size()));
  std::vector<AggregateMethodMaker> makers;
  if (with_ring) makers.push_back([](const Comm& c) { return std::make_unique<RingMethod>(c); });
  const std::vector<AggregationForm> form_list = parse_forms(forms);
  for (const std::string& text : split_aggregators(aggregators))
    for (AggregationForm form : form_list)
      makers.push_back(
          [text, byzantine, form](const Comm& c) { return std::make_unique<RobustMethod>(c, text, byzantine, form); });
  for (const AggregateMethodMaker& make : makers) make(comm);  // refuses a bad text or too few ranks now
  return makers;
}

}  // namespace gradsync::bench
