// `olmo logits`: run an HF-format OLMo 3 model directory on token sequences.
// Input: one sequence of whitespace-separated token ids per line (blank lines skipped).
// Output (--out): fp32 little-endian logits, each sequence's [len x vocab] block in file order;
// for sequences of equal length this is exactly [sequences x positions x vocab]. Each sequence
// is run on its own (batch 1), so lengths may differ.
// --loss: instead print the mean next-token cross-entropy of each sequence (no z-loss).
// --grads G: run all sequences as one batch (equal lengths required) and write the gradient of
// the batch's mean next-token loss (+ z_coef * mean z-loss, --z-loss, default 0) w.r.t. every
// parameter to G as fp32 safetensors under HF names; prints the batch loss.
// stderr: "isa: ACTIVE (CPU: DETECTED)", the kernel path this run dispatched to (OLMO_ISA).
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "cli_app.h"
#include "command.h"
#include "core/cpu.h"
#include "core/error.h"
#include "core/file_io.h"
#include "data/token_lines.h"
#include "model/hf_io.h"
#include "model/safetensors.h"

namespace {

std::vector<std::vector<int32_t>> read_tokens(const std::string& path, int64_t V) {
  return olmo::data::read_token_lines(path, V);
}

int run_logits(int argc, char** argv) {
  auto app = olmo::cli::make_app(
      "logits", "Runs an HF-format OLMo 3 model directory on token sequences, each on its own "
                "(batch 1, so lengths may differ): logits, losses or gradients.");
  std::string dir, tok, out, grads;
  bool loss = false;
  double z_loss = 0.0;
  app->add_option("--model", dir, "HF model directory: config.json + model.safetensors (or a "
                                  "sharded index)")
      ->required();
  app->add_option("--tokens", tok, "one sequence of whitespace-separated token ids per line")
      ->required();
  app->add_option("--out", out, "fp32 little-endian logits: each sequence's [len x vocab] in "
                                "order (= [sequences x positions x vocab] at equal lengths)");
  app->add_flag("--loss", loss, "print the mean next-token loss of each sequence instead");
  app->add_option("--grads", grads, "write d(mean loss)/d(params) of the whole batch (equal "
                                    "lengths) to this file (fp32 safetensors, HF names)");
  app->add_option("--z-loss", z_loss, "--grads: add C * mean z-loss");
  olmo::cli::parse(*app, argc, argv);
  if (!loss && out.empty() && grads.empty())
    olmo::cli::usage_error(*app, "give --out OUT (logits), --loss or --grads G");
  olmo::model::Olmo3 m = olmo::model::load_hf(dir);
  std::fprintf(stderr, "isa: %s (CPU: %s)\n", olmo::isa_name(olmo::active_isa()),
               olmo::isa_name(olmo::detected_isa()));
  const int64_t V = m.config().vocab_size;
  auto seqs = read_tokens(tok, V);
  for (size_t i = 0; i < seqs.size(); ++i)
    OLMO_CHECK(int64_t(seqs[i].size()) <= m.config().max_seq_len, tok, ": sequence ", i + 1,
               " has ", seqs[i].size(), " tokens, more than max_position_embeddings ",
               m.config().max_seq_len, " of ", dir);
  if (!grads.empty()) {
    const int64_t B = int64_t(seqs.size()), T = int64_t(seqs[0].size());
    std::vector<int32_t> ids, tgt;
    for (size_t i = 0; i < seqs.size(); ++i) {
      OLMO_CHECK(int64_t(seqs[i].size()) == T, tok, ": --grads needs sequences of equal length; "
                 "sequence 1 has ", T, " tokens, sequence ", i + 1, " has ", seqs[i].size());
      for (int64_t t = 0; t < T; ++t) {
        ids.push_back(seqs[i][t]);
        tgt.push_back(t + 1 < T ? seqs[i][t + 1] : olmo::kIgnoreIndex);
      }
    }
    const float z = float(z_loss);
    auto r0 = m.forward_loss(ids.data(), tgt.data(), nullptr, B, T, z);
    OLMO_CHECK(r0.count > 0, tok, ": no next-token targets (sequences need 2+ tokens)");
    m.zero_grad();
    auto r = m.forward_backward(ids.data(), tgt.data(), nullptr, B, T, 1.0f / float(r0.count), z);
    olmo::model::SafetensorsWriter w;
    for (const auto& p : m.params_info())
      w.add(p.name, olmo::model::DType::F32, p.shape, m.grads() + p.offset);
    w.write(grads);
    std::printf("batch loss %.8f (ce %.8f, z %.8f, tokens %lld)\n",
                (r.ce_sum + z * r.z_sum) / double(r.count), r.ce_sum / double(r.count),
                r.z_sum / double(r.count), (long long)r.count);
  }
  if (loss) {
    for (size_t i = 0; i < seqs.size(); ++i) {
      const auto& s = seqs[i];
      std::vector<int32_t> tgt(s.size(), olmo::kIgnoreIndex);
      for (size_t t = 0; t + 1 < s.size(); ++t) tgt[t] = s[t + 1];
      auto r = m.forward_loss(s.data(), tgt.data(), nullptr, 1, int64_t(s.size()), 0.0f);
      if (r.count == 0)
        std::printf("sequence %zu: tokens %zu loss n/a (needs 2+ tokens)\n", i + 1, s.size());
      else
        std::printf("sequence %zu: tokens %zu loss %.8f\n", i + 1, s.size(),
                    r.ce_sum / double(r.count));
    }
    return 0;
  }
  if (out.empty()) return 0;
  olmo::AtomicFile f(out);  // core: temporary, fsync, rename, fsync dir; removed on failure
  std::vector<float> logits;
  for (const auto& s : seqs) {
    logits.resize(s.size() * size_t(V));
    m.forward_logits(s.data(), 1, int64_t(s.size()), logits.data());
    f.write(logits.data(), 4 * logits.size());
  }
  f.commit();
  return 0;
}

}  // namespace

OLMO_COMMAND("logits", "run an HF-format model on token sequences: logits or loss", run_logits);
