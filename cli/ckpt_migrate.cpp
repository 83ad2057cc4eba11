// The migration subcommands of `olmo ckpt` (see ckpt_migrate.h): declares their arguments and
// prints the outcome; the work is interop/olmo_core_migrate.h (OLMo-core's side through
// scripts/olmo_core_ckpt.py, olmo.cpp's side through the trainer's own state objects and
// ckpt/state_io.h).
#include "ckpt_migrate.h"

#include <cstdio>

std::vector<std::unique_ptr<CkptMigration>> add_ckpt_migrations(CLI::App& ckpt) {
  struct Decl {
    const char *name, *src, *dst, *what;
    decltype(CkptMigration::run) run;
  };
  const Decl decls[] = {
      {"import-olmo-core", "SRC", "DST",
       "OLMo-core checkpoint SRC (stepN or its run dir) -> olmo.cpp checkpoint DST/stepN "
       "(config default: SRC's run dir config.yaml)",
       olmo::train::import_olmo_core},
      {"export-olmo-core", "SRC", "DST",
       "olmo.cpp checkpoint SRC (stepN or its run dir) -> OLMo-core checkpoint DST/stepN saved "
       "by OLMo-core's Trainer (config default: the one stored in SRC)",
       olmo::train::export_olmo_core},
      {"hf-to-olmo-core", "HF_DIR", "DST_RUN",
       "Hugging Face model dir -> OLMo-core run DST_RUN (config.yaml + step0: the HF weights, a "
       "fresh optimizer); scripts/olmo_core_run.py trains on from it (--config required)",
       olmo::train::hf_to_olmo_core},
      {"olmo-core-to-hf", "SRC", "DST_HF",
       "OLMo-core checkpoint SRC (stepN or its run dir) -> Hugging Face model dir DST_HF "
       "(config default: SRC's run dir config.yaml)",
       olmo::train::olmo_core_to_hf},
  };
  std::vector<std::unique_ptr<CkptMigration>> out;
  for (const Decl& d : decls) {
    auto m = std::make_unique<CkptMigration>();
    m->run = d.run;
    m->sub = ckpt.add_subcommand(d.name, d.what);
    m->sub->add_option(d.src, m->src, "the source")->required();
    m->sub->add_option(d.dst, m->dst, "the destination")->required();
    m->sub->add_option("OVERRIDES", m->opt.overrides, "key=value config overrides");
    m->sub->add_option("--config", m->opt.config, "the olmo.cpp config YAML of the run");
    out.push_back(std::move(m));
  }
  return out;
}

int run_parsed_migration(const std::vector<std::unique_ptr<CkptMigration>>& ms) {
  for (const auto& m : ms) {
    if (!m->sub->parsed()) continue;
    const olmo::train::MigrateResult r = m->run(m->src, m->dst, m->opt);
    std::printf("%s: %s -> %s (step %lld, %zu parameters%s%s)\n", m->sub->get_name().c_str(),
                m->src.c_str(), r.out.c_str(), (long long)r.step, r.params,
                r.detail.empty() ? "" : ", ", r.detail.c_str());
    return 0;
  }
  return -1;
}
