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

#include "args.h"
#include "command.h"
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
using olmo::cli::Args;
namespace od = olmo::data;

std::vector<std::string> dataset_paths(const Args& a) {
  std::vector<std::string> p(a.positional().begin() + 1, a.positional().end());
  if (a.has("--mix")) {
    OLMO_CHECK(p.empty(), "give token files or --mix, not both");
    const std::string m = a.get("--mix");
    p = od::looks_like_mix_name(m)  // an OLMo-core mix by name (needs --data-root)
            ? od::named_mix_paths(m, a.get("--data-root"),
                                  a.get("--tokenizer", "allenai/dolma2-tokenizer"))
            : od::load_mix(m, a.get("--data-root"),
                           a.get("--tokenizer-id", "allenai/dolma3-tokenizer")).paths;
  }
  OLMO_CHECK(!p.empty(), "no token files given (positional FILES or --mix FILE)");
  return p;
}

od::FslOptions options(const Args& a) {
  od::FslOptions o;
  o.eos_id = static_cast<uint32_t>(a.get_int("--eos", olmo::kDolma2Eos));
  o.pad_id = static_cast<uint32_t>(a.get_int("--pad", olmo::kDolma2Pad));
  return o;
}

int global_indices(const Args& a) {
  a.finish({"--size", "--seed", "--epoch", "--out", "--no-shuffle"});
  long long n = std::stoll(a.require("--size"));
  OLMO_CHECK(n >= 0, "--size must be >= 0");
  uint64_t seed = std::stoull(a.require("--seed"));
  long long epoch = a.get_int("--epoch", 1);
  auto idx = od::global_order(n, seed, epoch, !a.has("--no-shuffle"));
  olmo::write_file_atomic(a.require("--out"),
                          std::string_view(reinterpret_cast<const char*>(idx.data()), idx.size() * 4));
  return 0;
}

void write_raw(olmo::AtomicFile* f, const std::vector<int32_t>& v) {
  if (f) f->write(v.data(), v.size() * 4);
}

// An optional output (--out-tokens, ...): published atomically (core AtomicFile) by commit().
std::unique_ptr<olmo::AtomicFile> open_out(const Args& a, const char* flag) {
  return a.has(flag) ? std::make_unique<olmo::AtomicFile>(a.get(flag)) : nullptr;
}

int info(const Args& a) {
  a.finish({"--mix", "--data-root", "--tokenizer-id", "--tokenizer",
            "--seq-len", "--global-batch", "--vocab",
            "--eos", "--pad"});
  od::FslDataset ds(dataset_paths(a), a.get_int("--seq-len", 8192),
                    static_cast<uint32_t>(a.get_int("--vocab", olmo::kDolma2VocabSize)), options(a));
  std::printf("files %zu\ninstances %lld\ntokens %lld\nfingerprint %s\n", ds.paths().size(),
              (long long)ds.size(), (long long)ds.num_tokens(), ds.fingerprint().c_str());
  if (a.has("--global-batch"))
    std::printf("batches_per_epoch %lld\n", (long long)(ds.size() / a.get_int("--global-batch", 1)));
  return 0;
}

int batches(const Args& a) {
  a.finish({"--mix", "--data-root", "--tokenizer-id", "--tokenizer",
            "--seq-len", "--global-batch", "--seed",
            "--rank", "--world", "--no-shuffle", "--batches", "--epochs", "--state-in",
            "--ignore-fingerprint", "--resume-batch", "--state-out", "--out-tokens", "--out-jsonl",
            "--doc-lens", "--vocab", "--eos", "--pad"});
  od::FslDataset ds(dataset_paths(a), a.get_int("--seq-len", 8192),
                    static_cast<uint32_t>(a.get_int("--vocab", olmo::kDolma2VocabSize)), options(a));
  int64_t gb = a.get_int("--global-batch", 1);
  if (a.has("--state-in") && a.has("--resume-batch")) gb = a.get_int("--resume-batch", gb);
  od::DataLoader dl(ds, gb, std::stoull(a.get("--seed", "0")), (int)a.get_int("--rank", 0),
                    (int)a.get_int("--world", 1), !a.has("--no-shuffle"));
  if (a.has("--state-in"))
    dl.load_state(nlohmann::json::parse(olmo::read_file(a.get("--state-in"))),
                  a.has("--ignore-fingerprint"));
  int64_t max_batches = a.get_int("--batches", -1);
  if (a.has("--epochs")) dl.set_max_epochs(a.get_int("--epochs", 1));
  else if (max_batches < 0) dl.set_max_epochs(dl.epoch());
  auto tok = open_out(a, "--out-tokens"), js = open_out(a, "--out-jsonl");
  od::DataLoader::Batch b;
  for (int64_t n = 0; (max_batches < 0 || n < max_batches) && dl.next(b); ++n) {
    write_raw(tok.get(), b.tokens);
    if (js) {
      nlohmann::json j = {{"epoch", b.epoch}, {"batch", b.batch_index},
                          {"indices", b.instance_indices}, {"hash", olmo::hex64(b.global_hash)}};
      if (a.has("--doc-lens")) {
        nlohmann::json dls = nlohmann::json::array();
        for (int64_t i : b.instance_indices) dls.push_back(ds.document_lengths(i));
        j["doc_lens"] = dls;
      }
      js->write(j.dump() + "\n");
    }
  }
  if (tok) tok->commit();
  if (js) js->commit();
  if (a.has("--state-out")) olmo::write_file_atomic(a.get("--state-out"), dl.state().dump(1));
  return 0;
}

int eval(const Args& a) {
  a.finish({"--mix", "--data-root", "--tokenizer-id", "--tokenizer",
            "--seq-len", "--out-tokens", "--out-targets",
            "--vocab", "--eos", "--pad"});
  od::EvalDataset ds(dataset_paths(a), a.get_int("--seq-len", 8192),
                     static_cast<uint32_t>(a.get_int("--vocab", olmo::kDolma2VocabSize)), options(a));
  const int64_t T = ds.seq_len();
  std::vector<int32_t> ids(T), tg(T);
  olmo::AtomicFile ft(a.require("--out-tokens"));
  auto fy = open_out(a, "--out-targets");
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

int mix(const Args& a) {
  a.finish({"--root", "--tokenizer", "--census", "--list"});
  if (a.has("--list")) {
    for (auto& n : od::known_mix_names()) std::printf("%s\n", n.c_str());
    return 0;
  }
  OLMO_CHECK(a.positional().size() == 2, "olmo data mix NAME --root DIR: give one mix name");
  od::Mix m = od::build_named_mix(a.positional()[1], a.get("--root"),
                                  a.get("--tokenizer", "allenai/dolma2-tokenizer"));
  for (size_t i = 0; i < m.paths.size(); ++i)
    std::printf("%s,%s\n", m.labels[i].c_str(), m.paths[i].c_str());
  if (a.has("--census")) {
    od::MixCensus c = od::mix_census(m.paths);
    std::printf("present %lld of %lld files, %llu tokens%s\n", (long long)c.present,
                (long long)c.files, (unsigned long long)c.tokens,
                c.first_missing.empty() ? "" : cat(", first missing ", c.first_missing).c_str());
  }
  return 0;
}

int run(int argc, char** argv) {
  Args a(argc, argv, {"--no-shuffle", "--ignore-fingerprint", "--doc-lens", "--census", "--list"});
  const std::string sub = a.positional().empty() ? "" : a.positional()[0];
  if (a.has("--help") || sub.empty()) {
    std::printf(
        "usage: olmo data global-indices --size N --seed S --epoch E [--no-shuffle] --out FILE\n"
        "       olmo data info    FILES... | --mix FILE [--data-root DIR]  --seq-len T\n"
        "       olmo data batches FILES... | --mix FILE  --seq-len T --global-batch B --seed S\n"
        "                 [--rank r --world W] [--batches K | --epochs E] [--state-in F\n"
        "                 [--ignore-fingerprint] [--resume-batch B2]] [--state-out F]\n"
        "                 [--out-tokens F] [--out-jsonl F] [--doc-lens]\n"
        "       olmo data eval    FILES... --seq-len T --out-tokens F [--out-targets F]\n"
        "       olmo data mix     NAME --root DIR [--tokenizer T] [--census] | --list\n");
    return sub.empty() && !a.has("--help") ? 1 : 0;
  }
  try {
    if (sub == "global-indices") return global_indices(a);
    if (sub == "info") return info(a);
    if (sub == "batches") return batches(a);
    if (sub == "eval") return eval(a);
    if (sub == "mix") return mix(a);
  } catch (const std::logic_error& e) {  // std::stoll / stoull on a bad number
    throw Error(cat("bad numeric flag value (", e.what(), ")"));
  }
  throw Error(cat("unknown subcommand 'data ", sub, "' (see olmo data --help)"));
}

}  // namespace

OLMO_COMMAND("data", "data order and loader: global-indices, info, batches, eval, mix", run);
