// `olmo prepare --out DIR INPUT...`: JSONL (.jsonl/.gz/.zst) or plain text -> OLMo token files
// (part-NNNNN.npy headerless uint32 + part-NNNNN.csv.gz document index), deterministic for any
// --threads.
#include <cstdio>
#include <string>
#include <thread>

#include "cli_app.h"
#include "command.h"
#include "core/error.h"
#include "corpus/prepare.h"
#include "tokenizer/tokenizer.h"

namespace {

int prepare_main(int argc, char** argv) {
  olmo::corpus::PrepareOptions o;
  auto app = olmo::cli::make_app(
      "prepare",
      olmo::cat("Tokenizes documents into OLMo token files: OUTDIR/part-NNNNN.npy (little-endian "
                "uint32 ids, EOS ", olmo::kDolma2FirstSpecial + 1, " after each document), "
                "OUTDIR/part-NNNNN.csv.gz (start,end,id per document) and OUTDIR/prepare.json; "
                "the same bytes for any --threads."));
  std::vector<std::string> inputs;
  std::string tok_path = olmo::tokenizer::Tokenizer::default_path(), heldout;
  bool no_progress = false;
  app->add_option("INPUT", inputs,
                  ".jsonl, .jsonl.gz, .jsonl.zst (Dolma: one {\"id\",\"text\",...} per line), "
                  "any other file = one plain-text document, a directory = its files in sorted "
                  "order")
      ->required();
  app->add_option("--out", o.out_dir, "OUTDIR")->required();
  app->add_option("--tokenizer", tok_path, "rank file or tokenizer.json");
  app->add_option("--threads", o.threads, "0: all cores")->check(CLI::Range(0, 1024));
  app->add_flag("--skip-bad-lines", o.skip_bad_lines, "skip malformed JSONL lines (counted)");
  app->add_option("--max-tokens-per-file", o.max_tokens_per_file, "token cap of a part file")
      ->check(olmo::cli::positive());
  app->add_flag("--part-per-input", o.part_per_input,
                "each input file starts a new part file (as well as the token cap)");
  app->add_flag("--no-progress", no_progress, "no progress line on stderr");
  app->add_flag("--dedup", o.dedup,
                "drop exact / near-duplicate documents (MinHash over token 13-grams, Jaccard >= "
                "0.8) and documents overlapping --dedup-heldout text; listed in "
                "OUTDIR/dedup_report.jsonl");
  auto* heldout_opt = app->add_option("--dedup-heldout", heldout,
                                      "PATH[,PATH...]: held-out text (implies --dedup)");
  olmo::cli::parse(*app, argc, argv);
  o.progress = !no_progress;
  o.dedup = o.dedup || heldout_opt->count() > 0;
  for (std::string rest = heldout; !rest.empty();) {
    size_t c = rest.find(',');
    o.dedup_heldout.push_back(rest.substr(0, c));
    rest = c == std::string::npos ? "" : rest.substr(c + 1);
  }
  auto tok = olmo::tokenizer::Tokenizer::load(tok_path);
  auto st = olmo::corpus::prepare(inputs, olmo::corpus::encoder_of(tok), o);
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
