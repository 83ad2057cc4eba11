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

#include "cli_app.h"
#include "command.h"
#include "core/error.h"
#include "core/file_io.h"
#include "corpus/jsonl.h"
#include "tokenizer/tokenizer.h"
#include "eval/generate.h"
#include "interop/inference_model.h"

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
  auto app = cli::make_app(
      "generate",
      "Continues each prompt with the model in PATH, using a KV cache; several prompts run as "
      "one batch. Greedy unless --temperature > 0 (then --top-k / --top-p / --seed apply). "
      "Stops at <|endoftext|>. Decode speed goes to stderr.");
  std::string path, prompt, prompts_file, ids_file, tok_path, logits_out;
  bool print_ids = false, json = false;
  eval::GenerateOptions opt;
  opt.max_new_tokens = 32;
  app->add_option("PATH", path, "checkpoint dir, run dir (newest complete checkpoint) or HF dir")
      ->required();
  auto* source = app->add_option_group("prompt source", "exactly one of");
  source->add_option("--prompt", prompt, "one prompt (text)");
  source->add_option("--prompts", prompts_file, "a file of prompts, one per line");
  source->add_option("--prompt-ids", ids_file, "a file of token-id lines, one prompt per line (no "
                                               "tokenizer needed)");
  source->require_option(1);
  app->add_option("--tokens", opt.max_new_tokens, "new tokens per prompt")
      ->check(olmo::cli::positive());
  app->add_option("--temperature", opt.sampling.temperature, "0: greedy");
  app->add_option("--top-k", opt.sampling.top_k, "sample from the K most likely (0: all)");
  app->add_option("--top-p", opt.sampling.top_p, "nucleus sampling mass");
  app->add_option("--seed", opt.sampling.seed, "sampling seed");
  int64_t eos_arg = -1;
  auto* eos_opt = app->add_option("--eos", eos_arg, "stop token id (-1: never)")
                      ->default_str("<|endoftext|>");
  app->add_option("--tokenizer", tok_path, "rank file (default data/tokenizer/"
                                           "cl100k_base.tiktoken)");
  app->add_flag("--ids", print_ids, "also print the token ids");
  app->add_flag("--json", json, "one JSON object per prompt (prompt_ids, ids, text, finish)");
  app->add_option("--logits-out", logits_out, "the raw fp32 logits row of every new token, "
                                              "prompt after prompt (vocab_size floats each)");
  cli::parse(*app, argc, argv);
  eval::validate(opt.sampling);
  auto m = train::load_model_for_inference(path);
  const int64_t V = m->config().vocab_size;
  std::unique_ptr<tokenizer::Tokenizer> tok;
  std::vector<std::vector<uint32_t>> prompts;
  if (!ids_file.empty()) {
    auto lines = read_lines(ids_file);
    for (size_t i = 0; i < lines.size(); ++i)
      prompts.push_back(parse_ids(lines[i], ids_file + ":" + std::to_string(i + 1)));
    if (!tok_path.empty())
      tok = std::make_unique<tokenizer::Tokenizer>(tokenizer::Tokenizer::load(tok_path));
  } else {
    tok = std::make_unique<tokenizer::Tokenizer>(tokenizer::Tokenizer::load(
        tok_path.empty() ? tokenizer::Tokenizer::default_path() : tok_path));
    std::vector<std::string> texts =
        prompts_file.empty() ? std::vector<std::string>{prompt} : read_lines(prompts_file);
    for (size_t i = 0; i < texts.size(); ++i) {
      prompts.push_back(tok->encode(texts[i]));
      OLMO_CHECK(!prompts.back().empty(), "prompt ", i, " encodes to no tokens");
    }
    OLMO_CHECK(int64_t(tok->vocab_size()) <= V, path, ": the model's vocabulary (",
               V, ") is smaller than the tokenizer's (", tok->vocab_size(),
               "); use --prompt-ids for models with another vocabulary");
  }
  if (tok) {
    opt.vocab_limit = std::min<int64_t>(V, tok->vocab_size());
    if (int64_t(tok->eos_id()) < V) opt.eos_id = tok->eos_id();
  }
  if (eos_opt->count()) opt.eos_id = eos_arg;

  std::vector<std::vector<float>> step_logits;
  if (!logits_out.empty()) opt.step_logits = &step_logits;
  eval::Generation g = eval::generate(*m, prompts, opt);
  if (!logits_out.empty()) {
    std::string bytes;
    for (const auto& v : step_logits)
      bytes.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
    write_file_atomic(logits_out, bytes);
  }
  bool tty = isatty(fileno(stdout));
  // Token ids -> text as tiktoken's decode(errors="replace"): a generated sequence may end
  // inside a multi-byte character or hold byte tokens that form no UTF-8 at all; each invalid
  // sequence becomes U+FFFD, so the terminal and JSON (which refuses invalid UTF-8) get text.
  auto text = [&](const std::vector<uint32_t>& ids) {
    std::string s = tok->decode(ids);
    corpus::sanitize_utf8(s);
    return s;
  };
  for (size_t i = 0; i < prompts.size(); ++i) {
    const auto& out = g.tokens[i];
    if (json) {
      nlohmann::json j = {{"prompt_ids", prompts[i]}, {"ids", out}, {"finish", g.finish[i]}};
      if (tok) j["text"] = text(out);
      std::printf("%s\n", j.dump().c_str());
      continue;
    }
    if (tok) {
      std::printf("%s", text(prompts[i]).c_str());
      std::printf(tty ? "\033[1m%s\033[0m\n" : "%s\n", text(out).c_str());
    }
    if (print_ids || !tok) {
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
