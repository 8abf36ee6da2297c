#include "bench/flags/leak_images_flags.hpp"

#include "bench/flags/command_line.hpp"

namespace gradsync::bench {

std::optional<int> parse_leak_images_flags(int argc, char** argv, LeakImagesFlags& f, bool lead) {
  CLI::App app{
      "leak_images: reconstructs one worker's training images from what it puts on the wire (issue 56): "
      "x = dW_i / db_i of the first dense layer's rows; one CSV row, and picture grids"};
  app.add_option("--model", f.model, "softmax, mlp, 2nn or cnn (the cnn leaks its dense layer's input features)")
      ->capture_default_str();
  app.add_option("--hidden", f.hidden, "the mlp's hidden widths")->delimiter(',')->capture_default_str();
  app.add_option("--data", f.data, "folder of the MNIST IDX files, as train's --data")->capture_default_str();
  app.add_option("--batch", f.batch, "examples of the attacked worker's batch")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1}, std::size_t{60000}));
  app.add_option("--steps", f.steps,
                 "SGD steps of --lr on other batches before the attacked one (0: the seed's "
                 "initial model)")
      ->capture_default_str();
  app.add_option("--wire", f.wire,
                 "what goes on the wire: plain, bf16, topk:F, sign, powersgd:R, dp:SIGMA, masked (needs P >= 2 ranks), "
                 "masked-sum:P (P ranks), fedavg:E")
      ->capture_default_str();
  app.add_option("--seed", f.seed, "the model's initialization and the batch's choice")->capture_default_str();
  app.add_option("--lr", f.lr, "learning rate of --steps and of fedavg's local epochs")->capture_default_str();
  app.add_option("--local-batch", f.local_batch, "fedavg's local batch")->capture_default_str();
  app.add_option("--dp-clip", f.dp_clip, "dp: per-example clip norm C")->capture_default_str();
  app.add_option("--dp-workers", f.dp_workers,
                 "dp: workers sharing the noise (this worker adds sigma C / sqrt(P) of it); 1 = all of it")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--sa-range", f.sa_range, "masked: secure aggregation's fixed-point range R")->capture_default_str();
  app.add_option("--threshold", f.threshold, "rows used: |db_i| above this times the largest |db|")
      ->capture_default_str();
  app.add_option("--psnr", f.psnr, "recovered: best PSNR (dB) at least this")->capture_default_str();
  app.add_option("--csv", f.csv, "append the result row here (with a header if the file is new)");
  app.add_option("--picture", f.picture, "PGM: originals (top row) above their best reconstructions");
  app.add_option("--strip", f.strip, "PGM: the best reconstructions alone, one row (for stacking pictures)");
  app.add_option("--originals", f.originals, "PGM: the originals alone, one row");
  app.add_option("--picture-max", f.picture_max, "images drawn at most")->capture_default_str();
  return parse_command_line(app, "leak_images", argc, argv, lead);
}

}  // namespace gradsync::bench
