// Replicated checkpoint sets and elastic resume (trainers/checkpoint/checkpoint_set.hpp): where the pieces land, which
// set a resumed run picks when replicas are damaged, torn or gone with their host, and that a run resumed on another
// world continues from the checkpoint's exact state. Each rank plays a host of its own ($GRADSYNC_HOST=h<rank>),
// all sharing one temporary tree, as the emulated cluster's hosts do.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "collectives/comm.hpp"
#include "model/checkpoint_manifest.hpp"
#include "model/synthetic.hpp"
#include "test_support.hpp"
#include "trainers/checkpoint/checkpoint_set.hpp"
#include "trainers/checkpoint/checkpointing.hpp"
#include "trainers/loop/trainer.hpp"

using namespace gradsync;
namespace fs = std::filesystem;

namespace {

// Every rank of `world` names its host h<world rank> while it lives; one directory tree for all of them.
struct Hosts {
  explicit Hosts(const Comm& world, const std::string& name) {
    ::setenv("GRADSYNC_HOST", fmt::format("h{}", world.rank()).c_str(), 1);
    long pid = ::getpid();
    check_mpi(MPI_Bcast(&pid, 1, MPI_LONG, 0, world.native()), "MPI_Bcast", world.rank());
    root = fs::temp_directory_path() / fmt::format("gradsync-test-elastic-{}-{}", name, pid);
    world.barrier();
  }
  ~Hosts() {
    ::unsetenv("GRADSYNC_HOST");
    Comm::world().barrier();
    if (Comm::world().rank() == 0) fs::remove_all(root);
  }
  fs::path dir(int host) const { return root / fmt::format("h{}", host); }
  std::string pattern() const { return (root / "%h").string(); }
  fs::path root;
};

TrainConfig base(const std::string& sync, const std::string& dir) {
  TrainConfig c = test::checkpointed_mlp(sync, 4, dir);
  c.sgd.momentum = 0.9f;
  c.seed = 5;
  c.checkpoint_steps = 3;  // sets at steps 3 and 6 inside the epoch, 8 at its end; 6 and 8 are kept
  return c;
}

std::size_t parameter_count(const TrainConfig& c, const TrainTest& d) {
  return make_model(c, d.train.features, static_cast<std::size_t>(d.train.classes))->parameter_count();
}

// What load_newest_checkpoint finds on the ranks of `comm`: the step, or the error's text.
std::string find_newest(const TrainConfig& c, const TrainTest& d, const Comm& comm, ResumePoint* out = nullptr) {
  try {
    const HostMap hosts(comm);
    const std::string model = make_model(c, d.train.features, static_cast<std::size_t>(d.train.classes))->describe();
    TrainConfig r = c;
    r.epochs = c.epochs + 1;
    ResumePoint p = load_newest_checkpoint(r, comm, hosts, run_fingerprint(r, model), parameter_count(c, d));
    if (out) *out = p;
    return fmt::format("step {}", p.steps_done);
  } catch (const CheckpointError& e) {
    return e.what();
  }
}

void flip_byte(const fs::path& file, std::size_t at) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(at));
  char ch = 0;
  f.get(ch);
  f.seekp(static_cast<std::streamoff>(at));
  f.put(static_cast<char>(ch ^ 0x5a));
}

// A manifest of a sharded set, every field set.
Manifest sample_manifest() {
  Manifest m;
  m.run = "model=20-16-4 sync=ring dataset=mnist seed=5 momentum=0.9 chunk=0";
  m.step = 1234;
  m.next_epoch = 2;
  m.epoch_examples = 640;
  m.ranks = 4;
  m.workers = 2;
  m.servers = 2;
  m.batch = 32;
  m.param_count = 100;
  m.optimizer_count = 100;
  m.params_crc = 0xdeadbeef;
  m.optimizer_crc = 0x01234567;
  m.pieces = {{0, 50, "piece-0-of-2.ckpt", 300, 0xabcdef01, true},
              {50, 100, "piece-1-of-2.ckpt", 300, 0x10fedcba, false}};
  return m;
}

// A report history whose numbers have no short decimal form: they survive only if written to the last bit.
ReportHistory sample_history() {
  return {true, 7, 0.1 + 0.2, 1233, 1.0 / 3.0, 2.0 / 3.0, 0.3, 1117.0 + 1.0 / 7.0, 0.5 / 3.0};
}

using test::contains;

constexpr const char* kNeedsFourHosts = "needs 4 ranks, one per emulated host";

}  // namespace

TEST_CASE("a manifest survives a round trip and any truncation or flipped byte is refused") {
  for (const bool with_history : {false, true}) {
    CAPTURE(with_history);
    Manifest m = sample_manifest();
    if (with_history) m.history = sample_history();
    const std::string text = serialize_manifest(m);
    CHECK(parse_manifest(text, "m") == m);
    for (std::size_t cut = 0; cut < text.size(); ++cut) {
      CAPTURE(cut);
      CHECK_THROWS_AS(parse_manifest(text.substr(0, cut), "m"), CheckpointError);
    }
    for (std::size_t at = 0; at < text.size(); ++at) {
      CAPTURE(at);
      std::string bad = text;
      bad[at] = static_cast<char>(bad[at] ^ 0x01);
      CHECK_THROWS_AS(parse_manifest(bad, "m"), CheckpointError);
    }
  }
}

TEST_CASE("a manifest's report history is a line of its own, read back bit for bit; two hosts' copies must agree on it") {
  Manifest m = sample_manifest();
  m.history = sample_history();
  const std::string text = serialize_manifest(m);
  CHECK(contains(text, "\nepoch_examples 640\nhistory 7 0.30000000000000004 1233 "));
  const Manifest back = parse_manifest(text, "m");
  CHECK(back.history.known);
  CHECK(back.history == m.history);  // every double to the last bit
  Manifest other = back;
  other.pieces[0].here = false;
  other.pieces[1].here = true;
  CHECK(m.same_set(other));  // another host's copy of the same set
  other.history.best_accuracy = 0.5;
  CHECK_FALSE(m.same_set(other));
  other.history = {};
  CHECK_FALSE(m.same_set(other));
  // Not known (a run resumed from a manifest without it): no line, and it reads back unknown.
  m.history = {};
  CHECK_FALSE(contains(serialize_manifest(m), "history"));
  CHECK(parse_manifest(serialize_manifest(m), "m") == m);
  // Numbers no run writes are refused, as any malformed line is.
  const std::vector<std::pair<std::string, std::function<void(ReportHistory&)>>> broken = {
      {"evaluations", [](ReportHistory& h) { h.evaluations = -1; }},
      {"best accuracy", [](ReportHistory& h) { h.best_accuracy = 1.5; }},
      {"time before the evaluation", [](ReportHistory& h) { h.elapsed_s = h.evaluated_s / 2; }},
      {"target steps", [](ReportHistory& h) { h.target_steps = -2; }},
  };
  for (const auto& [what, change] : broken) {
    CAPTURE(what);
    m.history = sample_history();
    change(m.history);
    CHECK_THROWS_WITH_AS(parse_manifest(serialize_manifest(m), "m"), doctest::Contains("'history' line"),
                         CheckpointError);
  }
}

TEST_CASE("a manifest in the format written before the report history still parses, its history unknown") {
  // Byte for byte what gradsync wrote before the 'history' line (its CRC computed by zlib's crc32).
  const std::string old_format =
      "gradsync-manifest 1\nrun model=20-16-4 sync=ring dataset=mnist seed=5 momentum=0.9 chunk=0\nstep 8\n"
      "next_epoch 1\nepoch_examples 0\nshape 4 4 0 4\nparams 100 deadbeef\noptimizer 100 01234567\npieces 1\n"
      "piece 0 0 100 piece-0-of-1.ckpt 900 abcdef01 1\nend ea2583af\n";
  const Manifest m = parse_manifest(old_format, "old");
  CHECK_FALSE(m.history.known);
  CHECK(m.history == ReportHistory{});
  CHECK(m.step == 8);
  CHECK(m.next_epoch == 1);
  CHECK(m.workers == 4);
  REQUIRE(m.pieces.size() == 1u);
  CHECK(m.pieces[0].crc == 0xabcdef01u);
  CHECK(serialize_manifest(m) == old_format);  // an unknown history is written as before
}

TEST_CASE("ring checkpoints land on two hosts; a damaged, torn or lost replica leaves the other, then the older set" *
          doctest::test_suite("needs_4_ranks")) {
  const Comm world = Comm::world();
  SKIP_UNLESS(world.size() >= 4, kNeedsFourHosts);
  const Hosts hosts(world, "ring");
  const TrainTest data = test::blobs(512);
  const TrainConfig c = base("ring", hosts.pattern());
  train(c, data, world);
  const std::string last = set_dir_name(8), before = set_dir_name(6);
  if (world.rank() == 0) {
    // The replicated model: rank 0's host and the next host hold it; no other host does.
    for (int h = 0; h < 4; ++h) {
      CAPTURE(h);
      CHECK(fs::exists(hosts.dir(h) / last / "piece-0-of-1.ckpt") == (h < 2));
      CHECK(fs::exists(hosts.dir(h) / last / manifest_file_name(h)) == (h < 2));
    }
    CHECK(fs::exists(hosts.dir(0) / before));            // the set before the newest is kept
    CHECK(!fs::exists(hosts.dir(0) / set_dir_name(3)));  // and older ones are pruned
  }
  world.barrier();
  ResumePoint p;
  CHECK(find_newest(c, data, world, &p) == "step 8");
  CHECK(contains(p.sources, "h0:"));

  // Host 0's copy damaged: host 1's copy of the same set is used, and the damage is reported.
  if (world.rank() == 0) flip_byte(hosts.dir(0) / last / "piece-0-of-1.ckpt", 200);
  world.barrier();
  CHECK(find_newest(c, data, world, &p) == "step 8");
  CHECK(contains(p.sources, "h1:"));
  if (world.rank() == 0) CHECK(contains(p.skipped, "corrupted"));

  // Host 0 lost: ranks 1..3 still find the newest set, on host 1.
  const Comm survivors = world.split(world.rank() == 0 ? MPI_UNDEFINED : 0, world.rank());
  if (world.rank() != 0) CHECK(find_newest(c, data, survivors) == "step 8");
  world.barrier();  // before rank 0 tears host 1's copy under the survivors' feet

  // Host 1's copy torn too (its manifest never written): the older set, complete on both hosts, wins.
  if (world.rank() == 0) fs::remove(hosts.dir(1) / last / manifest_file_name(1));
  world.barrier();
  CHECK(find_newest(c, data, world) == "step 6");

  // Only hosts that never held a piece are left: no complete checkpoint, each directory named.
  const Comm empty_hosts = world.split(world.rank() >= 2 ? 0 : MPI_UNDEFINED, world.rank());
  if (world.rank() >= 2) {
    test::check_mentions(find_newest(c, data, empty_hosts),
                         {"no complete checkpoint", hosts.dir(2).string(), hosts.dir(3).string()});
  }

  // A checkpoint of another run is named as such, with both fingerprints.
  TrainConfig other = c;
  other.seed = 6;
  test::check_mentions(find_newest(other, data, world), {"different run", "seed=5", "seed=6"});
  world.barrier();
}

TEST_CASE("every host's manifest of a set records rank 0's report history, inside an epoch and at its end" *
          doctest::test_suite("needs_4_ranks")) {
  const Comm world = Comm::world();
  SKIP_UNLESS(world.size() >= 4, kNeedsFourHosts);
  for (const int servers : {0, 2}) {  // the replicated model (ranks 0 and 1 write it), then shards held by servers
    CAPTURE(servers);
    const Hosts hosts(world, fmt::format("history-{}", servers));
    const TrainTest data = test::blobs(512);
    TrainConfig c = base(servers ? "ps" : "ring", hosts.pattern());
    c.servers = servers;
    c.epochs = 2;  // sets at steps 3, 6, 8, 9, 12, 15 and 16; each host keeps 15 and 16
    const TrainResult r = train(c, data, world);
    if (world.rank() == 0) {
      for (const std::int64_t step : {15, 16}) {
        CAPTURE(step);
        std::vector<Manifest> found;  // every host's manifest of the set: host h's is rank h's
        for (int h = 0; h < 4; ++h)
          if (const fs::path at = hosts.dir(h) / set_dir_name(step) / manifest_file_name(h); fs::exists(at))
            found.push_back(read_manifest(at.string()));
        REQUIRE(found.size() >= 2u);
        for (const Manifest& m : found) CHECK(m.same_set(found.front()));
        const ReportHistory& h = found.front().history;
        CHECK(h.known);
        CHECK(h.evaluations == (step == 16 ? 2 : 1));
        CHECK(h.evaluated_steps == (step == 16 ? 16 : 8));
        if (step == 15) CHECK(h.elapsed_s > h.evaluated_s);  // 7 steps of epoch 2 trained since the evaluation
        if (step == 16) CHECK(h.elapsed_s == r.epochs.back().elapsed_s);
        if (step == 16) CHECK(h.best_accuracy == r.best_accuracy);
      }
    }
    world.barrier();
  }
}

TEST_CASE("parameter-server shards are written by their server and a buddy, and re-partitioned on resume" *
          doctest::test_suite("needs_4_ranks")) {
  const Comm world = Comm::world();
  SKIP_UNLESS(world.size() >= 4, kNeedsFourHosts);
  const Hosts hosts(world, "ps");
  const TrainTest data = test::blobs(512);
  TrainConfig c = base("ps", hosts.pattern());
  c.servers = 2;
  c.epochs = 2;
  const TrainResult straight = train(c, data, world);  // 2 servers, 2 workers, 2 epochs

  c.epochs = 1;
  train(c, data, world);  // a fresh run: the sets of the straight run are removed first
  if (world.rank() == 0) {
    const std::string last = set_dir_name(8);
    // Shard 0: server 0 (h0) and host 1's rank; shard 1: server 1 (h1) and host 2's rank. Host 3 holds none.
    CHECK(fs::exists(hosts.dir(0) / last / "piece-0-of-2.ckpt"));
    CHECK(fs::exists(hosts.dir(1) / last / "piece-0-of-2.ckpt"));
    CHECK(fs::exists(hosts.dir(1) / last / "piece-1-of-2.ckpt"));
    CHECK(fs::exists(hosts.dir(2) / last / "piece-1-of-2.ckpt"));
    CHECK(!fs::exists(hosts.dir(0) / last / "piece-1-of-2.ckpt"));
    CHECK(!fs::exists(hosts.dir(3) / last));
  }
  world.barrier();

  // Host 0 (server 0) lost; the 3 left run 1 server and 2 workers: the same global batch, the same sums in the
  // same order, so the result is the straight run's, bit for bit.
  const Comm survivors = world.split(world.rank() == 0 ? MPI_UNDEFINED : 0, world.rank());
  if (world.rank() != 0) {
    TrainConfig r = c;
    r.servers = 1;
    r.epochs = 2;
    r.resume = true;
    const TrainResult resumed = train(r, data, survivors);
    if (survivors.rank() == 0) {
      // rank 0 of the straight run holds its result; compare on world rank 1 after a transfer.
      std::vector<float> reference(resumed.params.size());
      world.recv(reference.data(), reference.size(), MPI_FLOAT, 0, 77);
      CHECK(resumed.params == reference);
    }
  } else {
    world.send(straight.params.data(), straight.params.size(), MPI_FLOAT, 1, 77);
  }
  world.barrier();
}

TEST_CASE("a run resumed mid-epoch on fewer workers with --global-batch continues the same data order" *
          doctest::test_suite("needs_4_ranks")) {
  const Comm world = Comm::world();
  SKIP_UNLESS(world.size() >= 4, kNeedsFourHosts);
  const Hosts hosts(world, "global-batch");
  const TrainTest data = test::blobs(512);
  TrainConfig c = base("ring", hosts.pattern());
  c.global_batch = 16;  // 4 per worker on 4 ranks, 8 on 2
  c.sgd.momentum = 0;
  const TrainResult straight = train(c, data, world);
  // The run "fails" after step 7: the set of step 8 never existed; step 6 is mid-epoch.
  if (world.rank() == 0)
    for (int h = 0; h < 4; ++h) fs::remove_all(hosts.dir(h) / set_dir_name(8));
  world.barrier();
  const Comm two = world.split(world.rank() < 2 ? 0 : MPI_UNDEFINED, world.rank());
  if (world.rank() < 2) {
    TrainConfig r = c;
    r.resume = true;
    r.epochs = 1;
    // The checkpoint says 1 epoch is not finished yet: resume it, with the epoch's last two steps on 2 workers.
    const TrainResult resumed = train(r, data, two);
    if (two.rank() == 0) {
      CHECK(resumed.steps == 2);
      // The same examples in the same global batches; only the order of the sums differs.
      CHECK(test::relative_difference(resumed.params, straight.params) < 1e-5);
      CHECK(test::relative_difference(resumed.params, straight.params) > 0);
    }
  }
  world.barrier();
}
