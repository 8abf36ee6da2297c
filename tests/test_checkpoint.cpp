// Checkpoint format: round trips, every way a file can be damaged, and writes that fail part-way. Every rank runs
// these independently in its own temporary directory; no MPI communication is involved.
#include <doctest/doctest.h>
#include <mpi.h>
#include <sys/resource.h>
#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <csignal>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "model/checkpoint.hpp"
#include "model/rng.hpp"
#include "test_support.hpp"
#include "trainers/checkpoint/checkpointing.hpp"

using namespace gradsync;

namespace {

// The layout is a stable file format (checkpoint.hpp), so the tests spell its offsets out rather than share them.
constexpr std::size_t kVersionAt = 8, kParamCountAt = 32, kStepAt = 16, kHeaderCrcAt = 52, kHeaderBytes = 56;

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

Checkpoint sample(std::size_t params = 20) {
  Checkpoint c;
  c.config = "model 784-128-10 / sync ring / mnist / batch 32 / lr 0.1 / seed 7";
  Rng rng(7);
  for (std::size_t i = 0; i < params; ++i) c.params.push_back(rng.uniform() - 0.5f);
  c.optimizer_state.assign(params, 0.25f);
  c.step = 1875;
  c.epoch = 3;
  c.rng = {7, 0x1003, 0xFFFFFFFFFFFFFFFFULL};
  return c;
}

void spit(const std::filesystem::path& p, std::span<const std::uint8_t> bytes) {
  std::ofstream(p, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// The message of the CheckpointError `f` throws; any other outcome is reported as such and fails the caller's check.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const CheckpointError& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("(not a CheckpointError) ") + e.what();
  }
  return "(no error)";
}

std::string parse_error(std::span<const std::uint8_t> bytes) {
  return error_of([&] { parse_checkpoint(bytes, "mem.ckpt"); });
}

using test::contains;

std::vector<std::string> entries(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

void put_u32(std::vector<std::uint8_t>& b, std::size_t at, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + i] = static_cast<std::uint8_t>(v >> (8 * i));
}
void put_u64(std::vector<std::uint8_t>& b, std::size_t at, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) b[at + i] = static_cast<std::uint8_t>(v >> (8 * i));
}
// Re-signs an edited header, as a hostile or buggy writer would, so the checks behind the header CRC get exercised.
void reseal_header(std::vector<std::uint8_t>& b) {
  put_u32(b, kHeaderCrcAt, static_cast<std::uint32_t>(crc32(0, b.data(), static_cast<uInt>(kHeaderCrcAt))));
}

}  // namespace

TEST_CASE("all_finite finds every NaN and Inf, at any position, and nothing else") {
  using L = std::numeric_limits<float>;
  const float finite[] = {0.0f, -0.0f, 1.0f, -3.5f, L::max(), L::lowest(), L::min(), L::denorm_min(), -L::denorm_min()};
  const float bad[] = {L::quiet_NaN(),
                       -L::quiet_NaN(),
                       L::signaling_NaN(),
                       L::infinity(),
                       -L::infinity(),
                       std::bit_cast<float>(0x7FC00123u),
                       std::bit_cast<float>(0xFF800001u)};
  std::vector<float> v(1000);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = finite[i % std::size(finite)];
  CHECK(gradsync::all_finite(v));
  CHECK(gradsync::all_finite(std::span<const float>{}));
  for (float b : bad)
    for (std::size_t at : {std::size_t{0}, std::size_t{7}, std::size_t{513}, v.size() - 1}) {
      std::vector<float> w = v;
      w[at] = b;
      CHECK_MESSAGE(!gradsync::all_finite(w), "value bits ", std::bit_cast<std::uint32_t>(b), " at ", at);
    }
}

TEST_CASE("checkpoint round trip preserves every field bit for bit") {
  const auto dir = test::temp_dir("ckpt-roundtrip", world_rank());
  const std::string path = (dir / "run.ckpt").string();
  Checkpoint c = sample();
  c.params.push_back(-0.0f);
  c.params.push_back(std::numeric_limits<float>::infinity());
  c.params.push_back(std::numeric_limits<float>::denorm_min());
  c.params.push_back(std::bit_cast<float>(0x7FC00123u));  // a NaN with a payload
  write_checkpoint(path, c);
  const Checkpoint back = read_checkpoint(path);
  CHECK(back.config == c.config);
  CHECK(back.step == c.step);
  CHECK(back.epoch == c.epoch);
  CHECK(back.rng == c.rng);
  CHECK(back.optimizer_state == c.optimizer_state);
  REQUIRE(back.params.size() == c.params.size());
  CHECK(std::memcmp(back.params.data(), c.params.data(), c.params.size() * sizeof(float)) == 0);
  CHECK(std::signbit(back.params[c.params.size() - 4]));

  // Empty vectors and an empty fingerprint are ordinary; overwriting an existing checkpoint replaces it.
  Checkpoint empty;
  empty.params = {1.5f};
  write_checkpoint(path, empty);
  CHECK(read_checkpoint(path) == empty);
  CHECK(entries(dir) == std::vector<std::string>{"run.ckpt"});  // no temporary files left behind

  // A bare file name writes into the working directory.
  const auto cwd = std::filesystem::current_path();
  std::filesystem::current_path(dir);
  write_checkpoint("bare.ckpt", sample(3));
  CHECK(read_checkpoint("bare.ckpt") == sample(3));
  std::filesystem::current_path(cwd);
  std::filesystem::remove_all(dir);
}

TEST_CASE("checkpoint file layout is the documented one") {
  Checkpoint c;
  c.config = "ab";
  c.params = {1.0f};
  c.step = 3;
  c.epoch = 2;
  c.rng = {5};
  const std::vector<std::uint8_t> b = serialize_checkpoint(c, "layout");
  REQUIRE(b.size() == kHeaderBytes + 2 + 4 + 0 + 8 + 4);
  const std::vector<std::uint8_t> header = {'G', 'S', 'Y', 'N', 'C', 'K', 'P', 'T',  // magic
                                            1,   0,   0,   0,                        // version
                                            2,   0,   0,   0,                        // config bytes
                                            3,   0,   0,   0,   0,   0,   0,   0,    // step
                                            2,   0,   0,   0,   0,   0,   0,   0,    // epoch
                                            1,   0,   0,   0,   0,   0,   0,   0,    // parameters
                                            0,   0,   0,   0,   0,   0,   0,   0,    // optimizer values
                                            1,   0,   0,   0};                       // RNG words
  CHECK(std::equal(header.begin(), header.end(), b.begin()));
  const auto header_crc = static_cast<std::uint32_t>(crc32(0, b.data(), static_cast<uInt>(kHeaderCrcAt)));
  const auto file_crc = static_cast<std::uint32_t>(crc32(0, b.data(), static_cast<uInt>(b.size() - 4)));
  const std::vector<std::uint8_t> body = {static_cast<std::uint8_t>(header_crc),
                                          static_cast<std::uint8_t>(header_crc >> 8),
                                          static_cast<std::uint8_t>(header_crc >> 16),
                                          static_cast<std::uint8_t>(header_crc >> 24),
                                          'a',
                                          'b',  // config
                                          0x00,
                                          0x00,
                                          0x80,
                                          0x3F,  // 1.0f
                                          5,
                                          0,
                                          0,
                                          0,
                                          0,
                                          0,
                                          0,
                                          0,  // rng
                                          static_cast<std::uint8_t>(file_crc),
                                          static_cast<std::uint8_t>(file_crc >> 8),
                                          static_cast<std::uint8_t>(file_crc >> 16),
                                          static_cast<std::uint8_t>(file_crc >> 24)};
  CHECK(std::equal(body.begin(), body.end(), b.begin() + kHeaderCrcAt));
  CHECK(parse_checkpoint(b, "layout") == c);
}

TEST_CASE("checkpoint reader refuses missing, foreign and future-version files") {
  const auto dir = test::temp_dir("ckpt-foreign", world_rank());
  const std::string missing = (dir / "missing.ckpt").string();
  const std::string e_missing = error_of([&] { read_checkpoint(missing); });
  CHECK(contains(e_missing, missing));
  CHECK(contains(e_missing, "No such file or directory"));

  const std::string text = "epoch,loss\n1,0.5\n2,0.25\n this is a CSV file, not a checkpoint at all ...........\n";
  spit(dir / "foreign.ckpt", std::span(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()));
  const std::string e_foreign = error_of([&] { read_checkpoint((dir / "foreign.ckpt").string()); });
  CHECK(contains(e_foreign, (dir / "foreign.ckpt").string()));
  CHECK(contains(e_foreign, "not a gradsync checkpoint"));

  std::vector<std::uint8_t> future = serialize_checkpoint(sample(), "x");
  put_u32(future, kVersionAt, 2);
  spit(dir / "future.ckpt", future);
  const std::string e_future = error_of([&] { read_checkpoint((dir / "future.ckpt").string()); });
  CHECK(contains(e_future, (dir / "future.ckpt").string()));
  CHECK(contains(e_future, "unsupported checkpoint version 2"));
  put_u32(future, kVersionAt, 0);
  CHECK(contains(parse_error(future), "unsupported checkpoint version 0"));

  CHECK(contains(error_of([&] { read_checkpoint(dir.string()); }), "not a regular file"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("checkpoint reader refuses a file cut at any offset as truncated") {
  const std::vector<std::uint8_t> good = serialize_checkpoint(sample(), "x");
  int refused = 0;
  for (std::size_t cut = 0; cut < good.size(); ++cut) {
    const std::string e = parse_error(std::span(good).first(cut));
    if (contains(e, "truncated") && contains(e, "mem.ckpt"))
      ++refused;
    else
      FAIL_CHECK("cut at " << cut << " of " << good.size() << ": " << e);
  }
  CHECK(refused == static_cast<int>(good.size()));

  // And through the file reader, at the interesting places: empty, inside the magic, inside the header, at the
  // end of the header, mid-payload, one byte short.
  const auto dir = test::temp_dir("ckpt-truncated", world_rank());
  const std::string path = (dir / "cut.ckpt").string();
  for (std::size_t cut :
       {std::size_t{0}, std::size_t{5}, std::size_t{30}, kHeaderBytes, good.size() / 2, good.size() - 1}) {
    spit(path, std::span(good).first(cut));
    const std::string e = error_of([&] { read_checkpoint(path); });
    CHECK_MESSAGE(contains(e, "truncated"), "cut at " << cut << ": " << e);
    CHECK(contains(e, path));
  }
  std::vector<std::uint8_t> longer = good;
  longer.push_back(0);
  CHECK(contains(parse_error(longer), "1 trailing bytes"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("checkpoint reader refuses every single flipped byte") {
  const std::vector<std::uint8_t> good = serialize_checkpoint(sample(), "x");
  for (std::size_t i = 0; i < good.size(); ++i) {
    std::vector<std::uint8_t> bad = good;
    bad[i] ^= 0x10;
    const std::string e = parse_error(bad);
    const char* expected = i < kVersionAt       ? "not a gradsync checkpoint"
                           : i < kVersionAt + 4 ? "unsupported checkpoint version"
                                                : "corrupted";
    CHECK_MESSAGE(contains(e, expected), "byte " << i << ": " << e);
  }

  const auto dir = test::temp_dir("ckpt-flipped", world_rank());
  const std::string path = (dir / "flipped.ckpt").string();
  std::vector<std::uint8_t> bad = good;
  bad[kHeaderBytes + 80] ^= 0x01;  // inside the parameters
  spit(path, bad);
  const std::string e = error_of([&] { read_checkpoint(path); });
  CHECK(contains(e, path));
  CHECK(contains(e, "corrupted: checksum mismatch"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("checkpoint reader bounds header sizes before allocating") {
  const std::vector<std::uint8_t> good = serialize_checkpoint(sample(), "x");
  // Correctly signed headers with absurd counts: refused as corrupt (beyond the limits) or truncated (within
  // them but larger than the input), never by trying to allocate.
  std::vector<std::uint8_t> huge = good;
  put_u64(huge, kParamCountAt, std::uint64_t{1} << 62);
  reseal_header(huge);
  CHECK(contains(parse_error(huge), "corrupted: header sizes beyond the format's limits"));
  put_u64(huge, kParamCountAt, kMaxCheckpointFloats);
  reseal_header(huge);
  CHECK(contains(parse_error(huge), "truncated: header says"));
  std::vector<std::uint8_t> negative = good;
  put_u64(negative, kStepAt, static_cast<std::uint64_t>(-5));
  reseal_header(negative);
  CHECK(contains(parse_error(negative), "negative step -5"));

  // A light in-process fuzz: random byte edits and cuts yield a CheckpointError or a valid checkpoint, nothing
  // else. The real fuzzer drives parse_checkpoint the same way.
  Rng rng(static_cast<std::uint64_t>(world_rank()) + 1);
  int other = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    std::vector<std::uint8_t> b = good;
    const std::size_t edits = 1 + rng.below(4);
    for (std::size_t k = 0; k < edits; ++k) b[rng.below(b.size())] = static_cast<std::uint8_t>(rng.next());
    if (rng.below(2) == 0) reseal_header(b);
    if (rng.below(4) == 0) b.resize(rng.below(b.size()));
    try {
      parse_checkpoint(b, "fuzz");
    } catch (const CheckpointError&) {
    } catch (...) {
      ++other;
    }
  }
  CHECK(other == 0);
}

TEST_CASE("checkpoint compatibility check names both runs") {
  const Checkpoint c = sample(20);
  CHECK_NOTHROW(check_compatible(c, c.config, 20, "run.ckpt"));
  const std::string expected = "model 784-10 / sync mpi / mnist / batch 32 / lr 0.1 / seed 7";
  const std::string e = error_of([&] { check_compatible(c, expected, 20, "run.ckpt"); });
  CHECK(contains(e, "run.ckpt"));
  CHECK(contains(e, "different run"));
  CHECK(contains(e, "expected \"" + expected + "\""));
  CHECK(contains(e, "found \"" + c.config + "\""));
  const std::string count = error_of([&] { check_compatible(c, c.config, 21, "run.ckpt"); });
  CHECK(contains(count, "run.ckpt"));
  CHECK(contains(count, "holds 20 parameters, this run's model has 21"));
}

TEST_CASE("checkpoint writer refuses what the reader could not read") {
  const auto dir = test::temp_dir("ckpt-limits", world_rank());
  const std::string path = (dir / "run.ckpt").string();
  Checkpoint c = sample();
  c.config.assign(kMaxConfigBytes + 1, 'x');
  CHECK(contains(error_of([&] { write_checkpoint(path, c); }), "configuration fingerprint is 65537 bytes"));
  c = sample();
  c.rng.assign(kMaxRngWords + 1, 0);
  CHECK(contains(error_of([&] { write_checkpoint(path, c); }), "RNG state words"));
  c = sample();
  c.epoch = -1;
  CHECK(contains(error_of([&] { write_checkpoint(path, c); }), "negative"));
  CHECK(entries(dir).empty());
  std::filesystem::remove_all(dir);
}

TEST_CASE("a failed checkpoint write keeps the old checkpoint and leaves no temporary file") {
  const auto dir = test::temp_dir("ckpt-failed-write", world_rank());
  const std::string path = (dir / "run.ckpt").string();
  const Checkpoint old = sample(10);
  write_checkpoint(path, old);

  // Target directory does not exist: the error names the path and the OS reason.
  const std::string nowhere = (dir / "no-such-dir" / "run.ckpt").string();
  const std::string e_nowhere = error_of([&] { write_checkpoint(nowhere, sample(5)); });
  CHECK(contains(e_nowhere, nowhere));
  CHECK(contains(e_nowhere, "No such file or directory"));

  // Failure after the temporary file is complete: the rename onto a directory fails.
  std::filesystem::create_directory(dir / "occupied");
  const std::string e_rename = error_of([&] { write_checkpoint((dir / "occupied").string(), sample(5)); });
  CHECK(contains(e_rename, "renaming"));
  CHECK(contains(e_rename, "Is a directory"));

  // Failure in the middle of writing: a file-size limit (which binds root too) makes write(2) fail with EFBIG
  // part-way through a checkpoint larger than the old one. The limit and SIGXFSZ are restored before any
  // assertion runs, so doctest's own output is never subject to them.
  std::string e_midway;
  {
    rlimit saved{};
    REQUIRE(getrlimit(RLIMIT_FSIZE, &saved) == 0);
    rlimit small = saved;
    small.rlim_cur = 4096;
    const auto previous_handler = std::signal(SIGXFSZ, SIG_IGN);
    REQUIRE(setrlimit(RLIMIT_FSIZE, &small) == 0);
    e_midway = error_of([&] { write_checkpoint(path, sample(10000)); });
    setrlimit(RLIMIT_FSIZE, &saved);
    std::signal(SIGXFSZ, previous_handler);
  }
  CHECK(contains(e_midway, path));
  CHECK(contains(e_midway, "writing"));
  CHECK(contains(e_midway, "File too large"));

  CHECK(read_checkpoint(path) == old);
  CHECK(entries(dir) == std::vector<std::string>{"occupied", "run.ckpt"});
  std::filesystem::remove_all(dir);
}
