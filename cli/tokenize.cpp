// `olmo tokenize [--tokenizer FILE] [--decode] [--jsonl] FILE`: encode each line of FILE to
// dolma2 ids (space separated, one output line per input line; the newline is not part of the
// text), or with --decode turn id lines back into text lines. --jsonl: input lines are JSON
// objects whose "text" is encoded (blank lines skipped); with --decode, each output line is
// {"text": ...}. FILE "-" reads stdin. --bench times encode for bench/tokenizer_bench.py.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>

#include "cli_app.h"
#include "command.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/timer.h"
#include "tokenizer/tokenizer.h"

namespace {

int bench(const olmo::tokenizer::Tokenizer& tok, const std::string& data, int repeat) {
  double best = 1e30;
  size_t n_tokens = 0;
  std::vector<uint32_t> ids;
  for (int r = 0; r < std::max(1, repeat); ++r) {
    ids.clear();
    double t0 = olmo::now_seconds();
    tok.encode_append(data, ids);
    best = std::min(best, olmo::now_seconds() - t0);
    n_tokens = ids.size();
  }
  std::printf("bytes %zu tokens %zu seconds %.4f MB/s %.2f\n", data.size(), n_tokens, best,
              data.size() / best / 1e6);
  return 0;
}

// "12 7 100257" -> ids; errors name in:line.
void parse_ids(std::string_view l, const olmo::tokenizer::Tokenizer& tok, const std::string& in,
               size_t line, std::vector<uint32_t>& ids) {
  size_t i = 0;
  auto sep = [&](size_t k) { return l[k] == ' ' || l[k] == '\t' || l[k] == '\r'; };
  while (i < l.size()) {
    while (i < l.size() && sep(i)) ++i;
    if (i == l.size()) break;
    size_t j = i;
    uint64_t v = 0;
    while (j < l.size() && l[j] >= '0' && l[j] <= '9' && j - i < 11) v = v * 10 + (l[j++] - '0');
    if (j == i || (j < l.size() && !sep(j))) {
      size_t e = i;
      while (e < l.size() && !sep(e)) ++e;
      throw olmo::Error(olmo::cat(in, ":", line, ": '", l.substr(i, e - i), "' is not a token id"));
    }
    OLMO_CHECK(v < tok.vocab_size(), in, ":", line, ": token id ", v, " >= vocab size ",
               tok.vocab_size());
    ids.push_back(uint32_t(v));
    i = j;
  }
}

int run_tokenize(int argc, char** argv) {
  auto app = olmo::cli::make_app(
      "tokenize",
      "Encodes each line of FILE to token ids (space separated, one output line per input "
      "line), or with --decode turns lines of ids back into text.");
  std::string in, tok_path = olmo::tokenizer::Tokenizer::default_path();
  bool decode = false, jsonl = false, bench_mode = false;
  int repeat = 3;
  app->add_option("FILE", in, "the input (\"-\": stdin)")->required();
  app->add_option("--tokenizer", tok_path,
                  ".tiktoken rank file or HF tokenizer.json (default $OLMO_TOKENIZER or "
                  "data/tokenizer/cl100k_base.tiktoken)");
  app->add_flag("--decode", decode, "read lines of space-separated ids, print the decoded text");
  app->add_flag("--jsonl", jsonl,
                "input lines are JSON objects, their \"text\" is encoded (blank lines skipped); "
                "with --decode, output lines are {\"text\": ...}");
  app->add_flag("--bench", bench_mode,
                "encode the whole FILE as one text on one thread, best of --repeat, and print "
                "bytes, tokens, seconds, MB/s (bench/tokenizer_bench.py)");
  app->add_option("--repeat", repeat, "--bench repetitions")->check(olmo::cli::positive());
  olmo::cli::parse(*app, argc, argv);
  auto tok = olmo::tokenizer::Tokenizer::load(tok_path);
  std::string data;
  if (in == "-") {
    data.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  } else {
    data = olmo::read_file(in);
  }
  if (bench_mode) return bench(tok, data, repeat);
  std::string out;
  std::vector<uint32_t> ids;
  size_t pos = 0, line = 0;
  while (pos < data.size()) {
    size_t nl = data.find('\n', pos);
    if (nl == std::string::npos) nl = data.size();
    std::string_view l(data.data() + pos, nl - pos);
    pos = nl + 1;
    ++line;
    ids.clear();
    if (decode) {
      parse_ids(l, tok, in, line, ids);
      std::string text;
      try {
        text = tok.decode(ids.data(), ids.size());
      } catch (const olmo::Error& e) {
        throw olmo::Error(olmo::cat(in, ":", line, ": ", e.what()));
      }
      if (jsonl)
        out += nlohmann::json{{"text", text}}.dump(-1, ' ', false,
                                                  nlohmann::json::error_handler_t::replace);
      else
        out += text;
    } else if (jsonl) {
      if (l.find_first_not_of(" \t\r") == std::string_view::npos) continue;
      nlohmann::json j;
      try {
        j = nlohmann::json::parse(l);
      } catch (const nlohmann::json::exception& e) {
        throw olmo::Error(olmo::cat(in, ":", line, ": not valid JSON: ", e.what()));
      }
      OLMO_CHECK(j.is_object() && j.contains("text") && j["text"].is_string(), in, ":", line,
                 ": JSON object has no string \"text\"");
      tok.encode_append(j["text"].get_ref<const std::string&>(), ids);
    } else {
      tok.encode_append(l, ids);
    }
    if (!decode) {
      for (size_t k = 0; k < ids.size(); ++k) {
        if (k) out += ' ';
        out += std::to_string(ids[k]);
      }
    }
    out += '\n';
    if (out.size() > (1 << 20)) {
      std::fwrite(out.data(), 1, out.size(), stdout);
      out.clear();
    }
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
  return 0;
}

}  // namespace

OLMO_COMMAND("tokenize", "encode text lines to dolma2 token ids (or --decode ids to text)",
             run_tokenize);
