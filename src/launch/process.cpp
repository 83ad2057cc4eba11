// Child processes of the launcher (see process.h): posix_spawnp with an optional new process
// group and redirected output, waitpid(WNOHANG) polling, SIGTERM/SIGKILL stop.
#include "launch/process.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <map>
#include <sstream>
#include <thread>

#include "core/error.h"
#include "core/runtime.h"

namespace olmo::launch {

namespace {

double now_s() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

ExitStatus decode(int st) {
  ExitStatus s;
  if (WIFEXITED(st)) s.code = WEXITSTATUS(st);
  if (WIFSIGNALED(st)) s.signal = WTERMSIG(st);
  return s;
}

}  // namespace

std::string ExitStatus::describe() const {
  if (signal) return cat("killed by signal ", signal, " (", strsignal(signal), ")");
  return cat("exit code ", code);
}

std::vector<std::string> split_words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

Child::Child(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env,
             bool own_group, int output)
    : group_(own_group) {
  OLMO_CHECK(!argv.empty(), "launch: empty command");
  // Environment: ours with extra_env added or replaced.
  std::map<std::string, std::string> env;
  for (const std::string& kv : runtime().environment()) env[kv.substr(0, kv.find('='))] = kv;
  for (const std::string& kv : extra_env) env[kv.substr(0, kv.find('='))] = kv;
  std::vector<std::string> envs;
  for (auto& [k, kv] : env) envs.push_back(kv);
  std::vector<char*> envp, args;
  for (auto& s : envs) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (auto& s : argv_copy) args.push_back(s.data());
  args.push_back(nullptr);

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  if (own_group) {
    flags |= POSIX_SPAWN_SETPGROUP;
    posix_spawnattr_setpgroup(&attr, 0);
  }
  posix_spawnattr_setflags(&attr, flags);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (output >= 0) {
    posix_spawn_file_actions_adddup2(&fa, output, 1);
    posix_spawn_file_actions_adddup2(&fa, output, 2);
  }
  const int rc = posix_spawnp(&pid_, args[0], &fa, &attr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  OLMO_CHECK(rc == 0, "cannot start '", argv[0], "': ", std::strerror(rc));
}

Child::~Child() {
  if (pid_ > 0 && !done_) stop(2.0);
}

bool Child::poll(ExitStatus* status) {
  if (!done_) {
    int st = 0;
    const pid_t r = ::waitpid(pid_, &st, WNOHANG);
    if (r == pid_) {
      done_ = true;
      status_ = decode(st);
    } else if (r < 0 && errno != EINTR) {
      done_ = true;  // not our child any more (cannot happen unless reaped elsewhere)
      status_ = ExitStatus{};
    }
  }
  if (done_ && status) *status = status_;
  return done_;
}

ExitStatus Child::stop(double grace_s) {
  if (poll(nullptr)) return status_;
  const pid_t target = group_ ? -pid_ : pid_;
  ::kill(target, SIGTERM);
  const double t0 = now_s();
  while (!poll(nullptr)) {
    if (now_s() - t0 > grace_s) {
      ::kill(target, SIGKILL);
      int st = 0;
      while (::waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
      }
      done_ = true;
      status_ = decode(st);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return status_;
}

CapturedRun::CapturedRun(const std::vector<std::string>& argv, double timeout_s)
    : timeout_s_(timeout_s) {
  int fds[2];
  OLMO_CHECK(::pipe2(fds, O_CLOEXEC) == 0, "launch: pipe: ", std::strerror(errno));
  try {
    child_ = std::make_unique<Child>(argv, std::vector<std::string>{}, /*own_group=*/true, fds[1]);
  } catch (...) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw;
  }
  ::close(fds[1]);
  fd_ = fds[0];
  ::fcntl(fd_, F_SETFL, O_NONBLOCK);
  t0_ = now_s();
}

CapturedRun::~CapturedRun() {
  if (child_ && !done_) {
    ::kill(-child_->pid(), SIGKILL);
    child_->stop(1.0);
  }
  if (fd_ >= 0) ::close(fd_);
}

void CapturedRun::drain() {
  char buf[4096];
  for (ssize_t n; (n = ::read(fd_, buf, sizeof buf)) > 0;)
    if (out_.size() < 65536) out_.append(buf, size_t(n));
}

bool CapturedRun::poll() {
  if (done_) return true;
  drain();
  if (child_->poll(&status_)) {
    drain();
    done_ = true;
  } else if (now_s() - t0_ > timeout_s_) {
    timed_out_ = true;
    ::kill(-child_->pid(), SIGKILL);  // the agent and whatever it started
    status_ = child_->stop(1.0);
    done_ = true;
  }
  return done_;
}

}  // namespace olmo::launch
