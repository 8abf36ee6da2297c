// Training with Byzantine workers (config.robust): the default aggregation is today's run, a robust aggregator keeps
// learning under an attack that the mean does not survive, and the refusals name the flags and the numbers.
#include <doctest/doctest.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "attacks/attack_spec.hpp"
#include "collectives/comm.hpp"
#include "collectives/robust/aggregator_spec.hpp"
#include "model/dataset.hpp"
#include "test_support.hpp"
#include "trainers/cli/cli.hpp"
#include "trainers/config/validate_config.hpp"
#include "trainers/loop/trainer.hpp"

using namespace gradsync;

namespace {

// Two epochs of 30 steps of test::small_mlp on the ring.
TrainConfig two_epochs() {
  TrainConfig c = test::small_mlp("ring", 8, 30);
  c.epochs = 2;
  c.quiet = true;
  return c;
}

TrainConfig attacked(const std::string& attack, int byzantine, const std::string& aggregation) {
  TrainConfig c = two_epochs();
  c.robust.byzantine = byzantine;
  if (!attack.empty()) c.robust.attack = parse_attack(attack);
  c.robust.aggregation = parse_aggregator(aggregation, byzantine);
  return c;
}

}  // namespace

TEST_CASE("robust training: --robust-aggregation mean without an attack is the default run, bit for bit") {
  const Comm world = Comm::world();
  const TrainTest data = test::blobs();
  const TrainConfig plain = two_epochs();
  const TrainConfig mean = attacked("", 0, "mean");
  REQUIRE(validate(mean, world.size()).empty());
  const TrainResult a = train(plain, data, world), b = train(mean, data, world);
  if (world.rank() != 0) return;  // the result is complete on rank 0
  REQUIRE(a.params.size() == b.params.size());
  CHECK(a.params == b.params);
}

TEST_CASE("robust training: with 1 of 4 workers sending -4 times its gradient, median learns and mean does not") {
  const Comm world = Comm::world();
  SKIP_UNLESS(world.size() == 4, "needs 4 ranks (3 honest workers, 1 malicious)");
  const TrainTest data = test::blobs();
  const TrainConfig median = attacked("sign-flip:4", 1, "median"), mean = attacked("sign-flip:4", 1, "mean");
  REQUIRE(validate(median, world.size()).empty());
  REQUIRE(validate(mean, world.size()).empty());
  const TrainResult honest = train(attacked("", 0, "median"), data, world);
  const TrainResult robust = train(median, data, world), plain = train(mean, data, world);
  if (world.rank() != 0) return;
  const double first_loss = robust.epochs.front().test_loss, last_loss = robust.epochs.back().test_loss;
  MESSAGE("test accuracy: no attack ", honest.test_accuracy, ", median ", robust.test_accuracy, ", mean ",
          plain.test_accuracy, "; median's test loss ", first_loss, " -> ", last_loss, ", mean's ",
          plain.epochs.back().test_loss);
  CHECK(last_loss < first_loss);  // still learning in the second epoch
  CHECK(robust.test_accuracy > 0.9);
  CHECK(plain.test_accuracy < robust.test_accuracy - 0.3);
  CHECK(plain.epochs.back().test_loss > 2 * last_loss);
}

TEST_CASE("robust training: the refusals name the flags and the numbers") {
  // Krum tolerates F of n >= 2F + 3: not 1 of 4.
  const TrainConfig krum = attacked("sign-flip", 1, "krum");
  const std::string four = validate(krum, 4);
  CAPTURE(four);
  CHECK(four.find("--robust-aggregation") != std::string::npos);
  CHECK(four.find("2F + 3") != std::string::npos);
  CHECK(four.find("at least 5 ranks") != std::string::npos);
  CHECK(four.find("this run has 4") != std::string::npos);
  CHECK(validate(krum, 5).empty());
  // F must leave an honest worker.
  CHECK(validate(attacked("sign-flip", 4, "mean"), 4).find("--byzantine 4: must be fewer than the 4 workers") == 0);
  // A robust aggregator runs blocking steps on uncompressed gradients.
  TrainConfig buckets = attacked("sign-flip", 1, "median");
  buckets.buckets = true;
  CHECK(validate(buckets, 4).find("--robust-aggregation median: not with --buckets") == 0);
  TrainConfig averaged = attacked("", 0, "median");
  averaged.average_every = 2;
  CHECK(validate(averaged, 4).find("not with --average-every") != std::string::npos);
  // Only the allreduce family so far.
  TrainConfig ps = attacked("sign-flip", 1, "mean");
  ps.sync = sync_method("ps");
  CHECK(validate(ps, 4).find("--byzantine: only with an allreduce method") == 0);
}

TEST_CASE("robust training: train's command line refuses --attack without --byzantine and the reverse") {
  const CliOutcome no_f = parse_train_args({"--sync", "ring", "--attack", "sign-flip"});
  CHECK(!no_f.config);
  CHECK(no_f.exit_code == 2);
  CHECK(no_f.message.find("--attack sign-flip: needs --byzantine F > 0") != std::string::npos);
  const CliOutcome no_attack = parse_train_args({"--sync", "ring", "--byzantine", "1"});
  CHECK(!no_attack.config);
  CHECK(no_attack.message.find("--byzantine 1: needs --attack NAME") != std::string::npos);
  const CliOutcome bad = parse_train_args({"--sync", "ring", "--robust-aggregation", "krum:x"});
  CHECK(!bad.config);
  CHECK(bad.message.find("--robust-aggregation") != std::string::npos);
  const CliOutcome both = parse_train_args({"--sync", "ring", "--byzantine", "1", "--attack", "alie",
                                            "--robust-aggregation", "trimmed", "--eval-attack", "fgsm:0.1"});
  REQUIRE(both.config);
  CHECK(both.config->robust.byzantine == 1);
  CHECK(both.config->robust.attack->kind == AttackKind::alie);
  CHECK(both.config->robust.aggregation.kind == AggregatorKind::trimmed);
  CHECK(both.config->robust.aggregation.f == 1);  // B left out: --byzantine's
  CHECK(both.config->robust.eval_attack->eps == doctest::Approx(0.1));
}

TEST_CASE(
    "robust training: --list-attacks and --list-aggregators print every entry of the .def files, each parsing back") {
  struct Listing {
    const char* flag;
    std::string expected;
    std::vector<std::string> names;
  };
  std::vector<Listing> listings = {{"--list-attacks", attack_listing(), {}},
                                   {"--list-aggregators", aggregator_listing(), {}}};
#define GRADSYNC_ATTACK(id, name, parameters, target, colluding, summary) listings[0].names.emplace_back(name);
#include "attacks/attacks.def"
#undef GRADSYNC_ATTACK
#define GRADSYNC_AGGREGATOR(id, name, parameters, min_ranks, requirement, summary) listings[1].names.emplace_back(name);
#include "collectives/robust/aggregators.def"
#undef GRADSYNC_AGGREGATOR
  for (const Listing& l : listings) {
    CAPTURE(l.flag);
    const CliOutcome out = parse_train_args({l.flag});
    CHECK(!out.config);
    CHECK(out.exit_code == 0);
    CHECK(out.message == l.expected);
    std::vector<std::string> lines;
    for (std::size_t at = 0; at < out.message.size();) {
      const std::size_t end = out.message.find('\n', at);
      lines.push_back(out.message.substr(at, end - at));
      at = end + 1;
    }
    REQUIRE(lines.size() == l.names.size());
    for (std::size_t i = 0; i < lines.size(); ++i) {
      const std::string spelled = lines[i].substr(0, lines[i].find('\t'));
      CHECK(spelled.substr(0, spelled.find(':')) == l.names[i]);
      CHECK(std::count(lines[i].begin(), lines[i].end(), '\t') == (l.flag == std::string("--list-attacks") ? 3 : 2));
      // The bare name, its parameters left to their defaults (F from --byzantine), is what a user types first: it
      // parses, or (cclip, whose radius has no default) the refusal spells the parameter as the listing does.
      try {
        if (l.flag == std::string("--list-attacks"))
          parse_attack(l.names[i]);
        else
          parse_aggregator(l.names[i], 1);
      } catch (const std::invalid_argument& e) {
        CHECK(std::string(e.what()).find(spelled.substr(0, spelled.find_first_of("[,"))) != std::string::npos);
      }
    }
  }
}

TEST_CASE("robust training: every attack changes the aggregated run; a backdoor on non-square images is refused") {
  const Comm world = Comm::world();
  SKIP_UNLESS(world.size() >= 2, "needs 2 ranks (an honest worker and a malicious one)");
  const TrainTest data = test::blobs();
  const TrainResult honest = train(attacked("", 0, "median"), data, world);
  // alie with one colluder sends its honest gradient (the deviation of one sample is 0): it takes two.
  const struct {
    std::string attack;
    int byzantine;
  } runs[] = {{"label-flip", 1}, {"sign-flip", 1}, {"gaussian:0.5", 1}, {"alie", 2}, {"ipm:0.5", 1}};
  for (const auto& [attack, byzantine] : runs) {
    CAPTURE(attack);
    if (byzantine >= world.size()) continue;
    const TrainConfig c = attacked(attack, byzantine, "median");
    REQUIRE(validate(c, world.size()).empty());
    const TrainResult r = train(c, data, world);
    if (world.rank() == 0) CHECK(r.params != honest.params);  // the result is complete on rank 0
  }
  // The backdoor's trigger needs square images: blobs have 20 features, refused on every rank alike.
  CHECK_THROWS_AS(train(attacked("backdoor", 1, "median"), data, world), std::invalid_argument);
}
