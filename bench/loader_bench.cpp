// Loader cost per training step (not a test). Writes synthetic OLMo-format token files (random
// ids < vocab, EOS every ~500 tokens) to a temp dir, opens an FslDataset over them (timing the
// full token-id validation scan), builds the epoch order, and times DataLoader::next() (this
// rank's token copy out of the memory map + the global-batch content hash) over many steps, in
// shuffled order, page cache warm (the files were just written). Prints per-step figures and
// the ratio to the olmo3-190m training-step estimate 6 * N * tokens / (0.6 * 340 GFLOP/s), with
// N = 190,354,176 non-embedding params (olmo3_spec.md 1.5) unless --step-seconds is given.
//   build-X/tests/bench_loader [--seq-len 2048] [--global-batch 8] [--world 1] [--steps 2000]
//                              [--file-tokens 16777216] [--files 4] [--step-seconds S]
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <unistd.h>
#include <vector>

#include "core/timer.h"
#include "data/loader.h"

using namespace olmo::data;
namespace fs = std::filesystem;

int main(int argc, char** argv) {
  long long T = 2048, gb = 8, world = 1, steps = 2000, file_tokens = 1 << 24, files = 4;
  double step_s = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    long long v = std::atoll(argv[i + 1]);
    if (k == "--seq-len") T = v;
    else if (k == "--global-batch") gb = v;
    else if (k == "--world") world = v;
    else if (k == "--steps") steps = v;
    else if (k == "--file-tokens") file_tokens = v;
    else if (k == "--files") files = v;
    else if (k == "--step-seconds") step_s = std::atof(argv[i + 1]);
    else { std::fprintf(stderr, "unknown flag %s\n", argv[i]); return 2; }
  }
  fs::path dir = fs::temp_directory_path() / ("olmo_loader_bench_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::vector<std::string> paths;
  std::mt19937 g(1);
  std::vector<uint32_t> buf(static_cast<size_t>(file_tokens));
  for (long long f = 0; f < files; ++f) {
    for (auto& x : buf) x = (g() % 500 == 0) ? olmo::kDolma2Eos : g() % olmo::kDolma2Eos;
    paths.push_back((dir / ("part-" + std::to_string(f) + ".npy")).string());
    std::ofstream(paths.back(), std::ios::binary)
        .write(reinterpret_cast<const char*>(buf.data()), std::streamsize(buf.size() * 4));
  }
  double t0 = olmo::now_seconds();
  FslDataset ds(paths, T);
  double t_open = olmo::now_seconds() - t0;
  DataLoader dl(ds, gb, 34521, 0, static_cast<int>(world));
  t0 = olmo::now_seconds();
  dl.epoch_order(1);
  double t_order = olmo::now_seconds() - t0;
  DataLoader::Batch b;
  std::vector<double> per;
  per.reserve(steps);
  uint64_t sink = 0;
  for (long long s = 0; s < steps; ++s) {
    double a = olmo::now_seconds();
    dl.next(b);
    per.push_back(olmo::now_seconds() - a);
    sink ^= b.global_hash ^ static_cast<uint64_t>(b.tokens[b.tokens.size() / 2]);
  }
  std::vector<double> sorted = per;
  std::sort(sorted.begin(), sorted.end());
  double mean = 0;
  for (double x : per) mean += x;
  mean /= per.size();
  const double tokens = double(gb) * T;
  if (step_s <= 0) step_s = 6.0 * 190354176.0 * tokens / (0.6 * 340e9);
  std::printf("dataset: %lld files x %lld tokens = %.0f MB, %lld instances of %lld tokens\n",
              files, file_tokens, files * file_tokens * 4 / 1e6, (long long)ds.size(), T);
  std::printf("open + validate all tokens: %.3f s (%.2f GB/s)\n", t_open,
              files * file_tokens * 4 / 1e9 / t_open);
  std::printf("epoch order (numpy PCG64 shuffle of %lld): %.3f ms (once per epoch)\n",
              (long long)ds.size(), t_order * 1e3);
  std::printf("next(): global batch %lld x %lld = %.0f tokens, world %lld, %lld steps (%lld epochs)\n",
              gb, T, tokens, world, steps, (long long)b.epoch);
  std::printf("  per step: mean %.1f us, median %.1f us, p99 %.1f us, max %.1f us\n", mean * 1e6,
              sorted[sorted.size() / 2] * 1e6, sorted[sorted.size() * 99 / 100] * 1e6,
              sorted.back() * 1e6);
  std::printf("  olmo3-190m step estimate %.2f s -> loader share %.5f %% (mean), %.5f %% (max)\n",
              step_s, 100 * mean / step_s, 100 * sorted.back() / step_s);
  std::printf("(sink %llx)\n", (unsigned long long)sink);
  fs::remove_all(dir);
  return 0;
}
