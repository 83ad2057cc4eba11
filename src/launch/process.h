// Child processes of the elastic launcher: start a command (mpirun, a host probe), poll it for
// its exit without blocking, stop it (SIGTERM, then SIGKILL after a grace period), and run a
// short command with a time limit, capturing what it printed.
// Contracts: argv[0] is looked up on PATH; extra_env entries are KEY=VALUE added to (or
// replacing in) this process's environment. Errors starting a command throw olmo::Error naming
// it. Cost: one fork/exec per start; polling is a waitpid(WNOHANG).
#pragma once
#include <sys/types.h>

#include <memory>
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

// argv run with a time limit in its own process group, its stdout and stderr captured (at most
// 64 KiB); poll() never blocks, so several run side by side (host probes). On timeout the
// whole group is killed.
class CapturedRun {
 public:
  CapturedRun(const std::vector<std::string>& argv, double timeout_s);
  ~CapturedRun();
  CapturedRun(const CapturedRun&) = delete;
  CapturedRun& operator=(const CapturedRun&) = delete;
  bool poll();  // true once it ended or timed out
  const ExitStatus& status() const { return status_; }
  bool timed_out() const { return timed_out_; }
  const std::string& output() const { return out_; }

 private:
  void drain();
  std::unique_ptr<Child> child_;
  int fd_ = -1;
  double t0_ = 0, timeout_s_ = 0;
  bool done_ = false, timed_out_ = false;
  ExitStatus status_;
  std::string out_;
};

// Whitespace-separated words of a command line ("ssh -o BatchMode=yes" -> 3 words); no quoting.
std::vector<std::string> split_words(const std::string& s);

}  // namespace olmo::launch
