// The typed sync spec (trainers/config/sync_spec.hpp: bench_sync --methods) and the CSVs' dimension columns
// (TrainConfig::sync_dimensions, trainers/report/report.hpp).
#include <doctest/doctest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "collectives/comm.hpp"
#include "compression/compressors.hpp"
#include "test_support.hpp"
#include "trainers/checkpoint/checkpointing.hpp"
#include "trainers/config/sync_spec.hpp"
#include "trainers/config/train_config.hpp"
#include "trainers/families/sync_registry.hpp"
#include "trainers/report/report.hpp"

using namespace gradsync;

namespace {

SyncSpec parsed(const std::string& text) {
  std::string problem;
  const std::optional<SyncSpec> spec = parse_sync_spec(text, problem);
  INFO(text, ": ", problem);
  REQUIRE(spec);
  return *spec;
}

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> fields;
  std::stringstream ss(line);
  for (std::string f; std::getline(ss, f, ',');) fields.push_back(f);
  if (!line.empty() && line.back() == ',') fields.emplace_back();
  return fields;
}

// The row's fields by the header's column names; every row has as many fields as the header.
std::map<std::string, std::string> by_column(const std::string& header, const std::string& row) {
  const std::vector<std::string> names = split(header), fields = split(row);
  REQUIRE(names.size() == fields.size());
  std::map<std::string, std::string> out;
  for (std::size_t i = 0; i < names.size(); ++i) out[names[i]] = fields[i];
  return out;
}

TrainConfig train_flags(const std::vector<std::string>& args) {
  const CliOutcome parsed = test::parse_train_args(args);
  INFO(parsed.message);
  REQUIRE(parsed.config);
  return *parsed.config;
}

}  // namespace

TEST_CASE("every --sync value, allreduce method and compressor of the registries parses as a spec") {
  for (const AllreduceMethod& m : allreduce_method_table()) {
    if (!trains(m)) continue;
    const SyncSpec s = parsed(std::string(m.name));
    CHECK(s.sync.family == SyncFamily::allreduce);
    CHECK(s.sync.allreduce == &m);
    CHECK(s.name(TrainConfig{}) == m.name);
  }
  for (const SyncFamilyInfo* f : sync_family_table()) {
    if (f->name.empty()) continue;
    const SyncSpec s = parsed(std::string(f->name));
    CHECK(s.sync.family == f->family);
  }
  for (const CompressorInfo* c : compressor_table()) {
    std::string compress(c->name), problem;
    std::optional<CompressionChoice> expected = parse_compression(compress, problem);
    for (const char* param : {"2", "0.01"})  // a whole rank, a fraction: the first the compressor takes
      if (!expected && !c->param.empty()) expected = parse_compression(compress + ":" + param, problem);
    REQUIRE(expected);
    if (!c->param.empty()) compress += fmt::format(":{}", expected->param);
    const SyncSpec s = parsed("ring+compress=" + compress + "+noef");
    CHECK(s.compression.compressor == c);
    CHECK(s.compression.param == expected->param);
    CHECK_FALSE(s.compression.error_feedback);
    CHECK(s.name(TrainConfig{}) == "ring-" + expected->name() + "-noef");
  }
}

TEST_CASE("a spec's modifiers are train's flags, and its name is the one train gives the run") {
  const SyncSpec s = parsed("mpi+pipe+thread");
  CHECK(s.sync == sync_method("mpi"));
  CHECK(s.pipeline);
  CHECK_FALSE(s.buckets);
  CHECK(s.progress == Progress::thread);
  const TrainConfig c = train_flags({"--sync", "mpi", "--pipeline", "1", "--progress", "thread"});
  CHECK(s.name(TrainConfig{}) == c.sync_name());
  CHECK(s.name(TrainConfig{}) == "mpi-pipe-thread");
  // The order of the modifiers is free; the name is canonical.
  CHECK(parsed("ring+noef+buckets+compress=topk:0.01").name(TrainConfig{}) == "ring-topk0.01-noef-buckets");
  CHECK(parsed("ring+compress=powersgd:4+pipe").name(TrainConfig{}) == "ring-powersgd4-pipe");
  CHECK(parsed("ring+traced").name(TrainConfig{}) == "ring-traced");
  CHECK(parsed("serial").sync.family == SyncFamily::serial);
  const std::string_view bounds[] = {"xcore"};
  std::string problem;
  const std::optional<SyncSpec> x = parse_sync_spec("xcore+traced", problem, bounds);
  REQUIRE(x);
  CHECK(x->bound == "xcore");
  CHECK(x->name(TrainConfig{}) == "xcore-traced");
}

TEST_CASE("a bad spec is refused with a message that quotes it") {
  const std::string_view bounds[] = {"xcore"};
  for (const char* bad : {"rong", "ring-buckets", "ring+bucket", "ring+thread", "ring+noef", "ring+compress=zip",
                          "ring+compress=powersgd:0", "ring+pipe+pipe", "xcore+buckets", "", "ring+", "+ring"}) {
    std::string problem;
    INFO(bad);
    CHECK_FALSE(parse_sync_spec(bad, problem, bounds));
    INFO(problem);
    CHECK(problem.find(fmt::format("'{}'", bad)) != std::string::npos);
  }
  std::string problem;
  CHECK_FALSE(parse_sync_spec("xcore", problem));  // a bound only where the program takes it
}

TEST_CASE("the CSVs hold one column per dimension of the run's synchronization beside its name") {
  struct Run {
    std::vector<std::string> flags;
    std::string sync, family, allreduce, compressor, mode;
  };
  const Run runs[] = {
      {{"--sync", "ring"}, "ring", "allreduce", "ring", "", "blocking"},
      {{"--sync", "ps", "--ps-mode", "ssp", "--staleness", "2"}, "ps-ssp2", "ps", "", "", "ssp"},
      {{"--sync", "gossip", "--topology", "exp", "--async"}, "gossip-exp-async", "gossip", "", "", "async"},
      {{"--sync", "fedavg"}, "", "fedavg", "ring", "", "rounds"},
      {{"--sync", "ring", "--compress", "powersgd:4"}, "ring-powersgd4", "allreduce", "ring", "powersgd4", "blocking"},
      {{"--sync", "mpi", "--buckets", "--progress", "thread"},
       "mpi-buckets-thread",
       "allreduce",
       "mpi",
       "",
       "buckets+thread"},
      {{"--sync", "ps", "--pipeline", "1"}, "ps-bsp-pipe", "ps", "", "", "bsp+pipe"},
      {{"--sync", "ring", "--average-every", "4"}, "ring-avg4", "allreduce", "ring", "", "local-sgd"},
  };
  const std::string dir = test::temp_dir("sync-csv", Comm::world().rank()).string();
  int n = 0;
  for (const Run& run : runs) {
    const TrainConfig c = train_flags(run.flags);
    TrainResult r;
    r.sync_name = c.sync_name();
    std::map<std::string, std::string> row = by_column(kTrainCsvHeader, csv_row(c, r));
    INFO(r.sync_name);
    if (!run.sync.empty()) CHECK(row["sync"] == run.sync);
    CHECK(row["family"] == run.family);
    CHECK(row["allreduce"] == run.allreduce);
    CHECK(row["compressor"] == run.compressor);
    CHECK(row["mode"] == run.mode);
    const std::string path = fmt::format("{}/run{}.csv", dir, ++n);
    append_epoch_csv(path, c, 2, EpochReport{});
    std::ifstream in(path);
    std::string header, line;
    std::getline(in, header);
    std::getline(in, line);
    CHECK(header == kEpochCsvHeader);
    row = by_column(header, line);
    CHECK(row["method"] == r.sync_name);
    CHECK(row["family"] == run.family);
    CHECK(row["allreduce"] == run.allreduce);
    CHECK(row["compressor"] == run.compressor);
    CHECK(row["mode"] == run.mode);
  }
}

TEST_CASE("--model and --dataset become registry entries, and their names come back unchanged") {
  for (const ModelInfo& m : model_table()) {
    const TrainConfig c = train_flags({"--model", std::string(m.name)});
    CHECK(c.model == &m);
    CHECK(c.model_name().starts_with(m.name));
    TrainResult r;
    r.model_name = c.model_name();
    CHECK(by_column(kTrainCsvHeader, csv_row(c, r))["model"] == c.model_name());
  }
  for (std::string_view name : kDatasetNames) {
    const TrainConfig c = train_flags({"--dataset", std::string(name)});
    CHECK(dataset_name(c.dataset) == name);
    CHECK(find_dataset(name) == c.dataset);
    CHECK(by_column(kTrainCsvHeader, csv_row(c, TrainResult{}))["dataset"] == name);
  }
  // The checkpoint's identity is the text it always was, so that checkpoints written before resume.
  TrainConfig c = train_flags({"--model", "mlp", "--dataset", "fashion", "--seed", "7"});
  CHECK(run_fingerprint(c, "784-128-10") == "model=784-128-10 sync=serial dataset=fashion seed=7 momentum=0 chunk=0");
  CHECK_FALSE(find_dataset("cifar"));
  CHECK(find_model("resnet") == nullptr);
  CHECK_THROWS_AS(model_info("resnet"), std::invalid_argument);
}
