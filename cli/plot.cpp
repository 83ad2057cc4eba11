// `olmo plot RUN_DIR [--out PNG]`: draws the train and held-out loss curves of a run to a PNG by
// running scripts/plot_run.py (matplotlib) with the project venv python. The script draws into
// the temporary of a core AtomicFile (--write-to), published under the final name once it exits 0.
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cli_app.h"
#include "command.h"
#include "core/error.h"
#include "core/file_io.h"

namespace {

int run_plot(int argc, char** argv) {
  auto app = olmo::cli::make_app("plot", "Draws a run's train and held-out loss curves to a PNG "
                                         "(scripts/plot_run.py, matplotlib).");
  std::string run, out;
  app->add_option("RUN_DIR", run, "the run directory")->required();
  app->add_option("--out", out, "the PNG to write (default RUN_DIR/loss.png)");
  olmo::cli::parse(*app, argc, argv);
  std::string py = std::string(OLMO_SOURCE_DIR) + "/.venv/bin/python";
  if (!olmo::file_exists(py)) py = "python3";
  std::string script = std::string(OLMO_SOURCE_DIR) + "/scripts/plot_run.py";
  OLMO_CHECK(olmo::file_exists(script), "missing ", script);
  OLMO_CHECK(olmo::file_exists(run), run, ": run directory not found");
  if (out.empty()) out = run + "/loss.png";
  olmo::AtomicFile png(out);  // the child fills png.temp_path(); commit fsyncs and renames it
  std::vector<std::string> args = {py, script, run, "--out", out,
                                   "--write-to", png.temp_path()};
  std::vector<char*> cargs;
  for (auto& s : args) cargs.push_back(s.data());
  cargs.push_back(nullptr);
  std::fflush(stdout);
  const pid_t pid = fork();
  OLMO_CHECK(pid >= 0, "plot: cannot fork: ", std::strerror(errno));
  if (pid == 0) {
    execvp(cargs[0], cargs.data());
    std::fprintf(stderr, "olmo plot: cannot run %s %s: %s\n", py.c_str(), script.c_str(),
                 std::strerror(errno));
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  // On failure (the script said why on stderr) png's destructor removes the temporary.
  OLMO_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "plot: ", script, " failed (",
             WIFEXITED(status) ? olmo::cat("exit ", WEXITSTATUS(status)) : "killed", ")");
  png.commit();
  return 0;
}

OLMO_COMMAND("plot", "draw a run's train / held-out loss curves to PNG (matplotlib)", run_plot);

}  // namespace
