// libFuzzer target for read_idx (model/idx_reader.hpp). Contract under test: any byte sequence, raw or gzip,
// either loads as an IdxArray consistent with its own header or throws DataError; nothing else escapes (no
// crash, no sanitizer report, no other exception, no allocation beyond -rss_limit_mb).
#include <fmt/format.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "model/idx_reader.hpp"

namespace {

// read_idx takes a path (it must, to let zlib sniff gzip), so each input goes through a file. One file per
// process under $TMPDIR: libFuzzer's -jobs/-fork workers then never overwrite each other's input.
class InputFile {
 public:
  InputFile() {
    const char* dir = std::getenv("TMPDIR");
    path_ = fmt::format("{}/gradsync-fuzz-idx-{}", dir && *dir ? dir : "/tmp", ::getpid());
  }
  ~InputFile() { std::remove(path_.c_str()); }
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  const std::string& write(const std::uint8_t* data, std::size_t size) {
    std::FILE* f = std::fopen(path_.c_str(), "wb");
    // A harness failure, not a finding in read_idx: stop loudly rather than fuzz nothing.
    if (!f || (size > 0 && std::fwrite(data, 1, size, f) != size) || std::fclose(f) != 0) {
      std::fprintf(stderr, "fuzz_idx_reader: cannot write %s\n", path_.c_str());
      std::abort();
    }
    return path_;
  }

 private:
  std::string path_;
};

// The loaded array must be what the header promised; a violation is a bug even without a crash.
void check_invariants(const gradsync::IdxArray& a, std::uint32_t ndims) {
  std::uint64_t elements = 1;
  for (std::uint32_t d : a.dims) {
    if (d == 0) std::abort();
    elements *= d;
  }
  if (a.dims.size() != ndims || elements != a.data.size()) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static InputFile file;
  const std::string& path = file.write(data, size);
  // Expect the rank the raw header claims, so inputs get past the rank check into the size arithmetic; the
  // rank comparison itself is one line, covered by tests/test_idx_reader.cpp. (For gzip inputs byte 3 is
  // part of the gzip header, so there the rank check is fuzzed too.)
  const std::uint32_t ndims = size > 3 ? data[3] : 1;
  try {
    check_invariants(gradsync::read_idx(path, ndims), ndims);
  } catch (const gradsync::DataError&) {
    // The documented way to refuse a file.
  }
  return 0;
}
