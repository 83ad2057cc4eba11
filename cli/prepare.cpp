// `olmo prepare --out DIR INPUT...`: JSONL (.jsonl/.gz/.zst) or plain text -> OLMo token files
// (part-NNNNN.npy headerless uint32 + part-NNNNN.csv.gz document index), deterministic for any
// --threads.
#include <cstdio>
#include <string>
#include <thread>

#include "args.h"
#include "command.h"
#include "corpus/prepare.h"
#include "tokenizer/tokenizer.h"

namespace {

int prepare_main(int argc, char** argv) {
  olmo::cli::Args a(argc, argv, {"--skip-bad-lines", "--no-progress", "--part-per-input", "--dedup"});
  if (a.has("--help") || a.positional().empty()) {
    std::printf(
        "usage: olmo prepare --out OUTDIR [--tokenizer FILE] [--threads N] [--skip-bad-lines]\n"
        "                    [--max-tokens-per-file N] [--part-per-input] [--no-progress]\n"
        "                    [--dedup] [--dedup-heldout PATH[,PATH...]] INPUT...\n\n"
        "INPUT: .jsonl, .jsonl.gz, .jsonl.zst (Dolma: one {\"id\",\"text\",...} per line), any\n"
        "other file = one plain-text document, a directory = its files in sorted order.\n"
        "Writes OUTDIR/part-NNNNN.npy (little-endian uint32 ids, EOS %u after each document),\n"
        "OUTDIR/part-NNNNN.csv.gz (start,end,id per document) and OUTDIR/prepare.json.\n"
        "--part-per-input: each input file starts a new part file (as well as the token cap).\n"
        "--dedup: drop exact / near-duplicate documents (MinHash over token 13-grams, Jaccard >=\n"
        "0.8) and documents overlapping --dedup-heldout text; listed in OUTDIR/dedup_report.jsonl.\n",
        olmo::kDolma2FirstSpecial + 1);
    return a.has("--help") ? 0 : 1;
  }
  a.finish({"--out", "--tokenizer", "--threads", "--skip-bad-lines", "--max-tokens-per-file",
            "--no-progress", "--part-per-input", "--dedup", "--dedup-heldout"});
  olmo::corpus::PrepareOptions o;
  o.out_dir = a.require("--out");
  long long th = a.get_int("--threads", 0);
  OLMO_CHECK(th >= 0 && th <= 1024, "prepare: --threads must be in [0, 1024], got ", th);
  o.threads = int(th);
  o.skip_bad_lines = a.has("--skip-bad-lines");
  long long mt = a.get_int("--max-tokens-per-file", (long long)o.max_tokens_per_file);
  OLMO_CHECK(mt > 0, "prepare: --max-tokens-per-file must be > 0, got ", mt);
  o.max_tokens_per_file = uint64_t(mt);
  o.progress = !a.has("--no-progress");
  o.part_per_input = a.has("--part-per-input");
  o.dedup = a.has("--dedup") || a.has("--dedup-heldout");
  for (std::string rest = a.get("--dedup-heldout"); !rest.empty();) {
    size_t c = rest.find(',');
    o.dedup_heldout.push_back(rest.substr(0, c));
    rest = c == std::string::npos ? "" : rest.substr(c + 1);
  }
  std::string tok_path = a.get("--tokenizer", olmo::tokenizer::Tokenizer::default_path());
  auto tok = olmo::tokenizer::Tokenizer::load(tok_path);
  auto st = olmo::corpus::prepare(a.positional(), olmo::corpus::encoder_of(tok), o);
  std::printf("prepared %llu docs, %llu tokens (EOS included) into %zu file(s) in %s (%.1f s)\n",
              (unsigned long long)st.docs, (unsigned long long)st.tokens, st.files.size(),
              o.out_dir.c_str(), st.seconds);
  if (o.dedup)
    std::printf("dedup: removed %llu duplicate document(s) (OUTDIR/dedup_report.jsonl)\n",
                (unsigned long long)st.dedup_removed);
  if (st.bad_lines || st.empty_docs || st.utf8_fixes)
    std::printf("skipped %llu malformed line(s), %llu empty document(s); %llu invalid UTF-8 "
                "byte(s) replaced\n",
                (unsigned long long)st.bad_lines, (unsigned long long)st.empty_docs,
                (unsigned long long)st.utf8_fixes);
  return 0;
}

}  // namespace

OLMO_COMMAND("prepare", "tokenize documents into OLMo token files (.npy + .csv.gz index)",
             prepare_main);
