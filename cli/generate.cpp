// `olmo generate PATH --prompt TEXT [--tokens N]`: greedy continuation of a prompt by a trained
// model. PATH: a checkpoint dir (RUN_DIR/stepN), a run dir (its newest complete checkpoint) or an
// HF model dir (config.json + model.safetensors). Uses the dolma2 tokenizer (cl100k ranks).
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "args.h"
#include "command.h"
#include "core/error.h"
#include "data/tokenizer.h"
#include "eval/generate.h"
#include "train/trainer.h"

namespace {

int run_generate(int argc, char** argv) {
  using namespace olmo;
  cli::Args a(argc, argv, {"--ids"});
  if (a.has("--help") || a.positional().size() != 1 || !a.has("--prompt")) {
    std::printf(
        "usage: olmo generate PATH --prompt TEXT [--tokens N] [--tokenizer FILE] [--ids]\n"
        "Greedy continuation (argmax, no sampling) of TEXT by the model in PATH: a checkpoint\n"
        "dir, a run dir (newest complete checkpoint) or an HF dir. --tokens: new tokens (32).\n"
        "Stops early at <|endoftext|>. --ids also prints the token ids.\n");
    return a.has("--help") ? 0 : 1;
  }
  a.finish({"--prompt", "--tokens", "--tokenizer", "--ids"});
  int64_t n = a.get_int("--tokens", 32);
  OLMO_CHECK(n >= 1, "--tokens must be >= 1");
  data::Tokenizer tok = data::Tokenizer::load(a.get("--tokenizer", data::Tokenizer::default_path()));
  auto m = train::load_model_for_inference(a.positional()[0]);
  std::vector<uint32_t> prompt = tok.encode(a.get("--prompt"));
  OLMO_CHECK(!prompt.empty(), "--prompt encodes to no tokens");
  std::vector<uint32_t> out =
      eval::greedy_generate(*m, prompt, n, m->config().max_seq_len, tok.eos_id());
  std::printf("%s", a.get("--prompt").c_str());
  bool tty = isatty(fileno(stdout));
  std::printf(tty ? "\033[1m%s\033[0m\n" : "%s\n", tok.decode(out).c_str());
  if (a.has("--ids")) {
    std::printf("prompt ids:");
    for (auto t : prompt) std::printf(" %u", t);
    std::printf("\nnew ids:");
    for (auto t : out) std::printf(" %u", t);
    std::printf("\n");
  }
  return 0;
}

OLMO_COMMAND("generate", "greedy continuation of a prompt from a checkpoint or HF dir",
             run_generate);

}  // namespace
