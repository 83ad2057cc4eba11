// `olmo data`: inspect and export OLMo-core's data order and our loader's output, so anyone can
// check them against OLMo-core / numpy.
//   olmo data global-indices --size N --seed S --epoch E [--no-shuffle] --out FILE
//       the epoch order as raw little-endian uint32 (OLMo-core's global-indices file format)
//   olmo data info FILES... | --mix FILE|NAME [--data-root DIR]  --seq-len T [--global-batch B]
//       (--mix NAME: an OLMo-core mix by name under --data-root, every file present)
//   olmo data batches FILES... | --mix ...  --seq-len T --global-batch B --seed S
//       [--rank r --world W] [--no-shuffle] [--batches K | --epochs E] [--state-in FILE
//       [--ignore-fingerprint] [--resume-batch B2]] [--state-out FILE] [--out-tokens FILE]
//       [--out-jsonl FILE] [--doc-lens]
//       runs the loader; writes this rank's tokens (raw int32 [steps, B/W, T]), one JSON line per
//       batch (epoch, batch, instance indices, global hash, optional doc_lens), the final state
//   olmo data eval FILES... --seq-len T --out-tokens FILE [--out-targets FILE]
//       padded one-document-per-instance eval instances (raw int32 [N, T])
//   olmo data mix NAME --root DIR [--tokenizer T] [--census] | olmo data mix --list
//       an OLMo-core mix by name (data/named_mix.h): one `label,path` line per token file, as
//       DataMix(NAME).build(DIR, T); --census adds "present P of N files, K tokens[, first
//       missing PATH]"; --list prints the known names
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli_app.h"
#include "command.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/hash.h"
#include "data/eval_dataset.h"
#include "data/loader.h"
#include "data/mix.h"
#include "data/named_mix.h"
#include "data/pcg64.h"

namespace {

using olmo::cat;
using olmo::Error;
namespace od = olmo::data;

// The dataset flags of info, batches and eval.
struct DatasetArgs {
  std::vector<std::string> files;
  std::string mix, data_root, tokenizer = "allenai/dolma2-tokenizer";
  std::string tokenizer_id = "allenai/dolma3-tokenizer";
  int64_t seq_len = 8192;
  uint32_t vocab = olmo::kDolma2VocabSize, eos = olmo::kDolma2Eos, pad = olmo::kDolma2Pad;
};

void declare_dataset(CLI::App& c, DatasetArgs& d) {
  c.add_option("FILES", d.files, "token files (.npy, headerless uint32)");
  c.add_option("--mix", d.mix, "a mix file (label,path lines) or an OLMo-core mix by name "
                               "(data/named_mix.h), instead of FILES");
  c.add_option("--data-root", d.data_root, "the root the mix's paths are under");
  c.add_option("--tokenizer", d.tokenizer, "the tokenizer directory of a mix by name");
  c.add_option("--tokenizer-id", d.tokenizer_id, "the {TOKENIZER} of a mix file's paths");
  c.add_option("--seq-len", d.seq_len, "tokens per instance")->check(olmo::cli::positive());
  c.add_option("--vocab", d.vocab, "vocabulary size (token ids must be below it)");
  c.add_option("--eos", d.eos, "EOS token id");
  c.add_option("--pad", d.pad, "padding token id");
}

std::vector<std::string> dataset_paths(const DatasetArgs& d) {
  std::vector<std::string> p = d.files;
  if (!d.mix.empty()) {
    OLMO_CHECK(p.empty(), "give token files or --mix, not both");
    p = od::looks_like_mix_name(d.mix)  // an OLMo-core mix by name (needs --data-root)
            ? od::named_mix_paths(d.mix, d.data_root, d.tokenizer)
            : od::load_mix(d.mix, d.data_root, d.tokenizer_id).paths;
  }
  OLMO_CHECK(!p.empty(), "no token files given (positional FILES or --mix FILE)");
  return p;
}

od::FslOptions options(const DatasetArgs& d) {
  od::FslOptions o;
  o.eos_id = d.eos;
  o.pad_id = d.pad;
  return o;
}

void write_raw(olmo::AtomicFile* f, const std::vector<int32_t>& v) {
  if (f) f->write(v.data(), v.size() * 4);
}

// An optional output (--out-tokens, ...): published atomically (core AtomicFile) by commit().
std::unique_ptr<olmo::AtomicFile> open_out(const std::string& path) {
  return path.empty() ? nullptr : std::make_unique<olmo::AtomicFile>(path);
}

// global-indices
struct IndicesArgs {
  long long size = 0, epoch = 1;
  uint64_t seed = 0;
  bool no_shuffle = false;
  std::string out;
};

int global_indices(const IndicesArgs& a) {
  auto idx = od::global_order(a.size, a.seed, a.epoch, !a.no_shuffle);
  olmo::write_file_atomic(a.out, std::string_view(reinterpret_cast<const char*>(idx.data()),
                                                  idx.size() * 4));
  return 0;
}

int info(const DatasetArgs& d, int64_t global_batch) {
  od::FslDataset ds(dataset_paths(d), d.seq_len, d.vocab, options(d));
  std::printf("files %zu\ninstances %lld\ntokens %lld\nfingerprint %s\n", ds.paths().size(),
              (long long)ds.size(), (long long)ds.num_tokens(), ds.fingerprint().c_str());
  if (global_batch > 0)
    std::printf("batches_per_epoch %lld\n", (long long)(ds.size() / global_batch));
  return 0;
}

// batches
struct BatchesArgs {
  int64_t global_batch = 1, resume_batch = 0, batches = -1, epochs = 0;
  uint64_t seed = 0;
  int rank = 0, world = 1;
  bool no_shuffle = false, ignore_fingerprint = false, doc_lens = false;
  std::string state_in, state_out, out_tokens, out_jsonl;
};

int batches(const DatasetArgs& d, const BatchesArgs& a) {
  od::FslDataset ds(dataset_paths(d), d.seq_len, d.vocab, options(d));
  int64_t gb = a.global_batch;
  if (!a.state_in.empty() && a.resume_batch > 0) gb = a.resume_batch;
  od::DataLoader dl(ds, gb, a.seed, a.rank, a.world, !a.no_shuffle);
  if (!a.state_in.empty())
    dl.load_state(nlohmann::json::parse(olmo::read_file(a.state_in)), a.ignore_fingerprint);
  const int64_t max_batches = a.batches;
  if (a.epochs > 0) dl.set_max_epochs(a.epochs);
  else if (max_batches < 0) dl.set_max_epochs(dl.epoch());
  auto tok = open_out(a.out_tokens), js = open_out(a.out_jsonl);
  od::DataLoader::Batch b;
  for (int64_t n = 0; (max_batches < 0 || n < max_batches) && dl.next(b); ++n) {
    write_raw(tok.get(), b.tokens);
    if (js) {
      nlohmann::json j = {{"epoch", b.epoch}, {"batch", b.batch_index},
                          {"indices", b.instance_indices}, {"hash", olmo::hex64(b.global_hash)}};
      if (a.doc_lens) {
        nlohmann::json dls = nlohmann::json::array();
        for (int64_t i : b.instance_indices) dls.push_back(ds.document_lengths(i));
        j["doc_lens"] = dls;
      }
      js->write(j.dump() + "\n");
    }
  }
  if (tok) tok->commit();
  if (js) js->commit();
  if (!a.state_out.empty()) olmo::write_file_atomic(a.state_out, dl.state().dump(1));
  return 0;
}

int eval(const DatasetArgs& d, const std::string& out_tokens, const std::string& out_targets) {
  od::EvalDataset ds(dataset_paths(d), d.seq_len, d.vocab, options(d));
  const int64_t T = ds.seq_len();
  std::vector<int32_t> ids(T), tg(T);
  olmo::AtomicFile ft(out_tokens);
  auto fy = open_out(out_targets);
  for (int64_t i = 0; i < ds.size(); ++i) {
    ds.read(i, ids.data(), tg.data(), nullptr);
    write_raw(&ft, ids);
    write_raw(fy.get(), tg);
  }
  ft.commit();
  if (fy) fy->commit();
  std::printf("instances %lld truncated %lld fingerprint %s\n", (long long)ds.size(),
              (long long)ds.num_truncated(), ds.fingerprint().c_str());
  return 0;
}

// mix
struct MixArgs {
  std::string name, root, tokenizer = "allenai/dolma2-tokenizer";
  bool census = false, list = false;
};

int mix(const CLI::App& app, const MixArgs& a) {
  if (a.list) {
    for (auto& n : od::known_mix_names()) std::printf("%s\n", n.c_str());
    return 0;
  }
  if (a.name.empty()) olmo::cli::usage_error(app, "give one mix NAME (or --list)");
  od::Mix m = od::build_named_mix(a.name, a.root, a.tokenizer);
  for (size_t i = 0; i < m.paths.size(); ++i)
    std::printf("%s,%s\n", m.labels[i].c_str(), m.paths[i].c_str());
  if (a.census) {
    od::MixCensus c = od::mix_census(m.paths);
    std::printf("present %lld of %lld files, %llu tokens%s\n", (long long)c.present,
                (long long)c.files, (unsigned long long)c.tokens,
                c.first_missing.empty() ? "" : cat(", first missing ", c.first_missing).c_str());
  }
  return 0;
}

int run(int argc, char** argv) {
  auto app = olmo::cli::make_app(
      "data", "OLMo-core's data order and our loader's output, for checking them against "
              "OLMo-core / numpy.");
  app->require_subcommand(1);

  IndicesArgs ia;
  auto* gi = app->add_subcommand(
      "global-indices", "the epoch order as raw little-endian uint32 (OLMo-core's "
                        "global-indices file format)");
  gi->add_option("--size", ia.size, "instances")->required()->check(olmo::cli::non_negative());
  gi->add_option("--seed", ia.seed, "the data seed")->required();
  gi->add_option("--epoch", ia.epoch, "the epoch (>= 1)");
  gi->add_flag("--no-shuffle", ia.no_shuffle, "the identity order");
  gi->add_option("--out", ia.out, "the file to write")->required();

  DatasetArgs din, dba, dev;
  int64_t info_gb = 0;
  auto* in = app->add_subcommand("info", "files, instances, tokens and the dataset fingerprint");
  declare_dataset(*in, din);
  in->add_option("--global-batch", info_gb, "also print batches per epoch for this batch")
      ->check(olmo::cli::positive());

  BatchesArgs ba;
  auto* bt = app->add_subcommand(
      "batches", "runs the loader; writes this rank's tokens (raw int32 [steps, B/W, T]), one "
                 "JSON line per batch (epoch, batch, instance indices, global hash, optional "
                 "doc_lens) and the final state");
  declare_dataset(*bt, dba);
  bt->add_option("--global-batch", ba.global_batch, "instances per step")
      ->check(olmo::cli::positive());
  bt->add_option("--seed", ba.seed, "the data seed");
  bt->add_option("--rank", ba.rank, "this rank")->check(olmo::cli::non_negative());
  bt->add_option("--world", ba.world, "ranks")->check(olmo::cli::positive());
  bt->add_flag("--no-shuffle", ba.no_shuffle, "the identity order");
  bt->add_option("--batches", ba.batches, "stop after K batches (-1: the epoch)");
  bt->add_option("--epochs", ba.epochs, "run E epochs (0: one)")->check(olmo::cli::non_negative());
  bt->add_option("--state-in", ba.state_in, "resume from this loader state (JSON)");
  bt->add_flag("--ignore-fingerprint", ba.ignore_fingerprint,
               "resume even if the dataset fingerprint differs");
  bt->add_option("--resume-batch", ba.resume_batch, "with --state-in: the global batch after "
                                                    "the resume (0: --global-batch)")
      ->check(olmo::cli::non_negative());
  bt->add_option("--state-out", ba.state_out, "write the final loader state (JSON)");
  bt->add_option("--out-tokens", ba.out_tokens, "this rank's tokens, raw int32");
  bt->add_option("--out-jsonl", ba.out_jsonl, "one JSON line per batch");
  bt->add_flag("--doc-lens", ba.doc_lens, "add the document lengths of each instance");

  std::string out_tokens, out_targets;
  auto* ev = app->add_subcommand("eval", "padded one-document-per-instance eval instances (raw "
                                         "int32 [N, T])");
  declare_dataset(*ev, dev);
  ev->add_option("--out-tokens", out_tokens, "the instances")->required();
  ev->add_option("--out-targets", out_targets, "their targets");

  MixArgs ma;
  auto* mx = app->add_subcommand(
      "mix", "an OLMo-core mix by name (data/named_mix.h): one `label,path` line per token "
             "file, as DataMix(NAME).build(DIR, T)");
  mx->add_option("NAME", ma.name, "the mix name");
  mx->add_option("--root", ma.root, "DIR: the data root");
  mx->add_option("--tokenizer", ma.tokenizer, "T: the tokenizer directory");
  mx->add_flag("--census", ma.census, "add \"present P of N files, K tokens[, first missing "
                                      "PATH]\"");
  mx->add_flag("--list", ma.list, "print the known names");

  olmo::cli::parse(*app, argc, argv);
  if (gi->parsed()) return global_indices(ia);
  if (in->parsed()) return info(din, info_gb);
  if (bt->parsed()) return batches(dba, ba);
  if (ev->parsed()) return eval(dev, out_tokens, out_targets);
  return mix(*app, ma);
}

}  // namespace

OLMO_COMMAND("data", "data order and loader: global-indices, info, batches, eval, mix", run);
