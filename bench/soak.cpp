// soak: thousands of allreduce calls of random shape, every one checked exactly. The count (log-uniform,
// 0..--max-count elements), element type, method, ring chunk size, server count and whether servers contribute
// are drawn from one generator seeded by --seed; every rank runs it in lockstep, so all ranks make the same
// calls without exchanging a word about them.
//   mpirun -n 4 build/bin/soak --calls 10000 --seed 1
// Plans live in a small pool and are reused across counts and types, as a trainer reuses its plan; now and
// then a slot gets a fresh random plan. Both halves matter: bugs hide in scratch sized by an earlier call.
// The last line is "soak: N calls, M elements checked, W wrong"; the exit code is 1 if W > 0.
#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <new>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bench/flags/soak_flags.hpp"
#include "collectives/allreduce.hpp"
#include "collectives/methods.hpp"

namespace {

using namespace gradsync;

constexpr int kPoolSlots = 16;             // plans alive at once
constexpr int kFreshPlanOneIn = 8;         // odds that a call replaces its slot's plan with a fresh random one
constexpr std::size_t kMinChunkBytes = 1;  // below one element: the ring must still move whole elements
constexpr std::size_t kMaxChunkBytes = std::size_t{4} << 20;
// A 1-byte chunk on a 1M-element call would be millions of messages: chunks are drawn no finer than this many
// per ring segment, which still gives many-chunk segments and single-element chunks on small calls.
constexpr std::size_t kMaxChunksPerSegment = 256;
constexpr std::size_t kGuardElements = 16;  // written before and after the buffer; any change is an overrun
constexpr int kReportedFailures = 5;        // per rank: detailed lines for the first few wrong calls
// Values (see value()) stay exact in every type up to this many ranks; int32 is the binding limit.
constexpr int kMaxRanks = 256;
constexpr std::array kDtypes = {Dtype::f32, Dtype::f64, Dtype::i32, Dtype::i64};

// Puts bits above float's 24-bit mantissa into double and above int32's range into int64, so a reduction that
// narrows a wide type shows up as wrong elements.
template <class T>
constexpr std::int64_t kHigh = 1;
template <>
constexpr std::int64_t kHigh<std::int32_t> = std::int64_t{1} << 12;
template <>
constexpr std::int64_t kHigh<double> = std::int64_t{1} << 30;
template <>
constexpr std::int64_t kHigh<std::int64_t> = std::int64_t{1} << 40;

// The per-element pattern, -8..8, shifted by the call number so a result left over from an earlier call is wrong.
std::int64_t pattern(std::size_t i, std::uint64_t call) { return static_cast<std::int64_t>((i * 7 + call * 3) % 17) - 8; }

// Rank r contributes (r+1) * base(i): integer-valued, distinct per rank, exact in every type for P <= kMaxRanks.
template <class T>
std::int64_t base(std::size_t i, std::uint64_t call) {
  return pattern(i, call) * kHigh<T> + 1;
}
template <class T>
T value(int rank, std::size_t i, std::uint64_t call) {
  return static_cast<T>((rank + 1) * base<T>(i, call));
}
template <class T>
constexpr T kGuardValue = static_cast<T>(-77);  // fills the guards; no reduction may touch them

// One seeded stream, drawn identically on every rank.
class Draw {
 public:
  explicit Draw(std::uint64_t seed) : rng_(seed) {}
  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool one_in(int n) { return uniform(1, n) == 1; }
  // Log-uniform on [lo, hi] (lo >= 1): every order of magnitude is drawn about equally often.
  std::size_t log_uniform(std::size_t lo, std::size_t hi) {
    const double x =
        std::exp(std::uniform_real_distribution<double>(std::log(double(lo)), std::log(double(hi) + 1))(rng_));
    return std::clamp(static_cast<std::size_t>(x), lo, hi);
  }
  // 0..max, log-uniform over count + 1, so empty and tiny calls (fewer elements than ranks) come up often.
  std::size_t count(std::size_t max) { return log_uniform(1, max + 1) - 1; }

 private:
  std::mt19937_64 rng_;
};

struct PlanSpec {
  const AllreduceMethod* method = nullptr;
  AllreduceOptions options;

  std::string describe() const {
    std::string s(method->name);
    if (method->chunked) s += fmt::format(" chunk {} B", options.chunk_bytes);
    if (const auto k = options.own.find(kServersOption)) s += fmt::format(" k={}", *k);
    if (options.own.find(kServerContributesOption).value_or(0) != 0) s += ", servers contribute";
    return s;
  }
};

struct Slot {
  PlanSpec spec;
  std::unique_ptr<Allreduce> plan;
};

std::size_t ring_segment_bytes(std::size_t count, Dtype type, int ranks) {
  return (count + ranks - 1) / ranks * dtype_size(type);
}

// A ring plan whose chunks are so small that this call would send more than kMaxChunksPerSegment per segment.
bool too_fine(const PlanSpec& spec, std::size_t count, Dtype type, int ranks) {
  return spec.method->chunked && ring_segment_bytes(count, type, ranks) >
                                     kMaxChunksPerSegment * std::max(spec.options.chunk_bytes, dtype_size(type));
}

PlanSpec draw_spec(Draw& draw, const std::vector<const AllreduceMethod*>& methods, std::size_t count, Dtype type,
                   int ranks) {
  PlanSpec spec{methods[static_cast<std::size_t>(draw.uniform(0, static_cast<int>(methods.size()) - 1))], {}};
  if (spec.method->chunked) {
    const std::size_t finest = std::max(kMinChunkBytes, ring_segment_bytes(count, type, ranks) / kMaxChunksPerSegment);
    spec.options.chunk_bytes = draw.log_uniform(std::min(finest, kMaxChunkBytes), kMaxChunkBytes);
  }
  if (spec.method->servers == ServerRanks::some)
    spec.options.own.set(kServersOption, draw.uniform(1, std::max(1, ranks - 1)));
  if (spec.method->servers != ServerRanks::none) spec.options.own.set(kServerContributesOption, draw.one_in(2));
  return spec;
}

// How a call is driven: blocking run(), or the nonblocking form finished by wait() or by polling test(). Drawn per
// call, so that every method's nonblocking stages see the same shapes as its blocking path.
enum class Drive { run, start_wait, start_test };
constexpr std::array kDriveNames = {"run", "start+wait", "start+test"};

struct Tally {
  std::int64_t checked = 0;  // result elements plus guard elements examined
  std::int64_t wrong = 0;
  int reported = 0;
};

// Fills, reduces and checks one call of type T in `storage` (room for max count + 2 guards of 8-byte elements).
template <class T>
void run_call(Allreduce& plan, Drive drive, std::byte* storage, std::size_t count, std::uint64_t call,
              const std::string& what, const Comm& world, Tally& tally) {
  // new std::byte[] storage implicitly holds objects of any type it is reinterpreted as (C++20 [intro.object]).
  T* const data = reinterpret_cast<T*>(storage) + kGuardElements;
  const int me = world.rank();
  std::fill(data - kGuardElements, data, kGuardValue<T>);
  std::fill(data + count, data + count + kGuardElements, kGuardValue<T>);
  for (std::size_t i = 0; i < count; ++i) data[i] = value<T>(me, i, call);

  const std::span<T> span(data, count);
  if (drive == Drive::run) {
    plan.run(span);
  } else {
    plan.start(span);
    if (drive == Drive::start_wait) plan.wait();
    while (!plan.test()) {
    }
  }

  std::int64_t contributors = 0;  // sum of (r+1) over contributing ranks: the expected multiple of base()
  for (int r = 0; r < world.size(); ++r)
    if (plan.contributes(r)) contributors += r + 1;
  // Positions are relative to data[0]: guards sit at -kGuardElements..-1 and count..count+kGuardElements-1.
  std::int64_t wrong = 0;
  std::ptrdiff_t first_bad = 0;
  T got{}, expected{};
  const auto check = [&](std::ptrdiff_t at, T want) {
    if (data[at] == want) return;
    if (wrong++ == 0) {
      first_bad = at;
      got = data[at];
      expected = want;
    }
  };
  const ElementRange range = plan.result_range(me, count);
  for (std::size_t i = range.begin; i < range.end; ++i)
    check(static_cast<std::ptrdiff_t>(i), static_cast<T>(contributors * base<T>(i, call)));
  const auto n = static_cast<std::ptrdiff_t>(count), guards = static_cast<std::ptrdiff_t>(kGuardElements);
  for (std::ptrdiff_t g = 0; g < guards; ++g) {
    check(-1 - g, kGuardValue<T>);
    check(n + g, kGuardValue<T>);
  }
  tally.checked += static_cast<std::int64_t>(range.size() + 2 * kGuardElements);
  tally.wrong += wrong;
  if (wrong > 0 && tally.reported++ < kReportedFailures)
    fmt::print(stderr, "soak: rank {} call {} ({}, {} x {}): {} wrong, first at element {}{}: got {}, expected {}\n", me,
               call, what, count, dtype_name(dtype_of<T>()), wrong, first_bad,
               first_bad < 0 || first_bad >= n ? " (a guard outside the buffer)" : "", got, expected);
}

void run_call(Allreduce& plan, Drive drive, Dtype type, std::byte* storage, std::size_t count, std::uint64_t call,
              const std::string& what, const Comm& world, Tally& tally) {
  switch (type) {
    case Dtype::f32: return run_call<float>(plan, drive, storage, count, call, what, world, tally);
    case Dtype::f64: return run_call<double>(plan, drive, storage, count, call, what, world, tally);
    case Dtype::i32: return run_call<std::int32_t>(plan, drive, storage, count, call, what, world, tally);
    case Dtype::i64: return run_call<std::int64_t>(plan, drive, storage, count, call, what, world, tally);
  }
}

// Collective: {checked, wrong} summed over ranks.
std::array<std::int64_t, 2> totals(const Tally& tally, const Comm& world) {
  std::array<std::int64_t, 2> sums = {tally.checked, tally.wrong};
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, sums.data(), 2, MPI_INT64_T, MPI_SUM, world.native()), "MPI_Allreduce",
            world.rank());
  return sums;
}

// Every rank must draw the same sequence: refuse differing arguments before the first call instead of hanging.
void require_same_everywhere(std::uint64_t v, const char* flag, const Comm& world) {
  const auto [lo, hi] = world.min_max(v);
  if (lo != hi)
    throw std::invalid_argument(fmt::format("{}: ranks were given different values ({} to {})", flag, lo, hi));
}

using bench::exact;

using Flags = bench::SoakFlags;

// Every rank: the methods --methods names. Throws std::invalid_argument, on every rank alike, for flags that
// cannot run.
std::vector<const AllreduceMethod*> check_flags(const Flags& f, const Comm& world) {
  if (world.size() > kMaxRanks)
    throw std::invalid_argument(fmt::format("at most {} ranks (values must stay exact in int32)", kMaxRanks));
  std::vector<const AllreduceMethod*> methods;
  std::stringstream ss(f.methods);
  for (std::string m; std::getline(ss, m, ',');) {
    const AllreduceMethod* method = find_allreduce_method(m);
    if (!method || !exact(*method))
      throw std::invalid_argument(fmt::format("--methods: {} '{}' (soak checks exact sums of every type: choose from {})",
                                              method ? "no exact sums of every type from" : "unknown method", m,
                                              allreduce_method_names(exact)));
    methods.push_back(method);
  }
  if (methods.empty()) throw std::invalid_argument("--methods: name at least one method");
  require_same_everywhere(f.seed, "--seed", world);
  require_same_everywhere(f.calls, "--calls", world);
  require_same_everywhere(f.max_count, "--max-count", world);
  require_same_everywhere(std::hash<std::string>{}(f.methods), "--methods", world);
  return methods;
}

// Every rank: room for the largest call and its guards. Throws std::runtime_error on every rank if any rank
// lacks the memory.
std::unique_ptr<std::byte[]> allocate_storage(std::size_t max_count, const Comm& world) {
  std::unique_ptr<std::byte[]> storage(new (std::nothrow)
                                           std::byte[(max_count + 2 * kGuardElements) * sizeof(std::int64_t)]);
  // A rank without the memory says so before the first call, where the others would otherwise wait for it.
  if (!world.all_ok(storage != nullptr))
    throw std::runtime_error(fmt::format("--max-count {}: {} could not allocate {} MiB for its buffer", max_count,
                                         storage ? "another rank" : fmt::format("rank {}", world.rank()),
                                         (max_count + 2 * kGuardElements) * sizeof(std::int64_t) >> 20));
  return storage;
}

// The call in progress, for the error message of a call that throws; `what` is empty outside calls.
struct Where {
  std::uint64_t call = 0;
  std::string what;
};

// Everything the calls share: the drawn sequence, the plan pool, and what has been run and checked so far.
struct Soak {
  explicit Soak(std::uint64_t seed) : draw(seed), pool(kPoolSlots) {}
  Draw draw;
  std::vector<Slot> pool;
  std::map<std::string, std::uint64_t> calls_per_method, calls_per_type;
  Tally tally;
};

// Every rank, in lockstep: draws call `at.call`'s shape (and now and then a fresh plan), runs it and checks it.
void one_call(const Flags& f, const std::vector<const AllreduceMethod*>& methods, std::byte* storage, const Comm& world,
              Soak& soak, Where& at) {
  Draw& draw = soak.draw;
  const std::size_t count = draw.count(f.max_count);
  const Dtype type = kDtypes[static_cast<std::size_t>(draw.uniform(0, static_cast<int>(kDtypes.size()) - 1))];
  Slot& slot = soak.pool[static_cast<std::size_t>(draw.uniform(0, kPoolSlots - 1))];
  if (!slot.plan || draw.one_in(kFreshPlanOneIn) || too_fine(slot.spec, count, type, world.size())) {
    slot.spec = draw_spec(draw, methods, count, type, world.size());
    at.what = slot.spec.describe();
    slot.plan = slot.spec.method->make(world, slot.spec.options);
  }
  const auto drive = static_cast<Drive>(draw.uniform(0, static_cast<int>(kDriveNames.size()) - 1));
  at.what = fmt::format("{}, {}", slot.spec.describe(), kDriveNames[static_cast<std::size_t>(drive)]);
  if (f.trace && world.rank() == 0) {
    fmt::print("call {}: {}, {} x {}\n", at.call, at.what, count, dtype_name(type));
    std::fflush(stdout);
  }
  run_call(*slot.plan, drive, type, storage, count, at.call, at.what, world, soak.tally);
  ++soak.calls_per_method[std::string(slot.spec.method->name)];
  ++soak.calls_per_type[std::string(dtype_name(type))];
}

// Collective: rank 0 prints the totals so far.
void print_progress(const Flags& f, std::uint64_t done, const Tally& tally, double start, const Comm& world) {
  const auto [checked, wrong] = totals(tally, world);
  if (world.rank() == 0) {
    fmt::print("soak: {}/{} calls, {} elements checked, {} wrong, {:.1f} s\n", done, f.calls, checked, wrong,
               MPI_Wtime() - start);
    std::fflush(stdout);
  }
}

// Collective: rank 0 prints the final lines. Returns the wrong elements over all ranks.
std::int64_t report(const Flags& f, const Soak& soak, double start, const Comm& world) {
  const auto [checked, wrong] = totals(soak.tally, world);
  if (world.rank() == 0) {
    const auto list = [](const std::map<std::string, std::uint64_t>& m) {
      std::string s;
      for (const auto& [name, n] : m) s += fmt::format("{}{} {}", s.empty() ? "" : ", ", name, n);
      return s;
    };
    fmt::print("# {:.1f} s; calls by method: {}; by type: {}\n", MPI_Wtime() - start, list(soak.calls_per_method),
               list(soak.calls_per_type));
    fmt::print("soak: {} calls, {} elements checked, {} wrong\n", f.calls, checked, wrong);
  }
  return wrong;
}

// Every rank, after a successful parse: the whole soak, `at` naming the call in progress. Returns the exit code:
// 1 if any element was wrong.
int run(const Flags& f, const Comm& world, Where& at) {
  const std::vector<const AllreduceMethod*> methods = check_flags(f, world);
  const std::unique_ptr<std::byte[]> storage = allocate_storage(f.max_count, world);
  Soak soak(f.seed);
  if (world.rank() == 0)
    fmt::print("# soak: {} ranks, {} calls, seed {}, counts 0..{} (log-uniform), methods {}\n", world.size(), f.calls,
               f.seed, f.max_count, f.methods);
  const double start = MPI_Wtime();
  for (at.call = 0; at.call < f.calls; ++at.call) {
    one_call(f, methods, storage.get(), world, soak, at);
    if (f.progress_every > 0 && (at.call + 1) % f.progress_every == 0 && at.call + 1 < f.calls)
      print_progress(f, at.call + 1, soak.tally, start, world);
  }
  at.what.clear();
  return report(f, soak, start, world) > 0 ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const Comm world = Comm::world();
  const bool lead = world.rank() == 0;
  Flags f;
  if (const std::optional<int> done = bench::parse_soak_flags(argc, argv, lead, f)) {
    MPI_Finalize();
    return *done;
  }
  int code = 0;
  Where at;
  try {
    code = run(f, world, at);
  } catch (const std::exception& e) {
    if (at.what.empty()) {
      if (lead) fmt::print(stderr, "soak: error: {}\n", e.what());
      code = 2;
    } else {
      // Mid-call, the other ranks may be blocked in the collective this rank just left: abort them all.
      fmt::print(stderr, "soak: rank {} call {} ({}): {}\n", world.rank(), at.call, at.what, e.what());
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
  }
  MPI_Finalize();
  return code;
}
