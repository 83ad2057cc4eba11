// The runtime context (see runtime.h): the declared environment variables, the one getenv /
// environ reader of the program, the recorded settings and their report.
#include "core/runtime.h"

#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "core/cpu.h"
#include "core/error.h"

extern char** environ;

namespace olmo {

namespace {

// Every environment variable olmo reads (src/ and cli/), with what it changes. Alphabetical
// within groups; a read of a name not listed here throws std::logic_error.
const std::vector<EnvVar> kDeclared = {
    // Kernels and precision.
    {"OLMO_ISA", "kernel ISA: scalar|avx2|avx512, capped at the detected level (default: the "
                 "detected level); read once per process"},
    {"OLMO_BF16", "0: no native bf16 kernels even where the CPU has AVX512_BF16; emulate: allow "
                  "bf16_mixed on a CPU without it (the exact emulation: the same bits, slower) "
                  "(default: native where present)"},
    {"OLMO_ATTN_BF16", "bf16_mixed's attention kernels: 1 bf16 (native or exactly emulated) | 0 "
                       "fp32 (default: 1)"},
    // Threads and launch detection.
    {"OMP_NUM_THREADS", "OpenMP threads per process; when set, trainer.threads=0 keeps it "
                        "(default: cores / ranks on the node)"},
    {"OMPI_COMM_WORLD_LOCAL_SIZE", "Open MPI: ranks on this node (threads and the memory check "
                                   "share the node among them; default: the world size / 1)"},
    {"OMPI_COMM_WORLD_SIZE", "Open MPI: set under mpirun (launch detection)"},
    {"PMIX_RANK", "PMIx: set under an MPI launcher (launch detection)"},
    {"PMI_RANK", "PMI: set under an MPI launcher (launch detection)"},
    // Data and tool locations.
    {"OLMO_MIXES_DIR", "directory of the named data mixes (default: "
                       "<source>/configs/mixes/olmo-core-3.0.0)"},
    {"OLMO_TOKENIZER", "tokenizer file (default: <source>/data/tokenizer/cl100k_base.tiktoken)"},
    {"OLMO_EVAL_DATA", "in-loop evaluation data directory (default: <source>/data/olmo_eval)"},
    {"OLMO_PYTHON", "Python for `olmo ckpt` import/export (default: <source>/.venv/bin/python, "
                    "else python3)"},
    // The elastic launcher.
    {"OLMO_RESIZE_REQUEST", "set by `olmo launch`: the file whose presence stops the run at its "
                            "next checkpoint for a resize (default: no resize stop)"},
    {"OLMO_LAUNCH_JOB", "set by `olmo launch`: the launcher's job number (default: -1)"},
    {"SLURM_JOB_ID", "Slurm: the allocation's job id (default: not inside Slurm)"},
    {"SLURM_JOB_NODELIST", "Slurm: the allocation's hosts"},
    {"SLURM_NODELIST", "Slurm: the allocation's hosts (older name)"},
    {"SLURM_TASKS_PER_NODE", "Slurm: tasks per node, e.g. 2(x3),1"},
    {"SLURM_NTASKS", "Slurm: tasks in the allocation"},
    {"SLURM_CPUS_PER_TASK", "Slurm: CPUs per task"},
    {"SLURM_JOB_CPUS_PER_NODE", "Slurm: CPUs per node, e.g. 16(x2)"},
    // Test hooks (fault injection and forced measurements; never set in production).
    {"OLMO_TEST_KILL", "test hook: kill a rank at a given point (train/test_faults.h)"},
    {"OLMO_TEST_HOLD", "test hook: hold a rank at start/step/ckpt until a file appears"},
    {"OLMO_TEST_NAN", "test hook: inject a NaN loss or gradient"},
    {"OLMO_TEST_PARAM_SCALE", "test hook: scale a parameter at a step"},
    {"OLMO_TEST_GRAD_SCALE", "test hook: scale one rank's micro-batch gradient at a step (an "
                             "overflow of the exact reduction on that rank alone)"},
    {"OLMO_TEST_FREE_BYTES", "test hook: the free disk space the checkpoint check sees"},
    {"OLMO_TEST_MEM_AVAILABLE", "test hook: the available memory the memory check sees"},
    {"OLMO_TEST_PEAK", "test hook: GFLOP/s the trainer's first peak probe reports (as a busy "
                       "machine would; train/trainer_throughput.cpp)"},
    {"OLMO_TEST_PRECISION_PROBE", "test hook: bf16|fp32 forces the precision probe's outcome; "
                                  "BF16/FP32 GFLOP/s replaces its measurement"},
};

const EnvVar& declared(const std::string& name) {
  for (const EnvVar& v : kDeclared)
    if (name == v.name) return v;
  throw std::logic_error(cat("environment variable ", name, " is not declared in "
                             "src/core/runtime.cpp (add it to kDeclared with its meaning)"));
}

// The one reader of the process environment.
std::optional<std::string> read_env(const char* name) {
  const char* v = std::getenv(name);
  if (!v) return std::nullopt;
  return std::string(v);
}

std::string fmt_figure(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", x);
  return buf;
}

std::string describe_source(const Setting& s) {
  std::string r = source_name(s.source);
  if (!s.origin.empty()) r += " " + s.origin;
  return r;
}

void render(std::string& out, const Setting& s) {
  out += cat("  ", s.name, " = ", s.value.empty() ? std::string("\"\"") : s.value, "  [",
             describe_source(s), "]\n");
  if (!s.note.empty()) out += cat("      ", s.note, "\n");
  if (!s.figures.empty()) {
    out += "      figures:";
    for (const auto& [k, v] : s.figures) out += cat(" ", k, "=", fmt_figure(v));
    out += "\n";
  }
}

}  // namespace

const char* source_name(Source s) {
  switch (s) {
    case Source::default_value: return "default";
    case Source::env: return "env";
    case Source::flag: return "flag";
    case Source::config: return "config";
    case Source::probe: return "probe";
    case Source::checkpoint: return "checkpoint";
    case Source::test_override: return "test override";
  }
  return "?";
}

const std::vector<EnvVar>& declared_env() { return kDeclared; }

const Runtime::Override* Runtime::find_override(const std::string& name) const {
  for (const Override& o : overrides_)
    if (o.name == name) return &o;
  return nullptr;
}

std::optional<std::string> Runtime::env(const std::string& name) const {
  declared(name);
  std::lock_guard<std::mutex> lock(mu_);
  if (const Override* o = find_override(name)) return o->value;
  return read_env(name.c_str());
}

std::string Runtime::env_or_default(const std::string& setting, const std::string& name,
                                    const std::string& def, const std::string& default_origin) {
  declared(name);
  std::lock_guard<std::mutex> lock(mu_);
  Setting s;
  s.name = setting;
  if (const Override* o = find_override(name); o && !o->value.empty()) {
    s.value = o->value, s.source = o->source, s.origin = o->origin;
  } else if (auto v = read_env(name.c_str()); !o && v && !v->empty()) {
    s.value = *v, s.source = Source::env, s.origin = name;
  } else {
    s.value = def, s.source = Source::default_value;
    s.origin = default_origin.empty() ? cat(name, " unset") : default_origin;
  }
  const std::string value = s.value;
  set_locked(std::move(s));
  return value;
}

void Runtime::override_env(const std::string& name, const std::string& value, Source source,
                           const std::string& origin) {
  declared(name);
  std::lock_guard<std::mutex> lock(mu_);
  for (Override& o : overrides_)
    if (o.name == name) {
      o = Override{name, value, source, origin};
      return;
    }
  overrides_.push_back(Override{name, value, source, origin});
}

void Runtime::clear_override(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  overrides_.erase(std::remove_if(overrides_.begin(), overrides_.end(),
                                  [&](const Override& o) { return o.name == name; }),
                   overrides_.end());
}

std::vector<std::string> Runtime::environment() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  for (char** e = environ; e && *e; ++e) out.emplace_back(*e);
  return out;
}

void Runtime::set_locked(Setting s) {
  for (Setting& old : settings_)
    if (old.name == s.name) {
      old = std::move(s);
      return;
    }
  settings_.push_back(std::move(s));
}

void Runtime::set(Setting s) {
  std::lock_guard<std::mutex> lock(mu_);
  set_locked(std::move(s));
}

std::optional<Setting> Runtime::find(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const Setting& s : settings_)
    if (s.name == name) return s;
  return std::nullopt;
}

std::vector<Setting> Runtime::settings() const {
  std::lock_guard<std::mutex> lock(mu_);
  return settings_;
}

std::string Runtime::report() const {
  std::string out = "runtime context (this process: what it decided, and from what)\n";
  // The machine and the kernel dispatch level.
  const Isa det = detected_isa(), act = active_isa();
  const std::optional<std::string> isa_env = env("OLMO_ISA");
  out += cat("cpu:\n  detected_isa = ", isa_name(det), "  [probe cpuid]\n  avx512_bf16 = ",
             cpu_has_avx512_bf16() ? "yes" : "no", "  [probe cpuid]\n  cores = ",
             omp_get_num_procs(), "  [probe omp_get_num_procs]\n");
  Setting isa{"isa", isa_name(act), Source::default_value, "the detected level", "", {}};
  if (isa_env && !isa_env->empty()) {
    isa.source = Source::env;
    isa.origin = "OLMO_ISA";
    if (act != det || *isa_env != isa_name(act))
      isa.note = cat("OLMO_ISA=", *isa_env, " capped at the detected ", isa_name(det));
  }
  render(out, isa);
  // Threads: the trainer's record, else what OpenMP was given.
  std::vector<Setting> recorded = settings();
  auto it = std::find_if(recorded.begin(), recorded.end(),
                         [](const Setting& s) { return s.name == "threads"; });
  if (it == recorded.end()) {
    const std::optional<std::string> omp = env("OMP_NUM_THREADS");
    Setting t{"threads", std::to_string(omp_get_max_threads()), Source::default_value,
              "OpenMP: one per core", "", {}};
    if (omp) t.source = Source::env, t.origin = "OMP_NUM_THREADS";
    render(out, t);
  }
  out += "settings (recorded by the code that decided them):\n";
  if (recorded.empty()) out += "  (none yet: precision and attention are decided at run start)\n";
  for (const Setting& s : recorded) render(out, s);
  out += "environment (every variable olmo reads; the unset test hooks are left out):\n";
  int hidden_hooks = 0;
  for (const EnvVar& v : kDeclared) {
    std::optional<std::string> val;
    std::string src = "env";
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (const Override* o = find_override(v.name)) {
        val = o->value;
        src = cat(source_name(o->source), " ", o->origin);
      } else {
        val = read_env(v.name);
      }
    }
    if (!val && std::string(v.name).rfind("OLMO_TEST_", 0) == 0) {
      ++hidden_hooks;  // fault injection for the tests: listed only when set
      continue;
    }
    out += cat("  ", v.name, val ? cat(" = ", *val, "  [", src, "]") : std::string(" unset"),
               "\n      ", v.meaning, "\n");
  }
  if (hidden_hooks > 0)
    out += cat("  (", hidden_hooks, " OLMO_TEST_* test hooks unset: src/core/runtime.cpp)\n");
  return out;
}

Runtime& runtime() {
  static Runtime r;
  return r;
}

std::string runtime_report() { return runtime().report(); }

}  // namespace olmo
