// The sync spec (trainers/config/sync_spec.hpp: train --spec, bench_sync --methods), the CSVs' dimension columns
// (TrainConfig::sync_dimensions, trainers/report/report.hpp) and the names of models and datasets.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "collectives/comm.hpp"
#include "compression/compressors.hpp"
#include "test_support.hpp"
#include "trainers/checkpoint/checkpointing.hpp"
#include "trainers/cli/cli.hpp"
#include "trainers/config/sync_spec.hpp"
#include "trainers/config/train_config.hpp"
#include "trainers/config/validate_config.hpp"
#include "trainers/core/sync_registry.hpp"
#include "trainers/families/gossip/gossip_options.hpp"
#include "trainers/families/ps/ps_options.hpp"
#include "trainers/report/report.hpp"

using namespace gradsync;

namespace {

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
  const CliOutcome parsed = parse_train_args(args);
  INFO(parsed.message);
  REQUIRE(parsed.config);
  return *parsed.config;
}

SyncSpec parsed(const std::string& text, SpecWords own = {}) {
  std::string problem;
  const std::optional<SyncSpec> spec = parse_sync_spec(text, problem, own);
  INFO(text, ": ", problem);
  REQUIRE(spec);
  return *spec;
}

// The run `text` spells, as a program that takes several specs gets it (spec_config).
TrainConfig spec_run(const std::string& text) {
  std::string problem;
  const std::optional<TrainConfig> c = spec_config(parsed(text), problem);
  INFO(text, ": ", problem);
  REQUIRE(c);
  return *c;
}

// Every field a spec's flags may set (TrainConfig has no ==), and the names and columns made of them.
void check_same_run(const TrainConfig& a, const TrainConfig& b) {
  CHECK(a.sync == b.sync);
  CHECK(a.compression.compressor == b.compression.compressor);
  CHECK(a.compression.param == b.compression.param);
  CHECK(a.compression.error_feedback == b.compression.error_feedback);
  CHECK(a.compression.error_feedback_given == b.compression.error_feedback_given);
  CHECK(a.buckets == b.buckets);
  CHECK(a.pipeline == b.pipeline);
  CHECK(a.progress == b.progress);
  CHECK(ps_options(a).mode == ps_options(b).mode);
  CHECK(ps_options(a).staleness == ps_options(b).staleness);
  CHECK(a.servers == b.servers);
  CHECK(gossip_options(a).topology == gossip_options(b).topology);
  CHECK(gossip_options(a).async == gossip_options(b).async);
  CHECK(gossip_options(a).gamma == gossip_options(b).gamma);
  CHECK(a.average_every == b.average_every);
  CHECK(a.outer_lr == b.outer_lr);
  CHECK(a.outer_momentum == b.outer_momentum);
  CHECK(a.fed.clients == b.fed.clients);
  CHECK(a.fed.client_fraction == b.fed.client_fraction);
  CHECK(a.fed.local_epochs == b.fed.local_epochs);
  CHECK(a.fed.local_steps == b.fed.local_steps);
  CHECK(a.fed.partition.name() == b.fed.partition.name());
  CHECK(a.fed.aggregate == b.fed.aggregate);
  CHECK(a.fed.prox_mu == b.fed.prox_mu);
  CHECK(a.sync_name() == b.sync_name());
  CHECK(sync_dimension_fields(a) == sync_dimension_fields(b));
}

// Specs and the flags they stand for: every family, and between them every modifier of the registry.
struct Equivalent {
  std::string spec;
  std::vector<std::string> flags;
  std::string name;  // train's name of the run
};
const Equivalent kEquivalents[] = {
    {"serial", {"--sync", "serial"}, "serial"},
    {"ring", {"--sync", "ring"}, "ring"},
    {"ring+average=8+outer-lr=0.7+outer-momentum=0.9",
     {"--sync", "ring", "--average-every", "8", "--outer-lr", "0.7", "--outer-momentum", "0.9"},
     "ring-avg8-outer0.7m0.9"},
    {"mpi+average=4", {"--sync", "mpi", "--average-every", "4"}, "mpi-avg4"},
    {"ps", {"--sync", "ps"}, "ps-bsp"},
    {"ps+mode=ssp+staleness=2+servers=2",
     {"--sync", "ps", "--ps-mode", "ssp", "--staleness", "2", "--servers", "2"},
     "ps-ssp2-k2"},
    {"ps+servers=2+mode=asp", {"--sync", "ps", "--ps-mode", "asp", "--servers", "2"}, "ps-asp-k2"},
    {"ps+servers=3+replicas=2", {"--sync", "ps", "--servers", "3", "--replicas", "2"}, "ps-bsp-k3-r2"},
    {"ps+pipe+compress=topk:0.01",
     {"--sync", "ps", "--pipeline", "1", "--compress", "topk:0.01"},
     "ps-bsp-topk0.01-pipe"},
    {"gossip", {"--sync", "gossip"}, "gossip-ring"},
    {"gossip+topology=exp1+async", {"--sync", "gossip", "--topology", "exp1", "--async"}, "gossip-exp1-async"},
    {"gossip+compress=sign+gamma=0.4",
     {"--sync", "gossip", "--compress", "sign", "--gossip-gamma", "0.4"},
     "gossip-ring-g0.4-sign"},
    {"fedavg+clients=10+client-fraction=0.5+local-steps=3+partition=shards:3+aggregate=mpi+prox-mu=0.01+outer-lr="
     "0.8+outer-momentum=0.5",
     {"--sync", "fedavg", "--clients", "10", "--client-fraction", "0.5", "--local-steps", "3", "--partition", "shards:3",
      "--aggregate", "mpi", "--prox-mu", "0.01", "--outer-lr", "0.8", "--outer-momentum", "0.5"},
     "fedavg-K10-C0.5-S3-B32-shards:3-mpi-prox0.01-outer0.8m0.5"},
    {"fedavg+local-epochs=5+partition=dirichlet:0.3",
     {"--sync", "fedavg", "--local-epochs", "5", "--partition", "dirichlet:0.3"},
     "fedavg-K100-C0.1-E5-B32-dirichlet:0.3"},
    {"ring+buckets+thread", {"--sync", "ring", "--buckets", "--progress", "thread"}, "ring-buckets-thread"},
    {"mpi+pipe+thread", {"--sync", "mpi", "--pipeline", "1", "--progress", "thread"}, "mpi-pipe-thread"},
    {"ring+noef+compress=powersgd:4",
     {"--sync", "ring", "--compress", "powersgd:4", "--error-feedback", "0"},
     "ring-powersgd4-noef"},
};

// Whether one of kEquivalents spells `m` (its key: "staleness=" or "async").
bool covered(const SpecModifier& m) {
  const std::string_view spelling = m.spelling;
  const std::size_t eq = spelling.find('=');
  const std::string word(spelling.substr(0, eq == std::string_view::npos ? spelling.size() : eq + 1));
  for (const Equivalent& e : kEquivalents)
    for (std::size_t at = e.spec.find("+" + word); at != std::string::npos; at = e.spec.find("+" + word, at + 1)) {
      const std::size_t end = at + 1 + word.size();
      if (word.ends_with('=') || end == e.spec.size() || e.spec[end] == '+') return true;
    }
  return false;
}

}  // namespace

TEST_CASE("every family's spec is the run its flags are, through train --spec and through spec_config") {
  for (const Equivalent& e : kEquivalents) {
    INFO(e.spec);
    const TrainConfig by_flags = train_flags(e.flags);
    CHECK(by_flags.sync_name() == e.name);
    std::vector<std::string> spec_args = {"--spec", e.spec};
    const CliOutcome by_spec = parse_train_args(spec_args);
    INFO(by_spec.message);
    REQUIRE(by_spec.config);
    REQUIRE(by_spec.spec);
    CHECK(by_spec.spec->text == e.spec);
    check_same_run(*by_spec.config, by_flags);
    check_same_run(spec_run(e.spec), by_flags);
    CHECK(parsed(e.spec).flags.size() == e.flags.size());  // nothing more than those flags
  }
  // A modifier added to a family's registry entry needs a line above.
  for (const SyncFamilyInfo* f : sync_family_table())
    for (const SpecModifier& m : f->flags.spec_modifiers) {
      INFO(sync_family_id(f->family), " +", m.spelling);
      CHECK(covered(m));
    }
  // The flags a spec does not set are the run's as without one.
  const TrainConfig with = train_flags({"--spec", "ps+mode=ssp+staleness=2", "--epochs", "2", "--straggler", "1:5"});
  CHECK(with.epochs == 2);
  CHECK(with.faults.straggler_rank == 1);
  CHECK(with.sync_name() == "ps-ssp2");
}

TEST_CASE("every --sync value, allreduce method and compressor of the registries is a spec") {
  for (const AllreduceMethod& m : allreduce_method_table()) {
    if (!trains(m)) continue;
    const TrainConfig c = spec_run(std::string(m.name));
    CHECK(c.sync.family == SyncFamily::allreduce);
    CHECK(c.sync.allreduce == &m);
    CHECK(c.sync_name() == m.name);
  }
  for (const SyncFamilyInfo* f : sync_family_table())
    if (!f->name.empty()) CHECK(spec_run(std::string(f->name)).sync.family == f->family);
  for (const CompressorInfo* c : compressor_table()) {
    std::string compress(c->name), problem;
    std::optional<CompressionChoice> expected = parse_compression(compress, problem);
    for (const char* param : {"2", "0.01"})  // a whole rank, a fraction: the first the compressor takes
      if (!expected && !c->param.empty()) expected = parse_compression(compress + ":" + param, problem);
    REQUIRE(expected);
    if (!c->param.empty()) compress += fmt::format(":{}", expected->param);
    const TrainConfig run = spec_run("ring+compress=" + compress + "+noef");
    CHECK(run.compression.compressor == c);
    CHECK(run.compression.param == expected->param);
    CHECK_FALSE(run.compression.error_feedback);
    CHECK(run.sync_name() == "ring-" + expected->name() + "-noef");
  }
}

TEST_CASE("a spec that is not train's is refused, quoting it and naming the modifier") {
  struct Bad {
    const char* spec;
    std::vector<std::string> says;  // besides the quoted spec
  };
  const Bad bad[] = {
      {"rong", {"'rong' is not a method", "gossip"}},
      {"ring-buckets", {"is not a method"}},
      {"", {"'' is not a method"}},
      {"+ring", {"is not a method"}},
      {"ring+", {"'+' is not a modifier of ring"}},
      {"ring+bucket", {"'+bucket' is not a modifier of ring", "+buckets", "+average=H"}},
      {"ring+topology=exp", {"'+topology=exp' is not a modifier of ring"}},
      {"gossip+staleness=2", {"'+staleness=2' is not a modifier of gossip", "+topology=GRAPH", "+async"}},
      {"gossip+async=1", {"'+async=1' is not a modifier of gossip"}},
      {"ring+traced", {"'+traced' is not a modifier of ring"}},  // bench_sync's word, not train's
      {"ring+pipe+pipe", {"+pipe given twice"}},
      {"ps+servers=2+servers=3", {"+servers given twice"}},
      {"ps+mode=xyz", {"(+mode=xyz)", "--ps-mode", "xyz"}},
      {"ps+mode=ssp", {"(+mode=ssp)", "--staleness"}},
      {"ps+staleness=abc", {"(+staleness=abc)", "--staleness"}},
      {"ps+mode=ssp+staleness=1.5", {"(+staleness=1.5)"}},
      {"gossip+topology=star", {"(+topology=star)", "--topology", "star"}},
      {"ring+compress=zip", {"(+compress=zip)", "zip"}},
      {"ring+compress=powersgd:0", {"(+compress=powersgd:0)"}},
      {"ring+thread", {"(+thread)", "--progress", "--buckets"}},
      {"ring+average=0", {"(+average=0)", "--average-every"}},
      {"ring+outer-lr=0.5", {"(+outer-lr=0.5)", "--average-every"}},
      {"fedavg+partition=halves", {"(+partition=halves)", "--partition"}},
      {"fedavg+aggregate=nope", {"(+aggregate=nope)", "--aggregate"}},
  };
  for (const Bad& b : bad) {
    INFO(b.spec);
    const CliOutcome out = parse_train_args({"--spec", b.spec});
    CHECK_FALSE(out.config);
    CHECK(out.exit_code == 2);
    test::check_mentions(out.message, {"--spec", fmt::format("'{}'", b.spec)});
    for (const std::string& part : b.says) test::check_mentions(out.message, {part});
  }
  // What only validate() can refuse (it needs the rank count) names the modifier too (train_main: SyncSpec::explain).
  const CliOutcome noef = parse_train_args({"--spec", "ring+noef"});
  REQUIRE(noef.config);
  REQUIRE(noef.spec);
  test::check_mentions(noef.spec->explain(validate(*noef.config, 2)), {"'ring+noef' (+noef)", "--error-feedback"});
  const CliOutcome pipe = parse_train_args({"--spec", "gossip+pipe"});
  REQUIRE(pipe.config);
  test::check_mentions(pipe.spec->explain(validate(*pipe.config, 2)), {"(+pipe)", "--pipeline"});
}

TEST_CASE("--spec refuses the flags it sets beside it") {
  const std::vector<std::vector<std::string>> conflicts = {{"--sync", "ring"},     {"--buckets"},
                                                           {"--pipeline", "1"},    {"--progress", "thread"},
                                                           {"--compress", "sign"}, {"--error-feedback", "0"},
                                                           {"--topology", "exp"},  {"--async"},
                                                           {"--ps-mode", "asp"},   {"--staleness", "2"},
                                                           {"--servers", "2"},     {"--average-every", "4"},
                                                           {"--outer-lr", "0.5"},  {"--clients", "10"},
                                                           {"--prox-mu", "0.1"}};
  for (const std::vector<std::string>& flag : conflicts) {
    std::vector<std::string> args = {"--spec", "ring"};
    args.insert(args.end(), flag.begin(), flag.end());
    INFO(flag.front());
    const CliOutcome out = parse_train_args(args);
    CHECK_FALSE(out.config);
    test::check_mentions(out.message, {"--spec", "not with " + flag.front()});
  }
  // Every flag a modifier stands for is one of train's (and so refused beside --spec).
  const std::string help = parse_train_args({"--help"}).message;
  for (std::string_view flag : sync_spec_flags()) test::check_mentions(help, {std::string("  ") + std::string(flag)});
}

TEST_CASE("--print-run's rank count is the fewest validate() accepts") {
  struct Case {
    const char* spec;
    int ranks;
  };
  for (const Case& c : {Case{"serial", 1}, Case{"ring", 1}, Case{"ps", 2}, Case{"ps+mode=ssp+staleness=2+servers=3", 4},
                        Case{"ps+servers=2+replicas=2", 3}}) {
    INFO(c.spec);
    const CliOutcome out = parse_train_args({"--spec", c.spec, "--print-run"});
    REQUIRE(out.config);
    CHECK(out.print_run);
    std::string problem;
    CHECK(fewest_ranks(*out.config, problem) == c.ranks);
    CHECK(problem.empty());
    if (c.ranks > 1) CHECK_FALSE(validate(*out.config, c.ranks - 1).empty());
  }
  // A straggler on rank 3 needs 4 ranks; one on a server rank no count of ranks accepts.
  std::string problem;
  CHECK(fewest_ranks(train_flags({"--spec", "ring", "--straggler", "3:5"}), problem) == 4);
  CHECK(fewest_ranks(train_flags({"--spec", "ps", "--straggler", "0:5"}), problem) == 0);
  test::check_mentions(problem, {"--straggler", "parameter server"});
  CHECK(fewest_ranks(train_flags({"--spec", "gossip+compress=powersgd:2"}), problem) == 0);
  test::check_mentions(problem, {"--compress", "gossip"});
}

TEST_CASE("a program's own words: bases and modifiers train does not take") {
  const std::string_view bases[] = {"xcore"}, modifiers[] = {"traced"};
  const SpecWords own{bases, modifiers};
  const SyncSpec x = parsed("xcore+traced", own);
  CHECK(x.own_base == "xcore");
  CHECK(x.has("traced"));
  CHECK(x.flags.empty());
  const SyncSpec r = parsed("ring+traced+buckets", own);
  CHECK(r.own_base.empty());
  CHECK(r.has("traced"));
  CHECK((r.flags == std::vector<std::string>{"--sync", "ring", "--buckets"}));
  for (const char* bad : {"xcore+buckets", "ring+traced+traced", "xcorex"}) {
    std::string problem;
    INFO(bad);
    CHECK_FALSE(parse_sync_spec(bad, problem, own));
    test::check_mentions(problem, {fmt::format("'{}'", bad)});
  }
  std::string problem;
  CHECK_FALSE(parse_sync_spec("xcore", problem));  // a program's base only where the program takes it
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
