#pragma once
// One interface over the ways gradsync sums a buffer across ranks: the ring, recursive doubling, recursive halving
// and doubling, the parameter server, MPI_Allreduce, the ring with a bfloat16 wire. The list of methods, with what
// each one needs and promises, is collectives/methods.hpp, whose make_allreduce builds one by name.
// An algorithm is planned once for a communicator (neighbours, scratch) and run many times.
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "collectives/agreement.hpp"
#include "collectives/comm.hpp"
#include "collectives/dtype.hpp"
#include "collectives/method_options.hpp"
#include "collectives/segments.hpp"
#include "trace/span.hpp"

namespace gradsync {

// Ring chunk sizes, chosen by the chunk sweeps (docs/collectives.md and docs/scale-out.md have the figures). On
// shared memory the chunk being added should stay in cache, and smaller chunks pay a per-message cost; across
// hosts every chunk is a lockstep rendezvous on TCP, so larger chunks keep the link busier. Scratch memory is one
// chunk either way. kAutoChunkBytes picks between the two per communicator (make_allreduce).
inline constexpr std::size_t kSharedMemoryChunkBytes = std::size_t{1} << 20;
inline constexpr std::size_t kNetworkChunkBytes = std::size_t{16} << 20;
inline constexpr std::size_t kAutoChunkBytes = 0;
// The ring's exchanges in flight at once, resolved per communicator like the chunk. Across hosts two keep the link
// busy while a chunk is added (a pipelined ring). On shared memory the "link" is the memory system the addition
// also uses, and a second chunk in flight only competes with it: one at a time (docs/algorithms.md has the runs).
inline constexpr std::size_t kAutoRingWindow = 0;
inline constexpr std::size_t kSharedMemoryRingWindow = 1;
inline constexpr std::size_t kNetworkRingWindow = 2;

struct AllreduceOptions {
  std::size_t chunk_bytes = kAutoChunkBytes;  // ring: largest message; scratch is one chunk
  // Pairwise exchanges (rd, rhd, a ring of two ranks: both directions share one connection): the largest single
  // message; a larger one goes as several, posted at once (segments.hpp). kAutoSegmentBytes: resolved like the chunk.
  std::size_t segment_bytes = kAutoSegmentBytes;
  std::size_t ring_window = kAutoRingWindow;  // ring: chunk exchanges in flight at once (resolved like the chunk)
  bool check_agreement = true;                // verify count/type agree on all ranks before moving data
  bool report_choices = false;  // auto: rank 0 prints each choice once per size (train and the benchmarks do)
  // The method's own options (ps's servers, hier's ranks_per_host, ...): the keys its registry entry declares
  // (method_options.hpp); make() refuses any other key.
  MethodOptions own;
};

struct ElementRange {
  std::size_t begin = 0;
  std::size_t end = 0;
  std::size_t size() const { return end - begin; }
};

// The i-th of `parts` contiguous, nearly equal pieces of [0, count): sizes differ by at most one element.
// Requires parts >= 1 and i < parts (callers pass a communicator size and a rank).
constexpr ElementRange partition(std::size_t count, std::size_t parts, std::size_t i) {
  const std::size_t base = count / parts, extra = count % parts;
  const std::size_t begin = i * base + (i < extra ? i : extra);
  return {begin, begin + base + (i < extra ? 1 : 0)};
}

class Allreduce {
 public:
  virtual ~Allreduce() = default;

  // Collective: every rank of the communicator calls run() with the same count and type. Sums the
  // contributing ranks' buffers elementwise, in place: afterwards result_range(rank, count) of `data` holds the
  // sum on every rank (the whole buffer except on dedicated parameter-server ranks). `data` stays owned by the
  // caller. A count or type mismatch throws MismatchError on every rank (with options.check_agreement), before any
  // data moves, and the object stays usable. An MpiError (a failed MPI call) may leave transfers pending on
  // `data`: treat it as fatal and end the job (train does, with MPI_Abort). Not while an operation started with
  // start() is in flight (std::logic_error).
  void run(void* data, std::size_t count, Dtype type);
  template <class T>
  void run(std::span<T> data) {
    run(data.data(), data.size(), dtype_of<T>());
  }

  // The same reduction, nonblocking: start() posts its first messages and returns; test() moves it on without
  // blocking (call it between pieces of other work: Open MPI's TCP transport moves data only inside MPI calls)
  // and returns true once `data` holds the result; wait() blocks until then. Every rank starts the same sequence
  // of operations on this object, as for run(). One operation per object is in flight at a time; the caller must
  // neither read nor write `data` (nor free it) until test() returned true or wait() returned. Several objects
  // may be in flight on one communicator only when each rank completes them in the order it started them and
  // starts the next one's data movement after the previous one's (BucketQueue does this); otherwise give each
  // its own communicator. A mismatch throws MismatchError from the test() or wait() that finds it, on every
  // rank, and leaves the object idle and usable; errors are otherwise as for run().
  void start(void* data, std::size_t count, Dtype type);
  template <class T>
  void start(std::span<T> data) {
    start(data.data(), data.size(), dtype_of<T>());
  }
  bool test();
  void wait();
  bool in_flight() const { return phase_ != Phase::idle && phase_ != Phase::done; }

  // start() in two halves, for a queue of objects on one communicator (trainers/overlap/comm_engine.hpp): start_held()
  // posts the agreement check, which has tags of this object's own, so it may run while an earlier object's data
  // still moves; test() moves the check on and returns false until release() lets the data move (at once if the
  // check is complete, else when it completes). The check's rounds are left out of the trace, and the operation's
  // span starts at release(), so that spans on the communication track still follow each other. The same contract
  // as start() otherwise; wait() before release() is a std::logic_error, as is release() without start_held().
  void start_held(void* data, std::size_t count, Dtype type);
  template <class T>
  void start_held(std::span<T> data) {
    start_held(data.data(), data.size(), dtype_of<T>());
  }
  void release();

  virtual std::string_view name() const = 0;
  // Whether `rank`'s input is part of the sum (false only for dedicated server ranks).
  virtual bool contributes(int rank) const;
  // Which elements of `rank`'s buffer hold the result after run().
  virtual ElementRange result_range(int rank, std::size_t count) const;

  const Comm& comm() const { return comm_; }
  const AllreduceOptions& options() const { return options_; }
  // Which object this is, the same number on every rank when ranks build their objects in the same order (they are
  // built collectively): with the call number, what names one collective across ranks in a trace.
  std::uint32_t object_id() const { return object_id_; }

 protected:
  Allreduce(Comm comm, AllreduceOptions options);
  // What a trace calls the method that ran the last operation (a string that lives as long as the process), and
  // the time the cost model predicted for it (0: none). auto names its choice.
  virtual const char* traced_method() const { return name().data(); }
  virtual double predicted_seconds() const { return 0; }

  // A method is a sequence of stages. begin() posts the first stage's messages for a reduction of count > 0
  // elements on a communicator of two or more ranks and sets stage(); each time every request of the stage has
  // completed, advance() does the local work that waited on them (adding what arrived, say), posts the next stage
  // and returns false, or returns true when the reduction is complete. Neither blocks.
  struct Stage {
    std::span<MPI_Request> requests;  // may hold MPI_REQUEST_NULL; empty: nothing to wait for
    const char* what = "";            // what the stage waits for, for the watchdog (a string literal)
    int peer = -1;                    // whom, if one rank
  };
  virtual void begin(std::byte* data, std::size_t count, Dtype type) = 0;
  virtual bool advance() = 0;
  // The blocking reduction behind run(): by default begin() and its stages driven to the end. The vendor baseline
  // overrides it with its blocking call.
  virtual void reduce(std::byte* data, std::size_t count, Dtype type);
  // Throws std::invalid_argument if this method cannot sum `type` (every type works unless overridden).
  virtual void require_supported(Dtype /*type*/) const {}
  // For methods built from other methods (hier_allreduce.hpp): `part`'s stages run as this method's, with no
  // agreement check of their own. The same contract as begin() and advance().
  static void begin_of(Allreduce& part, std::byte* data, std::size_t count, Dtype type) { part.begin(data, count, type); }
  static bool advance_of(Allreduce& part) { return part.advance(); }
  static const Stage& stage_of(const Allreduce& part) { return part.stage_; }

  Comm comm_;
  AllreduceOptions options_;
  Stage stage_;

 private:
  enum class Phase : std::uint8_t { idle, checking, checked, moving, done };  // checked: held after the check
  CallFingerprint fingerprint(std::size_t count, Dtype type);
  void start_operation(void* data, std::size_t count, Dtype type, bool held);
  void begin_moving();
  // The current stage completed: go on to the next phase or stage.
  void step_forward();
  void drive_to_completion();
  // The current stage's requests completed: MPI_Waitall, or with a watchdog a polling loop that takes a roll call
  // (roll_call.hpp) when the watchdog asks, so that its hang report names the ranks that never entered.
  void wait_for_stage();
  // Tracing (trace/recorder.hpp), when a recorder is installed: the operation's span and its stages'.
  void trace_begin(std::size_t count, Dtype type);
  void trace_stage_done();
  void trace_end();

  std::uint64_t calls_ = 0;
  std::uint32_t object_id_ = 0;
  std::uint64_t seq_ = 0;  // the call number of the operation in progress
  int roll_call_tag_ = 0;
  int agreement_tag_ = 0;  // the agreement check's rounds (agreement.hpp)
  Span span_;              // the operation being traced (start_s == 0: none)
  double stage_started_s_ = 0;
  std::uint64_t plan_fingerprint_ = 0;  // computed on first use: name() is virtual
  Phase phase_ = Phase::idle;
  bool held_ = false;  // start_held() until release()
  PendingAgreement agreement_;
  std::byte* data_ = nullptr;
  std::size_t count_ = 0;
  Dtype type_ = Dtype::f32;
};

// `options` with what it leaves automatic resolved for one transport: the message pieces (segment_bytes) always,
// and for a chunked method (`chunked`) the chunk and the ring window too; values already set stay. Local.
AllreduceOptions with_transport_defaults(AllreduceOptions options, bool shared_memory, bool chunked);

}  // namespace gradsync
