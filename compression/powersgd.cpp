// powersgd:R - rank-R power iteration per weight matrix (Vogels et al., NeurIPS 2019). For each m x n matrix M:
// P = M Q, P summed over workers, its columns made orthonormal, Q = M^T P, Q summed, and the sum decoded as
// P Q^T. Q starts each step from the last step's summed Q (warm start), so one power iteration per step tracks the
// gradient's leading subspace. Vectors (biases) are summed dense in the same allreduce as P. Both allreduces are
// --sync's method, so PowerSGD runs on any of them. A worker's own contribution is P (M^T P)^T: the projection of
// its M onto P's columns, which the others' sum decodes linearly.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "compression/compressors.hpp"
#include "compression/orthonormalize.hpp"
#include "model/kernels/gemm.hpp"
#include "model/kernels/installed_plan.hpp"
#include "model/rng.hpp"

namespace gradsync {
namespace {

// C (rows x cols, row stride cols) = op(A) op(B), inner dimension `inner`, on the kernels the installed plan gives
// the shape (the same on every rank: trainers/loop/agreed_kernel_plan.hpp).
void product(Op ta, Op tb, std::size_t rows, std::size_t cols, std::size_t inner, const float* a, std::size_t lda,
             const float* b, std::size_t ldb, float* c) {
  cntx_t* cntx = planned_context(GemmShape{ta == Op::T, tb == Op::T, rows, cols, inner});
  gemm(ta, tb, rows, cols, inner, 1.0f, a, lda, b, ldb, 0.0f, c, cols, cntx);
}

class PowerSgd final : public Compressor {
 public:
  PowerSgd(const CompressorSetup& s, std::size_t rank)
      : rank_(rank), allreduce_(s.method->make(s.workers, s.options)), seed_(s.seed) {
    std::size_t p_size = 0, q_size = 0;
    for (const Tensor& t : s.tensors) {
      if (t.matrix()) {
        matrices_.push_back({t, p_size, q_size});
        p_size += t.rows * rank, q_size += t.cols * rank;
      } else {
        vectors_.push_back(t);
      }
    }
    vector_start_ = p_size;
    for (const Tensor& t : vectors_) p_size += t.size();
    p_.resize(p_size);
    q_.resize(q_size + kCounterFloats);
    q_sum_ = std::span<float>(q_).first(q_size);
    // A Q of full column rank, the same on every worker: uniform in [-1, 1) from the run's seed, each matrix's the
    // values it gets when the whole model is planned at once (the draws for the matrices before it skipped).
    Rng rng(seed_, kStream);
    for (const Tensor& t : s.before)
      for (std::size_t i = 0; t.matrix() && i < t.cols * rank; ++i) rng.uniform();
    for (float& x : q_sum_) x = 2.0f * rng.uniform() - 1.0f;
  }

  void start(std::span<const float> in, std::span<float> mine, std::span<float> sum) override {
    in_ = in, mine_ = mine, sum_ = sum;
    for (const Matrix& x : matrices_)  // P = M Q, with Q the last step's sum
      product(Op::N, Op::N, x.t.rows, rank_, x.t.cols, &in[x.t.offset], x.t.cols, &q_[x.q], rank_, &p_[x.p]);
    std::size_t v = vector_start_;
    for (const Tensor& t : vectors_) {
      std::copy_n(&in[t.offset], t.size(), &p_[v]);
      std::copy_n(&in[t.offset], t.size(), &mine[t.offset]);
      v += t.size();
    }
    phase_ = Phase::summing_p;
    allreduce_->start(std::span<float>(p_));
  }
  bool test() override { return advance(false); }
  void wait() override { advance(true); }

  // The summed Q of the last step (the next step's starting point), then the count of renewed columns.
  std::span<float> state() override { return q_; }
  static std::size_t state_size(double r, std::span<const Tensor> tensors) {
    std::size_t size = kCounterFloats;
    for (const Tensor& t : tensors)
      if (t.matrix()) size += t.cols * static_cast<std::size_t>(r);
    return size;
  }

 private:
  struct Matrix {
    Tensor t;
    std::size_t p = 0, q = 0;  // where its P and Q start in p_ and q_
  };
  enum class Phase { idle, summing_p, summing_q };

  // Moves the exchange on from the allreduce in flight; `blocking` waits for it instead of testing. True once done.
  bool advance(bool blocking) {
    for (;;) {
      if (phase_ == Phase::idle) return true;
      if (blocking)
        allreduce_->wait();
      else if (!allreduce_->test())
        return false;
      if (phase_ == Phase::summing_p)
        after_p();
      else
        after_q();
    }
  }

  // P summed: orthonormal P, then Q = M^T P and this worker's contribution P Q^T before Q is summed.
  void after_p() {
    for (const Matrix& x : matrices_) {
      orthonormalize_columns(&p_[x.p], x.t.rows, rank_);
      product(Op::T, Op::N, x.t.cols, rank_, x.t.rows, &in_[x.t.offset], x.t.cols, &p_[x.p], rank_, &q_[x.q]);
      product(Op::N, Op::T, x.t.rows, x.t.cols, rank_, &p_[x.p], rank_, &q_[x.q], rank_, &mine_[x.t.offset]);
    }
    phase_ = Phase::summing_q;
    allreduce_->start(q_sum_);
  }

  // Q summed: the sum decoded as P Q^T, the vectors copied from where they were summed with P.
  void after_q() {
    for (const Matrix& x : matrices_) {
      product(Op::N, Op::T, x.t.rows, x.t.cols, rank_, &p_[x.p], rank_, &q_[x.q], rank_, &sum_[x.t.offset]);
      renew_lost_columns(x);
    }
    std::size_t v = vector_start_;
    for (const Tensor& t : vectors_) {
      std::copy_n(&p_[v], t.size(), &sum_[t.offset]);
      v += t.size();
    }
    phase_ = Phase::idle;
  }

  // A column of P found dependent (orthonormalize.hpp: zero, as the gradient had lower rank this step, e.g. a dead
  // unit's zero row) makes that column of Q zero, and the warm start would keep it zero at every later step: the
  // direction would be lost for good. Such a column of Q starts afresh from random values. P is the same on every
  // worker, so every worker renews the same columns with the same draws.
  // The n-th renewal draws from stream n of the seed: the count, kept with Q, is all a resumed run needs.
  void renew_lost_columns(const Matrix& x) {
    for (std::size_t j = 0; j < rank_; ++j) {
      bool zero = true;
      for (std::size_t i = 0; i < x.t.rows && zero; ++i) zero = p_[x.p + i * rank_ + j] == 0.0f;
      if (!zero) continue;
      Rng rng(seed_, kStream + 1 + renewals());
      for (std::size_t i = 0; i < x.t.cols; ++i) q_[x.q + i * rank_ + j] = 2.0f * rng.uniform() - 1.0f;
      set_renewals(renewals() + 1);
    }
  }

  // The renewal count in q_'s last two floats, 24 bits each: exact in float32, finite, and up to 2^48.
  static constexpr std::size_t kCounterFloats = 2;
  static constexpr std::uint64_t kStream = 0x504F574552ULL;
  std::uint64_t renewals() const {
    const std::size_t at = q_.size() - kCounterFloats;
    return (static_cast<std::uint64_t>(q_[at]) << 24) + static_cast<std::uint64_t>(q_[at + 1]);
  }
  void set_renewals(std::uint64_t n) {
    const std::size_t at = q_.size() - kCounterFloats;
    q_[at] = static_cast<float>(n >> 24);
    q_[at + 1] = static_cast<float>(n & 0xFFFFFF);
  }
  std::size_t rank_;
  std::unique_ptr<Allreduce> allreduce_;
  std::vector<Matrix> matrices_;
  std::vector<Tensor> vectors_;
  std::size_t vector_start_ = 0;  // the vectors follow the P's in p_, so one allreduce carries both
  std::vector<float> p_, q_;      // q_: the Q's, then the renewal count
  std::span<float> q_sum_;        // the Q's alone: what is summed
  std::uint64_t seed_;
  Phase phase_ = Phase::idle;
  std::span<const float> in_;  // the exchange in flight's spans (Compressor::start)
  std::span<float> mine_, sum_;
};

std::string check_rank(double r) {
  if (r >= 1 && r == std::floor(r) && r < 1e6) return {};
  return fmt::format("powersgd:R needs a whole rank R >= 1, got {}", r);
}

std::string check_shapes(double r, std::span<const Tensor> tensors) {
  for (const Tensor& t : tensors)
    if (t.matrix() && static_cast<std::size_t>(r) > std::min(t.rows, t.cols))
      return fmt::format("powersgd:{}: rank {} is larger than {} allows (at most {})", r, r, t.name,
                         std::min(t.rows, t.cols));
  return {};
}

}  // namespace

extern const CompressorInfo powersgd_compressor = {
    .name = "powersgd",
    .param = "R",
    .summary = "rank-R power iteration per weight matrix (P and Q through --sync's allreduce), vectors dense",
    .uses_allreduce = true,
    .check_param = check_rank,
    .check_model = check_shapes,
    .make = [](const CompressorSetup& s) -> std::unique_ptr<Compressor> {
      return std::make_unique<PowerSgd>(s, static_cast<std::size_t>(s.param));
    },
    .state_size = PowerSgd::state_size,
};

}  // namespace gradsync
