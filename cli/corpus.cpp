// `olmo corpus build DIR` (Debian packages -> Dolma-style JSONL corpus with held-out splits,
// canaries and a MANIFEST) and `olmo corpus verify DIR` (MANIFEST hashes vs files).
#include <cstdio>
#include <string>

#include "cli_app.h"
#include "command.h"
#include "corpus/corpus.h"

namespace {

int corpus_main(int argc, char** argv) {
  auto app = olmo::cli::make_app(
      "corpus", "Builds the demo corpus from Debian packages, or checks one against its MANIFEST.");
  app->require_subcommand(1);
  olmo::corpus::CorpusOptions o;
  double go_mb = 20, ood_mb = 2;
  bool no_dedup = false;
  auto* build = app->add_subcommand(
      "build",
      "apt-get download linux-doc-6.1, python3.11-doc, libpython3.11-{stdlib,minimal}, "
      "golang-1.19-src and dict-gcide into WORKDIR, unpack them and write "
      "DIR/train/part-*.jsonl.zst, val_id.jsonl (1% by hash of id), val_ood_gcide.jsonl, "
      "canaries.json and MANIFEST.json. Training documents that duplicate a held-out one or an "
      "earlier training one (exact after normalisation, MinHash-LSH estimated Jaccard of token "
      "13-grams >= --dedup-jaccard, or holding held-out 13-grams the data audit would flag) are "
      "removed and listed in DIR/dedup_report.jsonl (counts in MANIFEST.json \"dedup\").");
  build->add_option("DIR", o.out_dir, "the corpus directory to write")->required();
  build->add_option("--go-cap-mb", go_mb, "MB of Go source")->check(olmo::cli::non_negative());
  build->add_option("--ood-cap-mb", ood_mb, "MB of the out-of-distribution set (GCIDE)")
      ->check(olmo::cli::positive());
  build->add_option("--shards", o.shards, "train shards")->check(CLI::Range(1, 10000));
  build->add_option("--seed", o.seed, "canary secrets and train order");
  build->add_option("--work", o.work_dir, "WORKDIR for the packages (default DIR/.work)");
  build->add_flag("--keep-unpacked", o.keep_unpacked, "keep WORKDIR/unpack/* after extraction");
  build->add_option("--tokenizer", o.tokenizer_path,
                    "the tokenizer whose 13-grams dedup compares (default the dolma2 one)");
  build->add_flag("--no-dedup", no_dedup, "keep duplicates");
  build->add_option("--dedup-jaccard", o.dedup.jaccard, "near-duplicate threshold");
  build->add_option("--dedup-bands", o.dedup.bands, "MinHash-LSH bands");
  build->add_option("--dedup-rows", o.dedup.rows, "MinHash-LSH rows per band");
  build->add_option("--dedup-containment", o.dedup.containment,
                    "held-out share threshold (audit.ngram_threshold)");
  std::string verify_dir;
  auto* verify = app->add_subcommand("verify", "check every file against DIR/MANIFEST.json");
  verify->add_option("DIR", verify_dir, "the corpus directory")->required();
  olmo::cli::parse(*app, argc, argv);
  if (verify->parsed()) {
    olmo::corpus::verify_corpus(verify_dir);
    std::printf("%s: MANIFEST.json matches every file\n", verify_dir.c_str());
    return 0;
  }
  o.go_cap_bytes = uint64_t(go_mb * 1e6);
  o.ood_cap_bytes = uint64_t(ood_mb * 1e6);
  o.dedup.enabled = !no_dedup;
  olmo::corpus::build_corpus(o);
  return 0;
}

}  // namespace

OLMO_COMMAND("corpus", "build the demo corpus from Debian packages (corpus build DIR)", corpus_main);
