// `olmo ckpt SUBCOMMAND`: checkpoint tools.
//   verify DIR   recompute the layout-independent fingerprints of a checkpoint (or a run dir's
//                newest complete one) from its stored pieces and compare them with the state
//                recorded at save time (train/checkpoint_verify.h); exit 0 when everything
//                matches, 1 with the first mismatch named otherwise.
#include <cstdio>
#include <cstring>
#include <string>

#include "command.h"
#include "train/checkpoint_verify.h"

namespace {

int usage(FILE* to) {
  std::fprintf(to,
               "usage: olmo ckpt verify DIR\n"
               "  verify DIR  checksums, shard coverage, the model section and the fingerprints of\n"
               "              every tensor and state section of checkpoint DIR (a stepN dir, or a run\n"
               "              dir: its newest complete checkpoint) against the state saved\n");
  return to == stdout ? 0 : 2;
}

int run_ckpt(int argc, char** argv) {
  if (argc < 2) return usage(stderr);
  const std::string sub = argv[1];
  if (sub == "--help" || sub == "-h") return usage(stdout);
  if (sub == "verify") {
    if (argc != 3 || std::strncmp(argv[2], "--", 2) == 0) return usage(argc == 3 ? stdout : stderr);
    const olmo::train::VerifyReport rep = olmo::train::verify_checkpoint(argv[2]);
    for (const std::string& l : rep.lines) std::printf("%s\n", l.c_str());
    std::printf("verified: %s (step %lld)\n", rep.dir.c_str(), (long long)rep.step);
    return 0;
  }
  std::fprintf(stderr, "olmo ckpt: unknown subcommand '%s'\n", sub.c_str());
  return usage(stderr);
}

}  // namespace

OLMO_COMMAND("ckpt", "checkpoint tools: verify (fingerprints of the saved state)", run_ckpt);
