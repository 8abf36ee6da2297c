// dp_epsilon: the (epsilon, delta) DP-SGD spends, from its noise multiplier, sampling rate and step count, without
// training (privacy/rdp_accountant.hpp). Either --sample-rate and --steps, or --batch, --examples and --epochs
// (rate batch / examples, floor(examples / batch) steps an epoch, as a data loader that drops the last partial batch).
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdint>
#include <exception>
#include <map>
#include <string>

#include "privacy/rdp_accountant.hpp"

int main(int argc, char** argv) {
  CLI::App app{"Prints the epsilon of DP-SGD (RDP accountant of the sampled Gaussian mechanism)"};
  double noise = 0, rate = 0, delta = 1e-5;
  std::uint64_t steps = 0, batch = 0, examples = 0, epochs = 0;
  std::string orders = "opacus";
  gradsync::RdpConversion conversion = gradsync::RdpConversion::improved;
  app.add_option("--noise", noise, "noise multiplier sigma (the noise's standard deviation over the clip norm)")
      ->required()
      ->check(CLI::PositiveNumber);
  auto* rate_opt = app.add_option("--sample-rate", rate, "probability that an example is in a step's batch")
                       ->check(CLI::Range(0.0, 1.0));
  auto* steps_opt = app.add_option("--steps", steps, "steps taken");
  auto* batch_opt =
      app.add_option("--batch", batch, "expected batch size (with --examples and --epochs)")->check(CLI::PositiveNumber);
  auto* examples_opt = app.add_option("--examples", examples, "training examples")->check(CLI::PositiveNumber);
  auto* epochs_opt = app.add_option("--epochs", epochs, "epochs");
  app.add_option("--delta", delta, "delta")->check(CLI::Range(0.0, 1.0));
  app.add_option("--orders", orders, "Renyi orders tried: opacus (1.1..10.9, 12..63) or tf (TF Privacy's list)")
      ->check(CLI::IsMember({"opacus", "tf"}));
  app.add_option("--conversion", conversion, "RDP to (epsilon, delta): improved (Balle et al. 2020) or classic")
      ->transform(CLI::CheckedTransformer(std::map<std::string, gradsync::RdpConversion>{
          {"improved", gradsync::RdpConversion::improved}, {"classic", gradsync::RdpConversion::classic}}));
  rate_opt->needs(steps_opt)->excludes(batch_opt);
  steps_opt->needs(rate_opt);
  batch_opt->needs(examples_opt)->needs(epochs_opt);
  epochs_opt->needs(batch_opt);
  CLI11_PARSE(app, argc, argv);
  if (!rate_opt->count() && !batch_opt->count()) {
    fmt::print(stderr, "dp_epsilon: give --sample-rate with --steps, or --batch with --examples and --epochs\n");
    return 2;
  }
  if (batch_opt->count()) {
    if (batch > examples) {
      fmt::print(stderr, "dp_epsilon: --batch {} is more than --examples {}\n", batch, examples);
      return 2;
    }
    rate = static_cast<double>(batch) / static_cast<double>(examples);
    steps = epochs * (examples / batch);
  }
  try {
    const auto spent =
        gradsync::dp_sgd_epsilon(rate, noise, steps, delta,
                                 orders == "tf" ? gradsync::tf_privacy_orders() : gradsync::opacus_orders(), conversion);
    fmt::print(
        "epsilon {:.4f} at delta {:g} (best order {:g}; sigma {:g}, sample rate {:.6g}, {} steps, {} "
        "conversion, {} orders)\n",
        spent.epsilon, delta, spent.order, noise, rate, steps, gradsync::conversion_name(conversion), orders);
  } catch (const std::exception& e) {
    fmt::print(stderr, "dp_epsilon: {}\n", e.what());
    return 2;
  }
  return 0;
}
