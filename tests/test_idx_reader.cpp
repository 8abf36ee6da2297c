#include <doctest/doctest.h>
#include <mpi.h>
#include <zlib.h>

#include <fmt/format.h>

#include <fstream>
#include <vector>

#include "model/dataset.hpp"
#include "model/idx_reader.hpp"
#include "test_support.hpp"

using namespace gradsync;

namespace {

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

std::vector<std::uint8_t> idx_bytes(std::uint8_t type, std::vector<std::uint32_t> dims, std::size_t payload) {
  std::vector<std::uint8_t> b = {0, 0, type, static_cast<std::uint8_t>(dims.size())};
  for (std::uint32_t d : dims)
    for (int shift : {24, 16, 8, 0}) b.push_back(static_cast<std::uint8_t>(d >> shift));
  for (std::size_t i = 0; i < payload; ++i) b.push_back(static_cast<std::uint8_t>(i % 10));
  return b;
}

void write(const std::filesystem::path& p, const std::vector<std::uint8_t>& bytes) {
  std::ofstream(p, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

std::string error_of(const std::filesystem::path& p, std::uint32_t ndims) {
  try {
    read_idx(p.string(), ndims);
  } catch (const DataError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("IDX reader accepts well-formed files, raw and gzip") {
  const auto dir = test::temp_dir("idx-ok", world_rank());
  const auto raw = idx_bytes(0x08, {3, 2, 2}, 12);
  write(dir / "images", raw);
  const IdxArray a = read_idx((dir / "images").string(), 3);
  CHECK(a.dims == std::vector<std::uint32_t>{3, 2, 2});
  CHECK(a.data.size() == 12);
  CHECK(a.data[11] == 1);

  gzFile gz = gzopen((dir / "images.gz").c_str(), "wb");
  gzwrite(gz, raw.data(), static_cast<unsigned>(raw.size()));
  gzclose(gz);
  CHECK(read_idx((dir / "images.gz").string(), 3).data == a.data);

  // The same stream without its 8-byte CRC/length trailer: refused, not silently accepted.
  const auto size = std::filesystem::file_size(dir / "images.gz");
  std::filesystem::copy_file(dir / "images.gz", dir / "cut.gz");
  std::filesystem::resize_file(dir / "cut.gz", size - 4);
  CHECK_THROWS_WITH_AS(read_idx((dir / "cut.gz").string(), 3), doctest::Contains("truncated gzip stream"), DataError);
  std::filesystem::remove_all(dir);
}

TEST_CASE("IDX reader maps a raw file read-only, inflates a gzip one, and checks a mapping like a copy") {
  const auto dir = test::temp_dir("idx-map", world_rank());
  const auto raw = idx_bytes(0x08, {3, 2, 2}, 12);
  write(dir / "images", raw);
  const IdxArray copied = read_idx((dir / "images").string(), 3, IdxStorage::copy);
  const IdxArray mapped = read_idx((dir / "images").string(), 3, IdxStorage::map);
  CHECK_FALSE(copied.data.mapped());
  CHECK(mapped.data.mapped());
  CHECK(mapped.dims == copied.dims);
  CHECK(mapped.data == copied.data);
  CHECK(mapped.data.size() == 12);

  gzFile gz = gzopen((dir / "images.gz").c_str(), "wb");
  gzwrite(gz, raw.data(), static_cast<unsigned>(raw.size()));
  gzclose(gz);
  const IdxArray inflated = read_idx((dir / "images.gz").string(), 3, IdxStorage::map);
  CHECK_FALSE(inflated.data.mapped());
  CHECK(inflated.data == copied.data);

  write(dir / "long", idx_bytes(0x08, {3, 2, 2}, 13));
  CHECK_THROWS_WITH_AS(read_idx((dir / "long").string(), 3, IdxStorage::map),
                       doctest::Contains("1 trailing bytes after the 12 data bytes"), DataError);
  CHECK_THROWS_WITH_AS(read_idx((dir / "none").string(), 3, IdxStorage::map), doctest::Contains("none: cannot open"),
                       DataError);
  write(dir / "empty", {});
  CHECK_THROWS_WITH_AS(read_idx((dir / "empty").string(), 3, IdxStorage::map), doctest::Contains("truncated: 0 bytes"),
                       DataError);
  std::filesystem::remove_all(dir);
}

TEST_CASE("IDX reader rejects broken files and names the file and the problem") {
  const auto dir = test::temp_dir("idx-bad", world_rank());
  auto truncated = idx_bytes(0x08, {3, 2, 2}, 11);
  write(dir / "truncated", truncated);
  CHECK(error_of(dir / "truncated", 3).find("truncated") != std::string::npos);
  CHECK(error_of(dir / "truncated", 3).find((dir / "truncated").string()) != std::string::npos);

  auto trailing = idx_bytes(0x08, {3, 2, 2}, 13);
  write(dir / "trailing", trailing);
  CHECK(error_of(dir / "trailing", 3).find("trailing") != std::string::npos);

  auto magic = idx_bytes(0x08, {3, 2, 2}, 12);
  magic[0] = 0x1f;
  write(dir / "magic", magic);
  CHECK(error_of(dir / "magic", 3).find("bad magic") != std::string::npos);

  write(dir / "type", idx_bytes(0x0D, {3, 2, 2}, 12));
  CHECK(error_of(dir / "type", 3).find("not unsigned byte") != std::string::npos);

  write(dir / "dims", idx_bytes(0x08, {12}, 12));
  CHECK(error_of(dir / "dims", 3).find("has 1 dimensions, expected 3") != std::string::npos);

  write(dir / "zero", idx_bytes(0x08, {0, 2, 2}, 0));
  CHECK(error_of(dir / "zero", 3).find("zero") != std::string::npos);

  CHECK(error_of(dir / "missing", 3).find("cannot open") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("IDX reader refuses a file shorter than its header and dimensions that overflow, before allocating") {
  const auto dir = test::temp_dir("idx-header", world_rank());
  // Too short to say what it is, and long enough to claim 3 dimensions but not to hold them.
  write(dir / "tiny", {0, 0, 0x08});
  CHECK(error_of(dir / "tiny", 3).find("truncated: 3 bytes, too short for an IDX header") != std::string::npos);
  for (std::size_t cut : {std::size_t{4}, std::size_t{9}, std::size_t{15}}) {
    std::vector<std::uint8_t> b = idx_bytes(0x08, {3, 2, 2}, 12);
    b.resize(cut);
    write(dir / "short", b);
    const std::string e = error_of(dir / "short", 3);
    CAPTURE(cut);
    CHECK(e.find(fmt::format("truncated header: {} bytes, need 16", cut)) != std::string::npos);
    CHECK(e.find((dir / "short").string()) != std::string::npos);
  }

  // Dimensions whose product passes 4 GiB, including ones whose 64-bit product would wrap around: refused from
  // the header alone (the files hold no data), not reported as merely truncated.
  for (const std::vector<std::uint32_t>& dims : std::vector<std::vector<std::uint32_t>>{
           {65536, 65536, 2}, {0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu}, {0x80000000u, 4, 0x80000000u}}) {
    write(dir / "huge", idx_bytes(0x08, dims, 0));
    const std::string e = error_of(dir / "huge", 3);
    CAPTURE(e);
    CHECK(e.find("dimensions multiply to more than 4 GiB") != std::string::npos);
    CHECK(e.find((dir / "huge").string()) != std::string::npos);
  }
  // Exactly at the limit is not an overflow: the file is then refused for what it lacks.
  write(dir / "limit", idx_bytes(0x08, {65536, 65536}, 0));
  CHECK(error_of(dir / "limit", 2).find("header promises 4294967296 data bytes, file has 0") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("dataset loader checks labels and counts") {
  const std::vector<std::uint8_t> pixels(2 * 4, 255);
  CHECK(make_dataset({2, 2, 2}, pixels, {2}, {3, 9}, "x").pixels[0] == 255);
  CHECK_THROWS_WITH_AS(make_dataset({2, 2, 2}, pixels, {2}, {3, 10}, "src"),
                       doctest::Contains("label 10 at index 1 is out of range"), DataError);
  CHECK_THROWS_WITH_AS(make_dataset({2, 2, 2}, pixels, {3}, {1, 2, 3}, "src"), doctest::Contains("2 images but 3 labels"),
                       DataError);
  CHECK_THROWS_WITH_AS(make_dataset({2, 2, 3}, pixels, {2}, {3, 9}, "src"),
                       doctest::Contains("8 pixel bytes and 2 labels for 2 images of 2 x 3"), DataError);
  CHECK_THROWS_WITH_AS(make_dataset({2, 2, 2}, pixels, {2}, {3}, "src"), doctest::Contains("1 labels for 2 images"),
                       DataError);
  const auto dir = test::temp_dir("idx-missing", world_rank());
  CHECK_THROWS_WITH_AS(load_idx_dataset(dir.string()), doctest::Contains("missing train-images-idx3-ubyte"), DataError);
  std::filesystem::remove_all(dir);
}

TEST_CASE("the real MNIST files load and validate") {
  const TrainTest mnist = load_idx_dataset(test::mnist_dir());
  CHECK(mnist.train.rows == 60000);
  CHECK(mnist.test.rows == 10000);
  CHECK(mnist.train.features == 784);
  CHECK(mnist.train.labels[0] == 5);  // the famous first training digit
  CHECK(mnist.test.labels[0] == 7);

  // What a simulation build loads: the same pixels, read from the page cache's copy.
  const TrainTest shared = load_idx_dataset(test::mnist_dir(), DataStorage::shared_mapping);
  CHECK(shared.train.pixels.mapped());
  CHECK(shared.test.pixels.mapped());
  CHECK(shared.train.pixels == mnist.train.pixels);
  CHECK(shared.test.pixels == mnist.test.pixels);
  CHECK(shared.train.labels == mnist.train.labels);
}
