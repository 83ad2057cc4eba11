// `olmo export PATH --out HF_DIR`: a trained model as a Hugging Face model directory
// (interop/hf_export.h): config.json, model.safetensors (sharded + index above --max-shard-size),
// generation_config.json, and the dolma2 tokenizer as tokenizer.json + tokenizer_config.json, so
// that transformers' AutoModelForCausalLM / AutoTokenizer.from_pretrained(HF_DIR) work offline.
// PATH: a checkpoint dir (RUN_DIR/stepN), a run dir (newest complete checkpoint) or an HF dir.
// `olmo export --config CONFIG.yaml [key=value ...] [--seed S] --out HF_DIR` exports the config's model freshly
// initialised with seed S instead (tests, demos). An incomplete checkpoint (no COMMITTED marker)
// is refused with an error naming it.
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <string>

#include "cli_app.h"
#include "ckpt/checkpoint.h"
#include "command.h"
#include "core/error.h"
#include "tokenizer/bpe.h"
#include "tokenizer/pretokenize.h"
#include "tokenizer/tokenizer.h"
#include "interop/hf_export.h"
#include "train/config.h"
#include "train/model_setup.h"
#include "interop/inference_model.h"

namespace {

namespace fs = std::filesystem;
using namespace olmo;

// "5GB", "500MB", "2KB" (decimal units, as transformers' max_shard_size) or plain bytes.
uint64_t parse_size(const std::string& s) {
  size_t i = 0;
  while (i < s.size() && (std::isdigit(uint8_t(s[i])) || s[i] == '.')) ++i;
  std::string num = s.substr(0, i), unit = s.substr(i);
  double v = 0;
  try {
    v = num.empty() ? -1 : std::stod(num);
  } catch (...) {
    v = -1;
  }
  double mul = unit.empty() || unit == "B" ? 1 : unit == "KB" ? 1e3 : unit == "MB" ? 1e6
             : unit == "GB" ? 1e9 : -1;
  OLMO_CHECK(v > 0 && mul > 0, "--max-shard-size: '", s, "' is not a size like 5GB, 500MB or ",
             "a byte count");
  return uint64_t(v * mul);
}

// Refuses checkpoint dirs that were never committed, with a message that says so.
void check_complete(const std::string& path) {
  fs::path p(path);
  OLMO_CHECK(fs::exists(p), path, ": not found");
  OLMO_CHECK(fs::is_directory(p), path, ": not a directory (expected a checkpoint, run or HF dir)");
  if (fs::exists(p / "config.json") || olmo::ckpt::is_committed(path)) return;
  OLMO_CHECK(!olmo::ckpt::looks_like_checkpoint(path), path,
             ": incomplete checkpoint (no COMMITTED marker: the save was interrupted or is still "
             "running); export a complete checkpoint or the run dir (its newest complete one)");
}

model::HfTokenizerSpec dolma2_spec(const tokenizer::Tokenizer& tok) {
  model::HfTokenizerSpec s;
  const tokenizer::BpeModel& bpe = tok.bpe();
  s.tokens.resize(bpe.size());
  for (uint32_t id = 0; id < bpe.size(); ++id)
    if (bpe.is_token(id)) s.tokens[id] = std::string(bpe.token_bytes(id));
  for (const std::string& sp : tokenizer::dolma2_specials()) {
    uint32_t id = tok.special_id(sp);
    if (id != tokenizer::kNoToken) s.specials.emplace_back(sp, id);
  }
  s.pattern = tok.pretokenizer().pattern();
  s.eos_id = tok.eos_id();
  s.pad_id = tok.pad_id();
  return s;
}

int run_export(int argc, char** argv) {
  auto app = cli::make_app(
      "export",
      "Writes a Hugging Face model dir (config.json, model.safetensors or shards + index, "
      "generation_config.json, tokenizer.json, tokenizer_config.json) loadable offline by "
      "transformers, from a checkpoint, a run dir (its newest complete checkpoint) or an HF "
      "dir; or, with --config, from a config's model initialised with --seed.");
  std::vector<std::string> pos;
  std::string out, tok_path, shard_size, config;
  bool no_tokenizer = false, hf_vocab = false, force = false;
  uint64_t seed = 0;
  app->add_option("PATH", pos,
                  "checkpoint dir, run dir or HF dir; with --config: key=value overrides");
  app->add_option("--out", out, "HF_DIR to write")->required();
  app->add_option("--tokenizer", tok_path, "rank file (default data/tokenizer/"
                                           "cl100k_base.tiktoken)");
  app->add_flag("--no-tokenizer", no_tokenizer, "no tokenizer files");
  app->add_option("--max-shard-size", shard_size, "shard the weights above this size: 5GB, "
                                                  "500MB, 2KB or a byte count (default 5GB)")
      ->check(CLI::Validator(
          [](std::string& s) {
            try {
              parse_size(s);
            } catch (const Error& e) {
              return std::string(e.what());
            }
            return std::string();
          },
          "SIZE"));
  app->add_flag("--hf-vocab", hf_vocab, "slice embed_tokens/lm_head to the tokenizer's 100278 "
                                        "ids (as released OLMo checkpoints; the export then no "
                                        "longer loads into a padded-vocab trainer)");
  app->add_flag("--force", force, "overwrite a non-empty HF_DIR");
  app->add_option("--config", config, "CONFIG.yaml: export its model, freshly initialised");
  auto* seed_opt = app->add_option("--seed", seed, "init seed with --config");
  cli::parse(*app, argc, argv);
  const bool from_config = !config.empty();
  if (!from_config && pos.size() != 1)
    cli::usage_error(*app, "give one PATH (or --config CONFIG.yaml [key=value ...])");
  if (!from_config && seed_opt->count())
    cli::usage_error(*app, "--seed only applies with --config");
  std::unique_ptr<model::Olmo3> m;
  std::string source;
  if (from_config) {
    train::Config cfg = train::load_config(config, pos);
    m = std::make_unique<model::Olmo3>(train::model_config(cfg));
    m->init_weights(seed);
    source = config + " (seed " + std::to_string(seed) + ")";
  } else {
    source = pos[0];
    check_complete(source);
    m = train::load_model_for_inference(source);
  }

  model::HfExportOptions opt;
  opt.overwrite = force;
  if (!shard_size.empty()) opt.max_shard_bytes = parse_size(shard_size);
  std::unique_ptr<tokenizer::Tokenizer> tok;
  model::HfTokenizerSpec spec;
  if (!no_tokenizer) {
    tok = std::make_unique<tokenizer::Tokenizer>(tokenizer::Tokenizer::load(
        tok_path.empty() ? tokenizer::Tokenizer::default_path() : tok_path));
    if (int64_t(tok->vocab_size()) <= m->config().vocab_size) {
      spec = dolma2_spec(*tok);
      opt.tokenizer = &spec;
    } else {
      std::fprintf(stderr,
                   "olmo export: note: no tokenizer files: the model's vocabulary (%lld) is "
                   "smaller than the tokenizer's (%u)\n",
                   (long long)m->config().vocab_size, tok->vocab_size());
    }
  }
  if (hf_vocab) {
    OLMO_CHECK(tok, "--hf-vocab needs the tokenizer (drop --no-tokenizer)");
    opt.vocab_rows = tok->vocab_size();
  }
  auto files = model::export_hf(*m, out, opt);
  std::printf("exported %s (%lld parameters) to %s:", source.c_str(),
              (long long)m->num_params(), out.c_str());
  for (auto& f : files) std::printf(" %s", f.c_str());
  std::printf("\n");
  return 0;
}

OLMO_COMMAND("export", "a checkpoint as a Hugging Face model dir (weights, config, tokenizer)",
             run_export);

}  // namespace
