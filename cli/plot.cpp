// `olmo plot RUN_DIR [--out PNG]`: draws the train and held-out loss curves of a run to a PNG by
// running scripts/plot_run.py (matplotlib) with the project venv python.
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "args.h"
#include "command.h"
#include "core/error.h"
#include "core/file_io.h"

namespace {

int run_plot(int argc, char** argv) {
  olmo::cli::Args a(argc, argv);
  if (a.has("--help") || a.positional().size() != 1) {
    std::printf("usage: olmo plot RUN_DIR [--out PNG]   (default PNG: RUN_DIR/loss.png)\n");
    return a.has("--help") ? 0 : 1;
  }
  a.finish({"--out"});
  std::string py = std::string(OLMO_SOURCE_DIR) + "/.venv/bin/python";
  if (!olmo::file_exists(py)) py = "python3";
  std::string script = std::string(OLMO_SOURCE_DIR) + "/scripts/plot_run.py";
  OLMO_CHECK(olmo::file_exists(script), "missing ", script);
  std::vector<std::string> args = {py, script, a.positional()[0]};
  if (a.has("--out")) {
    args.push_back("--out");
    args.push_back(a.get("--out"));
  }
  std::vector<char*> cargs;
  for (auto& s : args) cargs.push_back(s.data());
  cargs.push_back(nullptr);
  std::fflush(stdout);
  execvp(cargs[0], cargs.data());
  throw olmo::Error(olmo::cat("cannot run ", py, " ", script));
}

OLMO_COMMAND("plot", "draw a run's train / held-out loss curves to PNG (matplotlib)", run_plot);

}  // namespace
