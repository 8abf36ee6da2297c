#include "attacks/evasion.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace gradsync {
namespace {

float sign_of(float g) { return g > 0 ? 1.0f : g < 0 ? -1.0f : 0.0f; }

// One signed step of size `step` from the gradient at batch.rows, then the clip to [lo, hi] per pixel.
void signed_step(const Model& model, std::span<const float> params, Batch& batch, float step, Workspace& ws,
                 EvasionScratch& s, const float* center, float radius) {
  const std::size_t count = batch.size * batch.features;
  const std::span<float> grad(s.grad.data(), count);
  model.input_gradient(params, batch, grad, ws);
  for (std::size_t k = 0; k < count; ++k) {
    const float lo = center ? std::max(0.0f, center[k] - radius) : 0.0f;
    const float hi = center ? std::min(1.0f, center[k] + radius) : 1.0f;
    batch.rows[k] = std::clamp(batch.rows[k] + step * sign_of(grad[k]), lo, hi);
  }
}

}  // namespace

EvasionSpec parse_evasion(std::string_view text) {
  EvasionSpec spec;
  spec.text = std::string(text);
  const auto refuse = [&](std::string_view why) {
    throw std::invalid_argument(fmt::format("evasion attack '{}': {} (fgsm:EPS or pgd:EPS,STEPS)", text, why));
  };
  const std::size_t colon = text.find(':');
  const std::string_view name = text.substr(0, colon);
  if (name == "pgd")
    spec.kind = EvasionSpec::Kind::pgd;
  else if (name != "fgsm")
    refuse(fmt::format("unknown attack '{}'", name));
  if (colon == std::string_view::npos) refuse("needs EPS");
  const std::string_view rest = text.substr(colon + 1);
  const std::size_t comma = rest.find(',');
  const std::string_view eps = rest.substr(0, comma);
  const auto [end, ec] = std::from_chars(eps.data(), eps.data() + eps.size(), spec.eps);
  if (ec != std::errc() || end != eps.data() + eps.size() || !(spec.eps > 0 && spec.eps <= 1))
    refuse(fmt::format("EPS must be a number in (0, 1], not '{}'", eps));
  if (spec.kind == EvasionSpec::Kind::fgsm && comma != std::string_view::npos) refuse("fgsm takes EPS only");
  if (spec.kind == EvasionSpec::Kind::pgd) {
    if (comma == std::string_view::npos) refuse("pgd needs STEPS");
    const std::string_view steps = rest.substr(comma + 1);
    const auto [e2, ec2] = std::from_chars(steps.data(), steps.data() + steps.size(), spec.steps);
    if (ec2 != std::errc() || e2 != steps.data() + steps.size() || spec.steps < 1)
      refuse(fmt::format("STEPS must be a whole number >= 1, not '{}'", steps));
  }
  return spec;
}

EvasionScratch::EvasionScratch(const Model& model, std::size_t max_batch)
    : grad(max_batch * model.input_features()), clean(max_batch * model.input_features()) {}

void fgsm(const Model& model, std::span<const float> params, Batch& batch, float eps, Workspace& ws,
          EvasionScratch& scratch) {
  signed_step(model, params, batch, eps, ws, scratch, nullptr, 0);
}

void pgd(const Model& model, std::span<const float> params, Batch& batch, float eps, int steps, Workspace& ws,
         EvasionScratch& scratch) {
  const std::size_t count = batch.size * batch.features;
  std::copy_n(batch.rows.begin(), count, scratch.clean.begin());
  const float alpha = 2.5f * eps / static_cast<float>(steps);
  for (int t = 0; t < steps; ++t) signed_step(model, params, batch, alpha, ws, scratch, scratch.clean.data(), eps);
}

Evaluation evaluate_under_attack(const Model& model, std::span<const float> params, const Dataset& data,
                                 const EvasionSpec& spec, Workspace& ws) {
  const std::size_t batch_max = ws.max_batch();
  Batch batch(batch_max, data.features);
  EvasionScratch scratch(model, batch_max);
  std::vector<std::uint32_t> indices(batch_max);
  std::vector<std::uint8_t> correct(batch_max);
  double loss = 0;
  std::size_t right = 0;
  for (std::size_t start = 0; start < data.rows; start += batch_max) {
    const std::size_t n = std::min(batch_max, data.rows - start);
    std::iota(indices.begin(), indices.begin() + static_cast<std::ptrdiff_t>(n), static_cast<std::uint32_t>(start));
    gather_batch(data, {indices.data(), n}, batch, true);
    if (spec.kind == EvasionSpec::Kind::fgsm)
      fgsm(model, params, batch, spec.eps, ws, scratch);
    else
      pgd(model, params, batch, spec.eps, spec.steps, ws, scratch);
    const std::span<std::uint8_t> flags(correct.data(), n);
    loss +=
        static_cast<double>(model.input_gradient(params, batch, {scratch.grad.data(), n * data.features}, ws, flags)) *
        static_cast<double>(n);
    right += static_cast<std::size_t>(std::count(flags.begin(), flags.end(), std::uint8_t{1}));
  }
  const auto rows = static_cast<double>(std::max<std::size_t>(data.rows, 1));
  return {loss / rows, static_cast<double>(right) / rows};
}

}  // namespace gradsync
