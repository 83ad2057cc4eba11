// `olmo export PATH --out HF_DIR`: a trained model as a Hugging Face model directory
// (model/hf_export.h): config.json, model.safetensors (sharded + index above --max-shard-size),
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

#include "args.h"
#include "command.h"
#include "core/error.h"
#include "tokenizer/bpe.h"
#include "tokenizer/pretokenize.h"
#include "tokenizer/tokenizer.h"
#include "model/hf_export.h"
#include "train/config.h"
#include "train/model_setup.h"
#include "train/inference_model.h"

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
  if (fs::exists(p / "config.json") || fs::exists(p / "COMMITTED")) return;
  std::string name = p.filename().string();
  if (name.empty()) name = p.parent_path().filename().string();
  bool looks_ckpt = fs::exists(p / "index.json") || fs::exists(p / "state.json") ||
                    fs::exists(p / "tensors-00000.bin") || name.rfind("step", 0) == 0;
  OLMO_CHECK(!looks_ckpt, path,
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
  cli::Args a(argc, argv, {"--hf-vocab", "--no-tokenizer", "--force"});
  bool from_config = a.has("--config");
  if (a.has("--help") || !a.has("--out") || (!from_config && a.positional().size() != 1)) {
    std::printf(
        "usage: olmo export PATH --out HF_DIR [--tokenizer FILE] [--no-tokenizer]\n"
        "                   [--max-shard-size 5GB] [--hf-vocab] [--force]\n"
        "       olmo export --config CONFIG.yaml [key=value ...] [--seed S] --out HF_DIR [...]\n"
        "Writes a Hugging Face model dir (config.json, model.safetensors or shards + index,\n"
        "generation_config.json, tokenizer.json, tokenizer_config.json) loadable offline by\n"
        "transformers. PATH: checkpoint dir, run dir (newest complete checkpoint) or HF dir.\n"
        "--config: the config's model (with key=value overrides), initialised with --seed\n"
        "(default 0), instead of PATH.\n"
        "--hf-vocab: slice embed_tokens/lm_head to the tokenizer's 100278 ids (as released\n"
        "OLMo checkpoints; the export then no longer loads into a padded-vocab trainer).\n"
        "--force: overwrite a non-empty HF_DIR.\n");
    return a.has("--help") ? 0 : 1;
  }
  a.finish({"--out", "--tokenizer", "--no-tokenizer", "--max-shard-size", "--hf-vocab",
            "--force", "--config", "--seed"});
  std::unique_ptr<model::Olmo3> m;
  std::string source;
  if (from_config) {
    train::Config cfg = train::load_config(a.get("--config"), a.positional());
    m = std::make_unique<model::Olmo3>(train::model_config(cfg));
    m->init_weights(uint64_t(a.get_int("--seed", 0)));
    source = a.get("--config") + " (seed " + std::to_string(a.get_int("--seed", 0)) + ")";
  } else {
    OLMO_CHECK(!a.has("--seed"), "--seed only applies with --config");
    source = a.positional()[0];
    check_complete(source);
    m = train::load_model_for_inference(source);
  }

  model::HfExportOptions opt;
  opt.overwrite = a.has("--force");
  if (a.has("--max-shard-size")) opt.max_shard_bytes = parse_size(a.get("--max-shard-size"));
  std::unique_ptr<tokenizer::Tokenizer> tok;
  model::HfTokenizerSpec spec;
  if (!a.has("--no-tokenizer")) {
    tok = std::make_unique<tokenizer::Tokenizer>(
        tokenizer::Tokenizer::load(a.get("--tokenizer", tokenizer::Tokenizer::default_path())));
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
  if (a.has("--hf-vocab")) {
    OLMO_CHECK(tok, "--hf-vocab needs the tokenizer (drop --no-tokenizer)");
    opt.vocab_rows = tok->vocab_size();
  }
  auto files = model::export_hf(*m, a.get("--out"), opt);
  std::printf("exported %s (%lld parameters) to %s:", source.c_str(),
              (long long)m->num_params(), a.get("--out").c_str());
  for (auto& f : files) std::printf(" %s", f.c_str());
  std::printf("\n");
  return 0;
}

OLMO_COMMAND("export", "a checkpoint as a Hugging Face model dir (weights, config, tokenizer)",
             run_export);

}  // namespace
