// Plain-executable driver for the libFuzzer targets (no libFuzzer needed): feeds every file under
// the directories (or files) given on the command line to LLVMFuzzerTestOneInput, in sorted
// order, and prints how many inputs ran. `make test` uses it to replay the seed corpus
// (tests/fuzz/corpus/<parser>) and every input that once crashed (tests/fuzz/regressions/<parser>)
// through the same entry points as the fuzzer. A missing directory is an error (exit 2), an
// empty one is not; a crash or an escaping exception ends the process (the test fails).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s DIR_OR_FILE...\n", argv[0]);
    return 2;
  }
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    const fs::path p = argv[i];
    if (fs::is_regular_file(p)) {
      files.push_back(p.string());
    } else if (fs::is_directory(p)) {
      for (const auto& e : fs::recursive_directory_iterator(p))
        if (e.is_regular_file() && e.path().filename().string()[0] != '.')
          files.push_back(e.path().string());
    } else {
      std::fprintf(stderr, "%s: no such file or directory\n", argv[i]);
      return 2;
    }
  }
  std::sort(files.begin(), files.end());
  for (const std::string& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::fprintf(stderr, "replay %s (%zu bytes)\n", f.c_str(), bytes.size());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
  std::printf("%zu inputs replayed without a crash\n", files.size());
  return 0;
}
