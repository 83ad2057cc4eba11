// `olmo generate PATH --prompt TEXT`: continuation of prompts by a trained model, with a KV cache
// (eval/generate.h): greedy by default, or sampling (--temperature, --top-k, --top-p, --seed).
// PATH: a checkpoint dir (RUN_DIR/stepN), a run dir (its newest complete checkpoint) or an HF
// model dir. Prompts: --prompt TEXT (one), --prompts FILE (one prompt per line, run as a batch)
// or --prompt-ids FILE (one line of token ids per prompt; no tokenizer needed). Text goes through
// the dolma2 tokenizer (cl100k ranks); ids are limited to the tokenizer's vocabulary and
// generation stops at <|endoftext|>. --json prints one JSON object per prompt (ids, text,
// finish) for scripts; timing goes to stderr. --logits-out FILE writes, prompt after prompt, the
// fp32 logits row (little-endian, vocab_size floats) each new token was chosen from (parity tests).
#include <unistd.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "args.h"
#include "command.h"
#include "core/error.h"
#include "core/file_io.h"
#include "tokenizer/tokenizer.h"
#include "eval/generate.h"
#include "train/inference_model.h"

namespace {

using namespace olmo;

std::vector<std::string> read_lines(const std::string& path) {
  OLMO_CHECK(file_exists(path), path, ": prompts file not found");
  std::istringstream in(read_file(path));
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);)
    if (!l.empty()) out.push_back(l);
  OLMO_CHECK(!out.empty(), path, ": no prompts (all lines empty)");
  return out;
}

std::vector<uint32_t> parse_ids(const std::string& line, const std::string& where) {
  std::istringstream ls(line);
  std::vector<uint32_t> ids;
  for (std::string w; ls >> w;) {
    size_t used = 0;
    long long v = -1;
    try {
      v = std::stoll(w, &used);
    } catch (...) {
      used = 0;
    }
    OLMO_CHECK(used == w.size() && v >= 0 && v <= 0xFFFFFFFFll, where, ": '", w,
               "' is not a token id");
    ids.push_back(uint32_t(v));
  }
  return ids;
}

int run_generate(int argc, char** argv) {
  cli::Args a(argc, argv, {"--ids", "--json"});
  int sources = a.has("--prompt") + a.has("--prompts") + a.has("--prompt-ids");
  if (a.has("--help") || a.positional().size() != 1 || sources != 1) {
    std::printf(
        "usage: olmo generate PATH (--prompt TEXT | --prompts FILE | --prompt-ids FILE)\n"
        "       [--tokens N] [--temperature T] [--top-k K] [--top-p P] [--seed S] [--eos ID]\n"
        "       [--tokenizer FILE] [--ids] [--json] [--logits-out FILE]\n"
        "Continues each prompt with the model in PATH (checkpoint dir, run dir or HF dir),\n"
        "using a KV cache; several prompts run as one batch. --tokens: new tokens (32).\n"
        "Greedy unless --temperature > 0 (then top-k / top-p / seed apply). Stops at\n"
        "<|endoftext|> (--eos ID overrides, -1: never). --ids prints token ids; --json prints\n"
        "one object per prompt. Decode speed goes to stderr. --logits-out: the raw fp32\n"
        "logits row of every new token, prompt after prompt (vocab_size floats each).\n");
    return a.has("--help") ? 0 : 1;
  }
  a.finish({"--prompt", "--prompts", "--prompt-ids", "--tokens", "--temperature", "--top-k",
            "--top-p", "--seed", "--eos", "--tokenizer", "--ids", "--json", "--logits-out"});
  eval::GenerateOptions opt;
  opt.max_new_tokens = a.get_int("--tokens", 32);
  OLMO_CHECK(opt.max_new_tokens >= 1, "--tokens must be >= 1");
  opt.sampling.temperature = a.get_double("--temperature", 0);
  opt.sampling.top_k = a.get_int("--top-k", 0);
  opt.sampling.top_p = a.get_double("--top-p", 1.0);
  opt.sampling.seed = uint64_t(a.get_int("--seed", 0));
  eval::validate(opt.sampling);

  auto m = train::load_model_for_inference(a.positional()[0]);
  const int64_t V = m->config().vocab_size;
  std::unique_ptr<tokenizer::Tokenizer> tok;
  std::vector<std::vector<uint32_t>> prompts;
  if (a.has("--prompt-ids")) {
    auto lines = read_lines(a.get("--prompt-ids"));
    for (size_t i = 0; i < lines.size(); ++i)
      prompts.push_back(parse_ids(lines[i], a.get("--prompt-ids") + ":" + std::to_string(i + 1)));
    if (a.has("--tokenizer"))
      tok = std::make_unique<tokenizer::Tokenizer>(tokenizer::Tokenizer::load(a.get("--tokenizer")));
  } else {
    tok = std::make_unique<tokenizer::Tokenizer>(
        tokenizer::Tokenizer::load(a.get("--tokenizer", tokenizer::Tokenizer::default_path())));
    std::vector<std::string> texts =
        a.has("--prompt") ? std::vector<std::string>{a.get("--prompt")} : read_lines(a.get("--prompts"));
    for (size_t i = 0; i < texts.size(); ++i) {
      prompts.push_back(tok->encode(texts[i]));
      OLMO_CHECK(!prompts.back().empty(), "prompt ", i, " encodes to no tokens");
    }
    OLMO_CHECK(int64_t(tok->vocab_size()) <= V, a.positional()[0], ": the model's vocabulary (",
               V, ") is smaller than the tokenizer's (", tok->vocab_size(),
               "); use --prompt-ids for models with another vocabulary");
  }
  if (tok) {
    opt.vocab_limit = std::min<int64_t>(V, tok->vocab_size());
    if (int64_t(tok->eos_id()) < V) opt.eos_id = tok->eos_id();
  }
  opt.eos_id = a.get_int("--eos", opt.eos_id);

  std::vector<std::vector<float>> step_logits;
  if (a.has("--logits-out")) opt.step_logits = &step_logits;
  eval::Generation g = eval::generate(*m, prompts, opt);
  if (a.has("--logits-out")) {
    std::string bytes;
    for (const auto& v : step_logits)
      bytes.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
    write_file_atomic(a.get("--logits-out"), bytes);
  }
  bool tty = isatty(fileno(stdout));
  for (size_t i = 0; i < prompts.size(); ++i) {
    const auto& out = g.tokens[i];
    if (a.has("--json")) {
      nlohmann::json j = {{"prompt_ids", prompts[i]}, {"ids", out}, {"finish", g.finish[i]}};
      if (tok) j["text"] = tok->decode(out);
      std::printf("%s\n", j.dump().c_str());
      continue;
    }
    if (tok) {
      std::printf("%s", tok->decode(prompts[i]).c_str());
      std::printf(tty ? "\033[1m%s\033[0m\n" : "%s\n", tok->decode(out).c_str());
    }
    if (a.has("--ids") || !tok) {
      std::printf("prompt ids:");
      for (auto t : prompts[i]) std::printf(" %u", t);
      std::printf("\nnew ids:");
      for (auto t : out) std::printf(" %u", t);
      std::printf("\n");
    }
  }
  const auto& s = g.stats;
  std::fprintf(stderr,
               "prefill: %lld tokens in %.3f s; decode: %lld tokens in %lld steps, %.3f s "
               "(%.1f tokens/s)\n",
               (long long)s.prompt_tokens, s.prefill_s, (long long)(s.new_tokens - int64_t(prompts.size())),
               (long long)s.decode_steps, s.decode_s,
               s.decode_s > 0 ? double(s.new_tokens - int64_t(prompts.size())) / s.decode_s : 0.0);
  return 0;
}

OLMO_COMMAND("generate", "continue prompts (KV cache; greedy or sampling) from a checkpoint or HF dir",
             run_generate);

}  // namespace
