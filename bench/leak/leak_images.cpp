// leak_images: what an eavesdropper, a ring neighbour or the server learns of one worker's training images from what
// it puts on the wire (issue 56, "the leak, shown"). The worker's gradient is computed as train computes it
// (Model::loss_and_gradient on its batch, at the seed's initial model or after --steps of SGD), passed through
// --wire, and the first dense layer's rows are inverted (privacy/leak.hpp: x = dW_i / db_i). Each original is
// scored by its best reconstruction's PSNR; one CSV row and PGM pictures. Counts images, times nothing.
// Rank r attacks its own batch (examples r B .. (r + 1) B - 1 of the seed's permutation); rank 0 reports. One rank,
// except masked (any P >= 2 ranks: rank 0's masked vector) and masked-sum:P (P ranks: the aggregate, scored
// against all P B images).
#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <vector>

#include "bench/flags/leak_images_flags.hpp"
#include "bench/leak/cnn_features.hpp"
#include "bench/leak/picture.hpp"
#include "bench/leak/wire.hpp"
#include "collectives/comm.hpp"
#include "cpu/isa.hpp"
#include "model/kernels/blis_setup.hpp"
#include "model/models.hpp"
#include "model/rng.hpp"
#include "model/sgd.hpp"
#include "privacy/leak.hpp"

namespace gradsync::bench {
namespace {

// How a leaked vector is drawn: an image's pixels as they are; the CNN's pooled maps (channels of k x k) tiled
// side by side in a square of channels.
struct CellShape {
  std::size_t width = 0, height = 0, channels = 1, channel_side = 0;
  std::vector<float> arrange(std::span<const float> v) const {
    if (channels == 1) return {v.begin(), v.end()};
    std::vector<float> out(width * height);
    const std::size_t across = width / channel_side;
    for (std::size_t c = 0; c < channels; ++c)
      for (std::size_t y = 0; y < channel_side; ++y)
        for (std::size_t x = 0; x < channel_side; ++x)
          out[((c / across) * channel_side + y) * width + (c % across) * channel_side + x] =
              v[(c * channel_side + y) * channel_side + x];
    return out;
  }
};

// The examples' float pixels, count x features.
std::vector<float> pixels_of(const Dataset& data, std::span<const std::uint32_t> indices) {
  std::vector<float> out(indices.size() * data.features);
  for (std::size_t n = 0; n < indices.size(); ++n)
    widen_row(data.pixels.data() + std::size_t{indices[n]} * data.features, data.features,
              out.data() + n * data.features);
  return out;
}

void write_csv_row(const std::string& path, const std::string& row) {
  const bool fresh = !std::filesystem::exists(path) || std::filesystem::file_size(path) == 0;
  std::ofstream out(path, std::ios::app);
  if (fresh)
    out << "model,batch,wire,rows_used,recovered,best_psnr_mean,images,chance_psnr_mean,psnr_threshold,steps,seed\n";
  out << row << '\n';
  if (!out) throw std::runtime_error(fmt::format("cannot write {}", path));
}

int run(int argc, char** argv, const Comm& world) {
  LeakImagesFlags f;
  if (const auto code = parse_leak_images_flags(argc, argv, f, world.rank() == 0)) return *code;
  std::string problem;
  const std::optional<Wire> wire = parse_wire(f.wire, problem);
  if (!wire) throw std::invalid_argument(problem);
  if (!wire->needs_ranks() && world.size() != 1)
    throw std::invalid_argument(fmt::format("wire '{}' is one worker's: run on one rank", f.wire));

  const TrainTest data = load_idx_dataset(f.data);
  const Dataset& train = data.train;
  const ModelInfo& info = model_info(f.model);
  if (info.check)
    if (const std::string why = info.check(train.features); !why.empty()) throw std::invalid_argument(why);
  const std::unique_ptr<Model> model = info.make(f.hidden, train.features, static_cast<std::size_t>(train.classes));
  const bool cnn = f.model == "cnn";
  const LayerShape dense = model->layers()[cnn ? 2 : 0];

  const std::size_t b = f.batch, p = static_cast<std::size_t>(world.size());
  if ((p + 1) * b + 256 > train.rows) throw std::invalid_argument("the batch is too large for the dataset");
  std::vector<std::uint32_t> perm(train.rows);
  shuffled_indices(perm, f.seed, 0);
  std::vector<float> params(model->parameter_count()), grads(params.size());
  model->init(params, f.seed);
  Workspace ws(*model, b);
  Batch batch(b, train.features);
  // --steps: SGD on batches after every rank's attacked one (the same on every rank, as a synchronized model is).
  Sgd sgd(SgdOptions{.lr = f.lr}, params.size());
  for (std::size_t s = 0, next = p * b; s < f.steps; ++s, next += b) {
    if (next + b > train.rows) next = p * b;
    gather_batch(train, std::span(perm).subspan(next, b), batch, true);
    model->loss_and_gradient(params, batch, grads, ws);
    sgd.step(params, grads);
  }
  const std::span<const std::uint32_t> mine = std::span(perm).subspan(world.rank() * b, b);
  gather_batch(train, mine, batch, true);
  const WireSettings settings{.dp_clip = f.dp_clip,
                              .dp_workers = f.dp_workers,
                              .sa_range = f.sa_range,
                              .lr = f.lr,
                              .local_batch = f.local_batch,
                              .seed = f.seed};
  const std::vector<float> sent = wire_vector(*wire, settings, *model, params, train, mine, batch, ws, world);
  if (world.rank() != 0) return 0;

  // The originals: this worker's images, or every worker's for the aggregate; for the CNN their dense-layer inputs.
  const std::size_t count = wire->kind == WireKind::masked_sum ? p * b : b;
  const std::span<const std::uint32_t> attacked = std::span(perm).first(count);
  const std::span<const std::uint32_t> others = std::span(perm).subspan(p * b, cnn ? 32 : 256);
  std::vector<float> originals = pixels_of(train, attacked), unrelated = pixels_of(train, others);
  CellShape cell{.width = 28, .height = train.features / 28};
  double peak = 1;
  if (cnn) {
    const auto& cs = static_cast<const Cnn&>(*model).shape();
    originals = cnn_dense_inputs(static_cast<const Cnn&>(*model), params, originals, count);
    unrelated = cnn_dense_inputs(static_cast<const Cnn&>(*model), params, unrelated, others.size());
    peak = *std::max_element(originals.begin(), originals.end());
    const auto across = static_cast<std::size_t>(std::ceil(std::sqrt(static_cast<double>(cs.channels2))));
    cell = {.width = across * cs.side / 4,
            .height = across * cs.side / 4,
            .channels = cs.channels2,
            .channel_side = cs.side / 4};
  }
  const std::vector<Reconstruction> recs = reconstruct_inputs(sent, dense, f.threshold);
  const LeakScore score = score_reconstructions(recs, originals, dense.inputs, f.psnr, peak);
  // The floor: each original's nearest unrelated training example, as if it were a reconstruction.
  std::vector<Reconstruction> guesses(others.size());
  for (std::size_t n = 0; n < others.size(); ++n)
    guesses[n].x.assign(unrelated.begin() + static_cast<std::ptrdiff_t>(n * dense.inputs),
                        unrelated.begin() + static_cast<std::ptrdiff_t>((n + 1) * dense.inputs));
  double chance_sum = 0;
  for (std::size_t n = 0; n < count; ++n) {
    double best = -std::numeric_limits<double>::infinity();
    for (const Reconstruction& g : guesses)
      best = std::max(best, psnr_db(g.x, std::span(originals).subspan(n * dense.inputs, dense.inputs), peak));
    chance_sum += best;
  }
  const double chance_mean = chance_sum / static_cast<double>(count);

  fmt::print(
      "leak_images: {} ({}), batch {}, wire {}: {} rows used of {}, {} of {} {} recovered (PSNR >= {} dB), "
      "best PSNR mean {:.1f} dB; nearest unrelated example {:.1f} dB\n",
      f.model, model->describe(), b, f.wire, score.rows_used, dense.outputs, score.recovered, count,
      cnn ? "feature vectors" : "images", f.psnr, score.best_psnr_mean, chance_mean);
  if (!f.csv.empty())
    write_csv_row(f.csv, fmt::format("{},{},{},{},{},{:.2f},{},{:.2f},{},{},{}", f.model, b, f.wire, score.rows_used,
                                     score.recovered, score.best_psnr_mean, count, chance_mean, f.psnr, f.steps, f.seed));
  const std::size_t shown = std::min(count, f.picture_max);
  const std::vector<float> blank(dense.inputs, 0.0f);
  auto best_of = [&](std::size_t n) -> std::span<const float> {
    return score.best_row[n] < 0 ? std::span<const float>(blank) : std::span<const float>(recs[score.best_row[n]].x);
  };
  auto original = [&](std::size_t n) {
    return std::span<const float>(originals).subspan(n * dense.inputs, dense.inputs);
  };
  if (!f.picture.empty()) {
    PictureGrid grid(2, shown, cell.width, cell.height);
    for (std::size_t n = 0; n < shown; ++n) {
      grid.draw(0, n, cell.arrange(original(n)), peak);
      grid.draw(1, n, cell.arrange(best_of(n)), peak);
    }
    grid.write_pgm(f.picture);
  }
  if (!f.strip.empty()) {
    PictureGrid grid(1, shown, cell.width, cell.height);
    for (std::size_t n = 0; n < shown; ++n) grid.draw(0, n, cell.arrange(best_of(n)), peak);
    grid.write_pgm(f.strip);
  }
  if (!f.originals.empty()) {
    PictureGrid grid(1, shown, cell.width, cell.height);
    for (std::size_t n = 0; n < shown; ++n) grid.draw(0, n, cell.arrange(original(n)), peak);
    grid.write_pgm(f.originals);
  }
  return 0;
}

}  // namespace
}  // namespace gradsync::bench

int main(int argc, char** argv) {
  gradsync::refuse_bad_isa_request("leak_images");
  gradsync::configure_blis(1);  // before MPI_Init, as in train
  MPI_Init(&argc, &argv);
  int code = 0;
  {
    const gradsync::Comm world = gradsync::Comm::world();
    try {
      code = gradsync::bench::run(argc, argv, world);
    } catch (const std::exception& e) {
      fmt::print(stderr, "leak_images: error on rank {}: {}\n", world.rank(), e.what());
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  MPI_Finalize();
  return code;
}
