// Child processes of the elastic launcher: start a command (mpirun, a host probe), poll it for
// its exit without blocking, stop it (SIGTERM, then SIGKILL after a grace period), and run a
// short command with a time limit, capturing what it printed.
// Contracts: argv[0] is looked up on PATH; extra_env entries are KEY=VALUE added to (or
// replacing in) this process's environment. Errors starting a command throw olmo::Error naming
// it. Cost: one fork/exec per start; polling is a waitpid(WNOHANG).
#pragma once
#include <sys/types.h>

#include <string>
#include <vector>

namespace olmo::launch {

struct ExitStatus {
  int code = -1;    // exit code, or -1 when killed by a signal
  int signal = 0;   // the signal that ended it, 0 when it exited
  bool ok() const { return code == 0; }
  std::string describe() const;  // "exit code 1" | "killed by signal 9 (Killed)"
};

class Child {
 public:
  // Starts argv. own_group: the child leads a new process group (stop() then signals the
  // whole group: a probe's helpers die with it). output: a file descriptor for the child's
  // stdout and stderr (-1: inherit ours).
  Child(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env = {},
        bool own_group = false, int output = -1);
  ~Child();  // stops a child that still runs
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }
  // True once the child ended (status filled in); never blocks.
  bool poll(ExitStatus* status);
  // SIGTERM (to the group when own_group), SIGKILL after grace_s; waits for the exit.
  ExitStatus stop(double grace_s);

 private:
  pid_t pid_ = -1;
  bool group_ = false;
  bool done_ = false;
  ExitStatus status_;
};

// Runs argv with a time limit; `out` gets its stdout and stderr (at most 64 KiB). Returns the
// status; on timeout the process group is killed and timed_out is set.
ExitStatus run_captured(const std::vector<std::string>& argv, double timeout_s, std::string* out,
                        bool* timed_out);

// Whitespace-separated words of a command line ("ssh -o BatchMode=yes" -> 3 words); no quoting.
std::vector<std::string> split_words(const std::string& s);

}  // namespace olmo::launch
