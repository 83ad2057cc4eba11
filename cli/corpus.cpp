// `olmo corpus build DIR` (Debian packages -> Dolma-style JSONL corpus with held-out splits,
// canaries and a MANIFEST) and `olmo corpus verify DIR` (MANIFEST hashes vs files).
#include <cstdio>
#include <string>

#include "args.h"
#include "command.h"
#include "corpus/corpus.h"

namespace {

int corpus_main(int argc, char** argv) {
  olmo::cli::Args a(argc, argv, {"--keep-unpacked", "--no-dedup"});
  const auto& pos = a.positional();
  if (a.has("--help") || pos.empty()) {
    std::printf(
        "usage: olmo corpus build DIR [--go-cap-mb 20] [--ood-cap-mb 2] [--shards 4] [--seed N]\n"
        "                             [--work WORKDIR] [--keep-unpacked] [--tokenizer FILE]\n"
        "                             [--no-dedup] [--dedup-jaccard 0.8] [--dedup-bands 20]\n"
        "                             [--dedup-rows 5] [--dedup-containment 0.5]\n"
        "       olmo corpus verify DIR\n\n"
        "build: apt-get download linux-doc-6.1, python3.11-doc, libpython3.11-{stdlib,minimal},\n"
        "golang-1.19-src and dict-gcide into WORKDIR (default DIR/.work), unpack them and write\n"
        "DIR/train/part-*.jsonl.zst, val_id.jsonl (1%% by hash of id), val_ood_gcide.jsonl,\n"
        "canaries.json and MANIFEST.json. Training documents that duplicate a held-out one or an\n"
        "earlier training one (exact after normalisation, MinHash-LSH estimated Jaccard of token\n"
        "13-grams >= --dedup-jaccard, or holding held-out 13-grams the data audit would flag) are\n"
        "removed and listed in DIR/dedup_report.jsonl (counts in MANIFEST.json \"dedup\").\n"
        "verify: check every file against MANIFEST.json.\n");
    return pos.empty() && !a.has("--help") ? 1 : 0;
  }
  if (pos[0] == "verify") {
    a.finish({});
    OLMO_CHECK(pos.size() == 2, "corpus verify: expected one DIR");
    olmo::corpus::verify_corpus(pos[1]);
    std::printf("%s: MANIFEST.json matches every file\n", pos[1].c_str());
    return 0;
  }
  OLMO_CHECK(pos[0] == "build", "corpus: unknown action '", pos[0], "' (build or verify)");
  a.finish({"--go-cap-mb", "--ood-cap-mb", "--shards", "--seed", "--work", "--keep-unpacked",
            "--tokenizer", "--no-dedup", "--dedup-jaccard", "--dedup-bands", "--dedup-rows",
            "--dedup-containment"});
  OLMO_CHECK(pos.size() == 2, "corpus build: expected one DIR");
  olmo::corpus::CorpusOptions o;
  o.out_dir = pos[1];
  o.work_dir = a.get("--work");
  double go = a.get_double("--go-cap-mb", 20), ood = a.get_double("--ood-cap-mb", 2);
  OLMO_CHECK(go >= 0 && ood > 0, "corpus build: --go-cap-mb must be >= 0 and --ood-cap-mb > 0");
  o.go_cap_bytes = uint64_t(go * 1e6);
  o.ood_cap_bytes = uint64_t(ood * 1e6);
  o.shards = int(a.get_int("--shards", 4));
  OLMO_CHECK(o.shards >= 1 && o.shards <= 10000, "corpus build: --shards must be in [1, 10000]");
  o.seed = uint64_t(a.get_int("--seed", (long long)o.seed));
  o.keep_unpacked = a.has("--keep-unpacked");
  o.tokenizer_path = a.get("--tokenizer");
  o.dedup.enabled = !a.has("--no-dedup");
  o.dedup.jaccard = a.get_double("--dedup-jaccard", o.dedup.jaccard);
  o.dedup.bands = int(a.get_int("--dedup-bands", o.dedup.bands));
  o.dedup.rows = int(a.get_int("--dedup-rows", o.dedup.rows));
  o.dedup.containment = a.get_double("--dedup-containment", o.dedup.containment);
  olmo::corpus::build_corpus(o);
  return 0;
}

}  // namespace

OLMO_COMMAND("corpus", "build the demo corpus from Debian packages (corpus build DIR)", corpus_main);
