// The runtime context of this process (issue 36 item 2): what it decided and why, in one place.
//
// Every setting that does not come from the model/training config proper -- the environment
// variables olmo reads, the thread count, the kernel ISA, the precision picks and the start-up
// probes that chose them -- is a named entry of the one Runtime (runtime()), recorded with its
// value and its source: a default, an environment variable (env NAME), a command-line flag, a
// config key, or a probe (with its timings and the reason). runtime_report() renders it all
// (`olmo info --runtime`).
//
// This file's .cpp is the ONLY place in src/ and cli/ that reads the process environment
// (getenv, environ); ctest core_no_getenv (tests/core/runtime_rules.py) enforces it. Each
// variable is declared once in the table of runtime.cpp (name, meaning, default); reading an
// undeclared name is a programming error (std::logic_error), so a new variable cannot appear
// without a line in that table.
//
// Reads of the environment are live: env() returns what getenv returns at the call (a test's
// setenv takes effect as it did when the callers read getenv themselves); callers that want a
// value fixed for the process cache it as before (OLMO_ISA, OLMO_BF16's native switch, the
// attention and precision picks). A flag or config key overrides a variable with override_env():
// later env() reads return the override and the report names its source.
//
// Layer: core (no include above core). Kernels do not print; they return their picks and
// reasons, and the caller (src/train) records them here with set() and prints them.
// Thread safety: every member takes an internal mutex; settings are copied out.
#pragma once
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace olmo {

enum class Source { default_value, env, flag, config, checkpoint, probe, test_override };
// "default", "env", "flag", "config", "checkpoint" (what a resumed run trained with), "probe",
// "test override"
const char* source_name(Source);

// One resolved setting. origin names where the value came from: the variable (OLMO_ISA), the
// flag (--threads), the config key (trainer.threads), the probe ("GEMM probe 512x512x512") or,
// for a default, how the default was derived. note: the reason / the printed decision line.
// figures: a probe's measurements (name, value), e.g. {"bf16_gflops", 298}.
struct Setting {
  std::string name;
  std::string value;
  Source source = Source::default_value;
  std::string origin;
  std::string note;
  std::vector<std::pair<std::string, double>> figures;
};

// A declared environment variable (the table in runtime.cpp).
struct EnvVar {
  const char* name;
  const char* meaning;  // what it changes, and its default when unset
};
const std::vector<EnvVar>& declared_env();

class Runtime {
 public:
  Runtime() = default;
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // The value of the declared variable `name` (its override if one was set), nullopt when
  // unset. Set-but-empty is returned as "" (callers that treat "" as unset say so).
  std::optional<std::string> env(const std::string& name) const;
  // env(name) when set and non-empty, else def; records the result as setting `setting` with
  // its source (env NAME, an override's source, or default).
  std::string env_or_default(const std::string& setting, const std::string& name,
                             const std::string& def, const std::string& default_origin = "");
  // A flag or config key replaces the environment's value of `name` for later env() reads.
  void override_env(const std::string& name, const std::string& value, Source source,
                    const std::string& origin);
  void clear_override(const std::string& name);

  // The whole environment as "KEY=VALUE" entries (for spawning child processes).
  std::vector<std::string> environment() const;

  // Records (or replaces) a named setting.
  void set(Setting s);
  std::optional<Setting> find(const std::string& name) const;
  std::vector<Setting> settings() const;  // in the order first set

  // The resolved context as text: CPU and ISA, threads, every recorded setting with its source
  // (probes with their figures), and every declared variable with its value or "unset".
  std::string report() const;

 private:
  struct Override {
    std::string name, value;
    Source source;
    std::string origin;
  };
  const Override* find_override(const std::string& name) const;  // mu_ held
  void set_locked(Setting s);                                      // mu_ held

  mutable std::mutex mu_;
  std::vector<Override> overrides_;
  std::vector<Setting> settings_;
};

// The process's Runtime, built on first use.
Runtime& runtime();
// runtime().report().
std::string runtime_report();

}  // namespace olmo
