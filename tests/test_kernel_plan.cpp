// The kernel plan: every set computes the model's GEMMs correctly, plans survive their text form, a user's
// BLIS_ARCH_TYPE wins, every rank runs rank 0's plan, and a data-parallel run on a plan that mixes kernel sets and
// the byte kernels keeps its replicas bit-identical and equal to serial SGD.
#include <blis.h>
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "collectives/comm.hpp"
#include "model/kernels/blis_setup.hpp"
#include "model/kernels/byte_gemm.hpp"
#include "model/kernels/gemm.hpp"
#include "model/kernels/installed_plan.hpp"
#include "model/kernels/kernel_sets.hpp"
#include "model/kernels/plan_cache.hpp"
#include "model/kernels/plan_timing.hpp"
#include "model/mlp.hpp"
#include "model/sgd.hpp"
#include "model/synthetic.hpp"
#include "test_support.hpp"
#include "trainers/loop/agreed_kernel_plan.hpp"
#include "trainers/loop/make_synchronizer.hpp"
#include "trainers/loop/trainer.hpp"

using namespace gradsync;

namespace {

// A plan for `shapes` that cycles through `sets`, starting at `first`: shapes that follow each other in a step
// run on different sets.
KernelPlan cycling_plan(const std::vector<GemmShape>& shapes, const std::vector<std::string>& sets, std::size_t first) {
  KernelPlan plan;
  plan.source = "test";
  for (std::size_t i = 0; i < shapes.size(); ++i)
    if (!plan.find(shapes[i])) plan.gemms.push_back({shapes[i], sets[(first + i) % sets.size()], {}});
  return plan;
}

std::size_t text_hash(const Comm& world, const std::string& text, bool* all_equal) {
  const auto h = static_cast<long long>(std::hash<std::string>{}(text) >> 1);
  long long lo = 0, hi = 0;
  MPI_Allreduce(&h, &lo, 1, MPI_LONG_LONG, MPI_MIN, world.native());
  MPI_Allreduce(&h, &hi, 1, MPI_LONG_LONG, MPI_MAX, world.native());
  *all_equal = lo == hi;
  return static_cast<std::size_t>(h);
}

}  // namespace

TEST_CASE("every kernel set this CPU runs computes the model's GEMMs to float accuracy" *
          doctest::test_suite("needs_kernel_sets")) {
  const std::vector<std::string>& sets = configured_blis().kernel_sets;
  MESSAGE("kernel sets that run here: " << fmt::format("{}", fmt::join(sets, ", ")));
  SKIP_UNLESS(!sets.empty() && per_call_contexts_available(), test::kNoKernelSet);
  CHECK(kernel_set_context(configured_blis().arch) != nullptr);  // the process's own set has a context too
  std::vector<GemmShape> shapes = Mlp({784, 128, 10}).planned_gemms(32);
  shapes.push_back({false, false, 300, 40, 1000});  // cut into row blocks, a ragged last one
  for (const GemmShape& g : shapes) {
    const std::size_t lda = g.transpose_a ? g.m : g.k, ldb = g.transpose_b ? g.k : g.n;
    std::vector<float> a(g.m * g.k), b(g.k * g.n);
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>((i * 7919) % 97) / 97.0f - 0.5f;
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>((i * 104729) % 89) / 89.0f - 0.5f;
    std::vector<double> want(g.m * g.n, 0.0);
    for (std::size_t i = 0; i < g.m; ++i)
      for (std::size_t p = 0; p < g.k; ++p) {
        const double aip = g.transpose_a ? a[p * lda + i] : a[i * lda + p];
        for (std::size_t j = 0; j < g.n; ++j)
          want[i * g.n + j] += aip * (g.transpose_b ? b[j * ldb + p] : b[p * ldb + j]);
      }
    for (const std::string& set : sets) {
      std::vector<float> c(g.m * g.n, 1.0f);
      gemm_in_row_blocks(g.transpose_a ? Op::T : Op::N, g.transpose_b ? Op::T : Op::N, g.m, g.n, g.k, 1.0f, a.data(), lda,
                         b.data(), ldb, 0.0f, c.data(), g.n, kernel_set_context(set), [] {});
      double worst = 0;
      for (std::size_t i = 0; i < c.size(); ++i) worst = std::max(worst, std::fabs(c[i] - want[i]));
      CAPTURE(set);
      CAPTURE(g.m);
      CAPTURE(g.n);
      CAPTURE(g.k);
      CHECK(worst < 1e-5 * static_cast<double>(g.k));
    }
  }
}

TEST_CASE("a kernel plan survives its text form, and a damaged one is refused whole") {
  KernelPlan plan;
  plan.gemms.push_back({{false, false, 128, 32, 784}, "skx", {{"skx", 1.5e-5}, {"zen3", 2.5e-5}}});
  plan.gemms.push_back({{false, true, 10, 128, 32}, "zen3", {}});
  plan.gemms.push_back({{true, false, 128, 32, 10}, "haswell", {{"haswell", 3e-6}}});
  const auto back = KernelPlan::from_text(plan.to_text());
  REQUIRE(back);
  REQUIRE(back->gemms.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK(back->gemms[i].shape == plan.gemms[i].shape);
    CHECK(back->gemms[i].kernels == plan.gemms[i].kernels);
    CHECK(back->gemms[i].seconds.size() == plan.gemms[i].seconds.size());
  }
  CHECK(back->find({false, true, 10, 128, 32})->kernels == "zen3");
  CHECK(back->find({false, false, 10, 128, 32}) == nullptr);
  CHECK(back->gemms[0].seconds_of("zen3") == doctest::Approx(2.5e-5));
  CHECK(back->fallback.empty());
  plan.fallback = "zen2";
  CHECK(KernelPlan::from_text(plan.to_text())->fallback == "zen2");
  for (const char* bad : {"nn 128 32 skx\n", "xn 1 2 3 skx\n", "nn 1 2 3 nosuchset\n", "nn 0 2 3 skx\n",
                          "nn 1 2 3 skx zen3=fast\n", "nn 1 2 3 skx\nnn 1 2 3 zen3\n", "nn 1 2 3 skx bogus=1e-5\n",
                          "default\n", "default bytes\n", "default zen3 skx\n", "default zen3\ndefault zen2\n"}) {
    CAPTURE(bad);
    CHECK_FALSE(KernelPlan::from_text(bad));
  }
}

TEST_CASE("a user's BLIS_ARCH_TYPE puts every shape on the user's kernels") {
  BlisConfig user = configured_blis();
  user.user_arch = true;
  const std::vector<GemmShape> shapes = Mlp({784, 128, 10}).planned_gemms(32);
  const KernelPlan plan = make_kernel_plan(shapes, user);
  CHECK(plan.gemms.empty());
  CHECK(plan.source.find("BLIS_ARCH_TYPE") != std::string::npos);
  if (configured_blis().user_arch) CHECK(installed_kernel_plan().gemms.empty());
}

TEST_CASE("the products that read one batch are chosen together, the batch's widening into floats counted once") {
  // Softmax regression at batch 256: the forward product and the weight gradient read the batch; evaluation's
  // forward product reads batches of 1000; the output layer's products read no batch.
  const GemmShape forward{false, true, 10, 256, 784, true}, gradient{false, false, 10, 784, 256, true},
      evaluation{false, true, 10, 1000, 784, true}, other{false, false, 10, 256, 128};
  const auto plan_of = [&](double gradient_on_zen3) {
    KernelPlan plan;
    plan.gemms.push_back({forward, "bytes", {{"zen3", 50e-6}, {"skx", 120e-6}, {"bytes", 38e-6}}});
    plan.gemms.push_back({gradient, "zen3", {{"zen3", gradient_on_zen3}, {"skx", 80e-6}, {"bytes", 39e-6}}});
    plan.gemms.push_back({evaluation, "bytes", {{"zen3", 190e-6}, {"bytes", 150e-6}}});
    plan.gemms.push_back({other, "zen3", {{"zen3", 5e-6}, {"skx", 9e-6}}});
    return plan;
  };
  std::vector<std::pair<std::size_t, std::size_t>> asked;
  const auto widen = [&asked](double seconds) {
    return [&asked, seconds](std::size_t examples, std::size_t features) {
      asked.emplace_back(examples, features);
      return seconds;
    };
  };
  // zen3 3% faster on the gradient alone, but reading floats costs their widening: both on bytes.
  KernelPlan plan = plan_of(37.8e-6);
  choose_batch_products_together(plan, "zen3", widen(10e-6));
  CHECK(plan.find(forward)->kernels == "bytes");
  CHECK(plan.find(gradient)->kernels == "bytes");
  CHECK(plan.find(evaluation)->kernels == "bytes");
  CHECK(plan.find(other)->kernels == "zen3");  // reads no batch: untouched
  CHECK(asked == std::vector<std::pair<std::size_t, std::size_t>>{{256, 784}, {1000, 784}});
  // A widening cheaper than what zen3 saves on the gradient: the gradient reads floats.
  plan = plan_of(30e-6);
  choose_batch_products_together(plan, "zen3", widen(1e-6));
  CHECK(plan.find(forward)->kernels == "bytes");
  CHECK(plan.find(gradient)->kernels == "zen3");
  // Once floats are written anyway, the forward product goes to BLIS too where that is faster, though on its own
  // (37.5 us and the widening against 38 us) it would have stayed on bytes.
  plan = plan_of(10e-6);
  plan.gemms[0].seconds[0].second = 37.5e-6;
  choose_batch_products_together(plan, "zen3", widen(1e-6));
  CHECK(plan.find(forward)->kernels == "zen3");
  CHECK(plan.find(gradient)->kernels == "zen3");
  // The BLIS pick keeps the default set within kPlanMargin: skx 5% faster than zen3 does not take the gradient.
  plan = plan_of(10e-6);
  plan.gemms[1].seconds[1].second = 9.5e-6;
  choose_batch_products_together(plan, "zen3", widen(1e-6));
  CHECK(plan.find(gradient)->kernels == "zen3");
}

TEST_CASE(
    "a kernel plan is measured once and then read from its cache; a cache under another key, or cut short, is not read" *
    doctest::test_suite("needs_kernel_sets")) {
  const BlisConfig& blis = configured_blis();
  SKIP_UNLESS(!blis.user_arch, "BLIS_ARCH_TYPE is set: the user's set runs every shape, no plan is measured");
  SKIP_UNLESS(blis.kernel_sets.size() >= 2 && per_call_contexts_available(), test::kNoSecondKernelSet);
  // This case's own cache directory; the suite's comes back when the case ends, however it ends.
  struct CacheDir {
    std::filesystem::path dir = test::temp_dir("kernel-cache", Comm::world().rank());
    const char* outer = std::getenv("GRADSYNC_KERNEL_CACHE");
    std::string outer_value = outer ? outer : "";
    CacheDir() { setenv("GRADSYNC_KERNEL_CACHE", dir.c_str(), 1); }
    ~CacheDir() {
      if (outer)
        setenv("GRADSYNC_KERNEL_CACHE", outer_value.c_str(), 1);
      else
        unsetenv("GRADSYNC_KERNEL_CACHE");
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  } cache;
  const std::filesystem::path& dir = cache.dir;
  const std::vector<GemmShape> shapes = Mlp({20, 16, 4}).planned_gemms(4);
  const auto file = kernel_cache_file(blis);
  REQUIRE(file);
  CHECK(file->parent_path() == dir);
  const auto measured = [](const KernelPlan& p) { return p.source.rfind("measured", 0) == 0; };

  const KernelPlan first = make_kernel_plan(shapes, blis);
  CHECK(measured(first));
  const KernelPlan again = make_kernel_plan(shapes, blis);
  CHECK(again.source == "cached in " + file->string());
  CHECK(again.to_text() == first.to_text());
  std::vector<GemmShape> more = shapes;
  more.push_back({false, false, 7, 5, 3});
  CHECK(make_kernel_plan(more, blis).source.rfind("measured 1 of", 0) == 0);  // only the new shape
  CHECK(make_kernel_plan(more, blis).source.rfind("cached in", 0) == 0);

  const auto rewrite = [&file](const std::function<std::string(std::string)>& change) {
    std::stringstream text;
    text << std::ifstream(*file).rdbuf();
    std::ofstream(*file) << change(text.str());
  };
  rewrite([](std::string text) {  // written for another CPU, BLIS or build
    const auto key = text.find(" cpu=") + 5;
    return text.insert(key, "another ");
  });
  CHECK(measured(make_kernel_plan(shapes, blis)));
  // Cut short at the end of a line: every line left parses, and the plan is still whole; only the end mark is gone.
  rewrite([](std::string text) { return text.substr(0, text.rfind("# end\n")); });
  CHECK(measured(make_kernel_plan(shapes, blis)));
  CHECK(make_kernel_plan(shapes, blis).source.rfind("cached in", 0) == 0);
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir)) ++files;
  CHECK(files == 1);  // no temp file left behind
  // Builds of two plan formats on one machine keep a file each (the format's version is in the key).
  CHECK(kernel_cache_key(blis).rfind("plan=v", 0) == 0);
}

TEST_CASE("a plan naming a kernel set this machine cannot run is refused, and the plan in force stays") {
  test::RestorePlan restore;
  const std::string before = installed_kernel_plan().to_text();
  KernelPlan plan;
  plan.gemms.push_back({{false, false, 16, 4, 20}, "bulldozer", {}});  // in BLIS's list, never probed here
  CHECK_THROWS_AS(install_kernel_plan(plan, configured_blis()), std::invalid_argument);
  CHECK(installed_kernel_plan().to_text() == before);
}

TEST_CASE(
    "without per-call contexts (BLIS's shared library) every shape runs on the process's kernels, and the plan says "
    "why" *
    doctest::test_suite("needs_blis_shared")) {
  test::RestorePlan restore;
  const BlisConfig& blis = configured_blis();
  SKIP_UNLESS(!per_call_contexts_available(),
              "BLIS is linked statically, with per-call contexts; a -DGRADSYNC_BLIS_SHARED=ON build checks this");
  const std::vector<GemmShape> shapes = Mlp({20, 16, 4}).planned_gemms(4);
  const KernelPlan plan = make_kernel_plan(shapes, blis);
  CHECK(plan.gemms.empty());
  if (!blis.user_arch) CHECK(plan.source.find("shared library") != std::string::npos);
  CHECK(kernel_set_context(blis.arch) == nullptr);
  // The process's own set runs without a context; any other set would need one.
  KernelPlan own;
  own.gemms.push_back({shapes.front(), blis.arch, {}});
  install_kernel_plan(own, blis);
  CHECK(planned_context(shapes.front()) == nullptr);
  for (const std::string& other : blis.kernel_sets) {
    if (other == blis.arch) continue;
    KernelPlan naming_another;
    naming_another.gemms.push_back({shapes.front(), other, {}});
    CAPTURE(other);
    CHECK_THROWS_AS(install_kernel_plan(naming_another, blis), std::invalid_argument);
  }
}

TEST_CASE("every rank runs rank 0's kernel plan, though each rank would have picked its own" *
          doctest::test_suite("needs_kernel_sets")) {
  test::RestorePlan restore;
  const Comm world = Comm::world();
  const std::vector<std::string>& sets = configured_blis().kernel_sets;
  SKIP_UNLESS(sets.size() >= 2 && per_call_contexts_available(), test::kNoSecondKernelSet);
  const std::vector<GemmShape> shapes = Mlp({20, 16, 4}).planned_gemms(4);
  // What independent choices give: each rank its own plan (the check below is not vacuous).
  install_kernel_plan(cycling_plan(shapes, sets, static_cast<std::size_t>(world.rank())), configured_blis());
  bool equal = true;
  text_hash(world, installed_kernel_plan().to_text(), &equal);
  if (world.size() > 1) CHECK_FALSE(equal);

  const KernelPlan adopted = install_agreed_kernel_plan(world, shapes);
  text_hash(world, installed_kernel_plan().to_text(), &equal);
  CHECK(equal);
  CHECK(installed_kernel_plan().gemms.size() == shapes.size());
  for (const GemmShape& g : shapes) {
    CAPTURE(g.m);
    CHECK(planned_context(g) == kernel_set_context(adopted.find(g)->kernels));
  }
}

TEST_CASE(
    "a run on a plan that mixes kernel sets and the byte kernels keeps its replicas bit-identical and equals serial "
    "SGD" *
    doctest::test_suite("needs_kernel_sets")) {
  test::RestorePlan restore;
  const Comm world = Comm::world();
  const std::vector<std::string>& sets = configured_blis().kernel_sets;
  SKIP_UNLESS(sets.size() >= 2 && per_call_contexts_available(), test::kNoSecondKernelSet);
  const TrainTest data = test::blobs();
  TrainConfig c;
  c.sync = sync_method("ring");
  c.model = &model_info("mlp");
  c.hidden = {8};  // few enough outputs for the byte kernels
  c.epochs = 1;
  c.batch = 4;
  c.sgd.lr = 0.2f;
  c.seed = 3;
  c.iterations_per_epoch = 24;
  const std::unique_ptr<Model> owned = make_model(c, 20, 4);
  const Model& model = *owned;
  const std::size_t workers = static_cast<std::size_t>(world.size());
  std::vector<GemmShape> shapes = model.planned_gemms(c.batch);
  for (const GemmShape& g : model.planned_gemms(c.batch * workers)) shapes.push_back(g);  // the serial reference's
  KernelPlan mixed = cycling_plan(shapes, sets, 0);
  for (PlannedGemm& g : mixed.gemms)
    if (g.shape.batch_operand && byte_gemm_vectorized()) g.kernels = "bytes";  // the input layer reads bytes
  install_kernel_plan(mixed, configured_blis());                               // the same plan on every rank
  std::set<std::string> used;
  for (const PlannedGemm& g : installed_kernel_plan().gemms) used.insert(g.kernels);
  CHECK(used.size() >= (byte_gemm_vectorized() ? 3u : 2u));
  CHECK(used.count("bytes") == (byte_gemm_vectorized() ? 1u : 0u));

  // Every rank's replica, stepped as the trainer does (train() hands back rank 0's model only).
  std::vector<float> params(model.parameter_count()), grads(model.parameter_count());
  model.init(params, c.seed);
  Sgd sgd(c.sgd, model.parameter_count());
  auto sync = make_synchronizer(c, {world, world, sgd, model.layers(), model.parameter_count()});
  Workspace ws(model, c.batch);
  Batch batch(c.batch, 20);
  std::vector<std::uint32_t> rows(c.batch);
  for (long s = 0; s < c.iterations_per_epoch; ++s) {
    for (std::size_t j = 0; j < c.batch; ++j)
      rows[j] = static_cast<std::uint32_t>(
          (static_cast<std::size_t>(s) * workers * c.batch + static_cast<std::size_t>(world.rank()) * c.batch + j) %
          data.train.rows);
    gather_batch(data.train, rows, batch, model.reads_float_rows(c.batch));
    model.loss_and_gradient(params, batch, grads, ws, sync->observer(params, grads));
    sync->step(params, grads);
  }
  sync->drain(params);
  bool identical = true;
  text_hash(world, std::string(reinterpret_cast<const char*>(params.data()), params.size() * sizeof(float)), &identical);
  CHECK(identical);

  // And train()'s run equals serial SGD with the global batch, as on BLIS's default kernels.
  const TrainResult r = train(c, data, world);
  std::vector<float> got = r.params;
  got.resize(model.parameter_count());
  MPI_Bcast(got.data(), static_cast<int>(got.size()), MPI_FLOAT, 0, world.native());
  TrainConfig serial = c;
  serial.sync = sync_method("serial");
  serial.batch = c.batch * workers;
  const Comm self(MPI_COMM_SELF);
  const std::vector<float> reference = train(serial, data, self).params;
  CHECK(test::relative_difference(got, reference) < 1e-5);
}

TEST_CASE("BLIS's run-header line is its own; kernels_summary adds the installed plan's line") {
  test::RestorePlan restore;
  const BlisConfig& blis = configured_blis();
  CHECK(blis.summary().find('\n') == std::string::npos);
  CHECK(blis.summary().find("GEMM kernels") == std::string::npos);
  install_kernel_plan(KernelPlan{}, blis);  // no source: no plan to name, as before any is installed
  CHECK(kernels_summary(blis) == blis.summary());
  KernelPlan plan;
  plan.source = "test";
  install_kernel_plan(plan, blis);
  CHECK(kernels_summary(blis) == blis.summary() + "\nGEMM kernels: " + blis.arch + " for every shape (test)");
}
