// The elastic launcher's loop (see launcher.h): choose slots, run mpirun, watch the job and the
// slots, relaunch after a failure or at a checkpoint boundary after the slots changed.
#include "launch/launcher.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <thread>

#include <nlohmann/json.hpp>

#include "ckpt/run_lock.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/runtime.h"
#include "launch/hosts.h"
#include "launch/process.h"
#include "launch/run_watch.h"
#include "launch/slurm.h"
#include "train/config.h"
#include "train/preempt_stop.h"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace olmo::launch {

namespace {

volatile std::sig_atomic_t g_signal = 0, g_signals = 0;  // the last signal, how many
extern "C" void on_signal(int s) {
  g_signal = s;
  g_signals = g_signals + 1;
}

double wall_s() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

void sleep_s(double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); }

class Launcher {
 public:
  explicit Launcher(const LaunchOptions& o);
  int run();
  int dry_run();

 private:
  void event(const std::string& name, json j);
  void note(const std::string& msg) { std::fprintf(stderr, "olmo launch: %s\n", msg.c_str()); }
  std::vector<Host> configured();
  // Hosts that answer (those named in `trusted` are not probed: they run the job now).
  std::vector<Host> available(const std::vector<std::string>& trusted, bool log);
  std::vector<Host> sort_answers(const std::vector<Host>& all, const std::vector<Host>& probed,
                                 const std::vector<std::string>& whys, bool log);
  int world_for(const std::vector<Host>& avail, bool log, const std::string& when);
  // How the world size is chosen ("the largest count that divides the 8 micro-batches...").
  std::string world_rule() const;
  void wait_lock(double wait_s);
  std::vector<std::string> job_argv(const std::vector<Host>& hosts, int world) const;
  std::string lost_summary() const;
  // A job ended with train::kExitPreempted (or a signal came between jobs): requeue the Slurm
  // job, log, return kExitPreempted; nothing is restarted.
  int preempted(int attempt, int world, int64_t last_step);

  LaunchOptions o_;
  std::string run_dir_, request_, agent_;
  int64_t micro_batches_ = 0, instances_ = 0, save_interval_ = 0;
  std::vector<Host> last_config_;
  std::vector<std::pair<std::string, std::string>> lost_;  // host, why (last probe)
  std::optional<ckpt::RunDirLock> launch_lock_;
  std::optional<SlurmAllocation> slurm_;
  std::optional<StallTimeout> stall_;
  double longest_start_ = 0;  // the longest launch -> first new step of this launcher's jobs
};

Launcher::Launcher(const LaunchOptions& o) : o_(o) {
  const int sources = (o_.np > 0) + !o_.hosts.empty() + !o_.hostfile.empty();
  if (o_.slurm) {
    OLMO_CHECK(sources == 0, "--slurm takes the slots from the allocation: give no --np, --hosts "
               "or --hostfile with it");
    slurm_ = read_allocation(o_.scontrol);
    // Threads per rank: the allocation's CPUs per task, never more (no oversubscription).
    const int c = slurm_->cpus_per_task;
    bool given = false;
    for (const std::string& kv : o_.overrides)
      if (kv.rfind("trainer.threads=", 0) == 0) {
        given = true;
        const std::string v = kv.substr(16);
        OLMO_CHECK(v == "0" || (std::atoi(v.c_str()) >= 1 && std::atoi(v.c_str()) <= c), "'", kv,
                   "' asks for more threads per rank than the allocation's ", c,
                   " CPU(s) per task (SLURM_CPUS_PER_TASK): use at most ", c,
                   " or leave it out (olmo launch then sets trainer.threads=", c, ")");
      }
    if (!given) o_.overrides.push_back(cat("trainer.threads=", c));
    if (!slurm_->capped.empty())
      note(cat("warning: Slurm job ", slurm_->job_id, " has fewer CPUs than its tasks need: ", slurm_->capped));
  } else {
    OLMO_CHECK(sources == 1, "give exactly one of --np N, --hosts H:S,... or --hostfile FILE "
               "(or run inside a Slurm allocation: --slurm)");
  }
  OLMO_CHECK(o_.min_np >= 1, "--min-np must be >= 1, got ", o_.min_np);
  OLMO_CHECK(o_.max_failures >= 1, "--max-failures must be >= 1, got ", o_.max_failures);
  OLMO_CHECK(o_.poll_s > 0 && o_.probe_interval_s > 0 && o_.probe_timeout_s > 0,
             "--poll, --probe-interval and --probe-timeout must be > 0");
  agent_ = slurm_ ? srun_probe_agent(o_.srun)
         : o_.rsh_agent.empty() ? "ssh -o BatchMode=yes -o ConnectTimeout=5" : o_.rsh_agent;
  // The run as every job will see it: validated here so that a bad config fails once, clearly,
  // instead of failing max_failures jobs.
  train::Config c = train::load_config(o_.config, o_.overrides);
  train::validate(c, /*check_files=*/true);
  OLMO_CHECK(c.data.processes == 0, "config key 'data.processes' = ", c.data.processes,
             " pins the world size; olmo launch chooses it from the slots (set data.processes=0)");
  instances_ = train::batch_instances(c);
  // exact: any world size up to the instances (0: no divisibility constraint).
  micro_batches_ = c.dist.reduce == dist::ReduceMode::exact ? 0 : instances_ / train::forward_instances(c);
  save_interval_ = c.trainer.save_interval;
  // Steps after which periodic work (a save, an evaluation...) makes the next gap longer.
  const int64_t bench = c.benchmarks.suites.empty() ? 0
                      : c.benchmarks.interval > 0 ? c.benchmarks.interval : c.validation.interval;
  stall_.emplace(o_.stall, std::vector<int64_t>{save_interval_, c.eval.interval, c.validation.interval,
                                                bench, c.audit.enabled ? c.audit.stats_window : 0,
                                                c.trainer.peak_interval},
                 train::schedule_steps(c));
  run_dir_ = fs::absolute(c.trainer.run_dir).lexically_normal().string();
  request_ = run_dir_ + "/.resize_request";
  if (c.dist.reduce != dist::ReduceMode::exact)
    note(cat("warning: dist.reduce=", train::choice_name(c.dist.reduce), ": a run resized by the launcher follows "
             "another trajectory than one that never was (the default dist.reduce=exact gives the "
             "same bits on every world size)"));
  if (save_interval_ <= 0)
    note("warning: trainer.save_interval is 0: a failed job restarts from the beginning and the "
         "job never grows (it has no checkpoint boundary)");
  if (!o_.dry_run) launch_lock_.emplace(run_dir_, ".launch.lock");
}

void Launcher::event(const std::string& name, json j) {
  json e = {{"event", name}, {"time", wall_s()}};
  e.update(j);
  const std::string line = e.dump();
  std::printf("olmo launch: %s\n", line.c_str());
  std::fflush(stdout);
  std::ofstream f(run_dir_ + "/launch.jsonl", std::ios::app);
  f << line << "\n";
}

std::vector<Host> Launcher::configured() {
  if (slurm_) return live_hosts(o_.scontrol, *slurm_);
  if (o_.np > 0) return {{"localhost", o_.np}};
  if (!o_.hosts.empty()) return parse_host_list(o_.hosts, "--hosts");
  try {
    last_config_ = read_hostfile(o_.hostfile);
  } catch (const Error& e) {
    if (last_config_.empty()) throw;
    note(cat("warning: ", e.what(), "; keeping the previous host list"));
  }
  return last_config_;
}

std::vector<Host> Launcher::available(const std::vector<std::string>& trusted, bool log) {
  const std::vector<Host> all = configured();
  std::vector<Host> probed;
  for (const Host& h : all)
    if (std::find(trusted.begin(), trusted.end(), h.name) == trusted.end()) probed.push_back(h);
  const std::vector<std::string> whys = probe_hosts(agent_, probed, o_.probe_timeout_s);
  return sort_answers(all, probed, whys, log);
}

// The configured hosts minus those whose probe failed (probed[i] answered whys[i]).
std::vector<Host> Launcher::sort_answers(const std::vector<Host>& all,
                                         const std::vector<Host>& probed,
                                         const std::vector<std::string>& whys, bool log) {
  std::vector<Host> out;
  lost_.clear();
  for (const Host& h : all) {
    std::string why;
    for (size_t i = 0; i < probed.size(); ++i)
      if (probed[i].name == h.name) why = whys[i];
    if (why.empty()) {
      out.push_back(h);
    } else {
      lost_.emplace_back(h.name, why);
      if (log) {
        event("unreachable", {{"host", h.name}, {"slots", h.slots}, {"why", why}});
        note(cat("host ", h.name, " (", h.slots, " slot", h.slots == 1 ? "" : "s",
                 ") is unreachable: ", why));
      }
    }
  }
  return out;
}

std::string Launcher::lost_summary() const {
  std::string s;
  for (auto& [h, why] : lost_) s += cat(s.empty() ? "" : "; ", h, ": ", why);
  return s.empty() ? "" : " (unreachable: " + s + ")";
}

std::string Launcher::world_rule() const {
  return micro_batches_ > 0
             ? cat("the largest count that divides the ", micro_batches_,
                   " micro-batches of a step")
             : cat("the largest count up to the ", instances_, " instances of a step");
}

int Launcher::world_for(const std::vector<Host>& avail, bool log, const std::string& when) {
  const int slots = total_slots(avail);
  const int w = choose_world(slots, micro_batches_, instances_);
  const int64_t ck = newest_checkpoint(run_dir_);
  const std::string newest = ck >= 0 ? cat("; the newest complete checkpoint is ", run_dir_, "/step", ck) : "";
  if (log && w < o_.min_np)
    throw Error(cat(when, ": ", slots, " slot", slots == 1 ? "" : "s", " available",
                    lost_summary(), slots >= o_.min_np ? cat(", allowing ", w, " process",
                    w == 1 ? "" : "es", " (", world_rule(), ")") : std::string(),
                    ", below --min-np ", o_.min_np, "; stopping", newest));
  if (log && w < slots) {
    const std::string why =
        cat(slots, " slots available, but ", slots > instances_ ? cat("a step has only ", instances_, " instances")
                                                                : cat(slots, " does not divide the ", micro_batches_,
                                                                      " micro-batches of a step"),
            ": running on ", w, " process", w == 1 ? "" : "es", " (the largest count that does)");
    note(why);
    event("world_adjusted", {{"slots", slots}, {"world", w}, {"micro_batches", micro_batches_},
                             {"why", why}});
  }
  return w;
}

void Launcher::wait_lock(double wait_s) {
  const double t0 = wall_s();
  for (;;) {
    try {
      ckpt::RunDirLock probe(run_dir_);
      return;
    } catch (const Error& e) {
      if (wall_s() - t0 >= wait_s)
        throw Error(cat(e.what(), wait_s > 0 ? cat(" (waited ", wait_s, " s for it)") : std::string()));
    }
    sleep_s(0.1);
  }
}

std::vector<std::string> Launcher::job_argv(const std::vector<Host>& hosts, int world) const {
  if (slurm_) {
    std::vector<std::string> cmd = {o_.olmo_exe, "train", o_.config};
    cmd.insert(cmd.end(), o_.overrides.begin(), o_.overrides.end());
    return srun_argv(o_.srun, o_.srun_args, hosts, world, slurm_->cpus_per_task, cmd);
  }
  std::vector<std::string> a = {o_.mpirun};
  a.insert(a.end(), o_.mpi_args.begin(), o_.mpi_args.end());
  if (!o_.rsh_agent.empty()) a.insert(a.end(), {"--mca", "plm_rsh_agent", o_.rsh_agent});
  a.insert(a.end(), {"-x", "OLMO_RESIZE_REQUEST", "-x", "OLMO_LAUNCH_JOB", "--host", host_list_string(hosts), "-np",
                     std::to_string(world), o_.olmo_exe, "train", o_.config});
  a.insert(a.end(), o_.overrides.begin(), o_.overrides.end());
  return a;
}

int Launcher::dry_run() {
  const std::vector<Host> all = configured();
  const int world = world_for(all, false, "dry run");
  if (slurm_)
    std::printf("Slurm job %s: nodes %s (%s), %d CPU%s per task -> trainer.threads=%d per rank\n",
                slurm_->job_id.c_str(), slurm_->nodelist.c_str(), host_list_string(slurm_->hosts).c_str(),
                slurm_->cpus_per_task, slurm_->cpus_per_task == 1 ? "" : "s", slurm_->cpus_per_task);
  std::printf("slots: %s (%d; not probed)\n", host_list_string(all).c_str(), total_slots(all));
  std::printf("world: %d process%s (%s <= the slots)%s\n", world, world == 1 ? "" : "es",
              world_rule().c_str(), world < o_.min_np ? cat("; below --min-np ", o_.min_np,
              ": olmo launch would stop").c_str() : "");
  const int64_t ck = newest_checkpoint(run_dir_);
  std::printf("run dir: %s (%s)\n", run_dir_.c_str(),
              ck >= 0 ? cat("resumes from step", ck).c_str() : "starts fresh");
  std::printf("stall watchdog: %s\n", stall_->describe().c_str());
  std::printf("env: OLMO_RESIZE_REQUEST=%s OLMO_LAUNCH_JOB=0\ncommand:", request_.c_str());
  for (const std::string& w : job_argv(take_slots(all, world), world)) std::printf(" %s", w.c_str());
  std::printf("\n");
  return 0;
}

int Launcher::preempted(int attempt, int world, int64_t last_step) {
  const int64_t ck = newest_checkpoint(run_dir_);
  event("preempted", {{"attempt", attempt}, {"world", world}, {"last_step", last_step},
                      {"checkpoint_step", ck}, {"signal", int(g_signal)}});
  note(cat("the job was preempted after step ", last_step, "; newest complete checkpoint: ",
           ck >= 0 ? cat(run_dir_, "/step", ck) : std::string("none"), "; restarting nothing"));
  if (slurm_ || in_slurm_allocation()) {
    const std::string job = slurm_ ? slurm_->job_id
                                   : runtime().env("SLURM_JOB_ID").value_or("");
    if (!o_.requeue) {
      event("requeue", {{"job", job}, {"done", false}, {"why", "--no-requeue"}});
    } else {
      const std::string err = requeue_job(o_.scontrol, job);
      event("requeue", {{"job", job}, {"done", err.empty()}, {"why", err}});
      note(err.empty() ? cat("Slurm job ", job, " requeued (scontrol requeue): it resumes from the "
                             "newest checkpoint when it starts again")
                       : cat("could not requeue Slurm job ", job, ": ", err));
    }
  }
  return train::kExitPreempted;
}

int Launcher::run() {
  if (o_.dry_run) return dry_run();
  std::vector<Host> avail = available({}, /*log=*/true);
  int world = world_for(avail, true, "start");
  {
    std::vector<Host> all = configured();
    event("start", {{"run_dir", run_dir_}, {"hosts", host_list_string(all)},
                    {"slots", total_slots(all)}, {"reachable_slots", total_slots(avail)},
                    {"world", world}, {"micro_batches", micro_batches_}, {"min_np", o_.min_np},
                    {"max_failures", o_.max_failures}, {"stall_watchdog", stall_->describe()}});
  }
  int attempt = 0, failures = 0, resizes = 0;
  double t_down = -1;  // when the previous job ended (restart latency)
  std::vector<double> latencies;
  for (;; ++attempt) {
    if (g_signals) return preempted(attempt, world, newest_checkpoint(run_dir_));
    wait_lock(attempt == 0 ? 0 : o_.lock_wait_s);
    std::error_code ec;
    fs::remove(request_, ec);
    fs::remove(request_ + ".done", ec);
    const std::vector<Host> use = take_slots(avail, world);
    std::vector<std::string> in_use;
    for (const Host& h : use) in_use.push_back(h.name);
    const int64_t from_step = newest_checkpoint(run_dir_);
    event("launch", {{"attempt", attempt}, {"world", world}, {"hosts", host_list_string(use)},
                     {"checkpoint_step", from_step}});
    RunWatch watch(run_dir_);
    watch.relaunched(attempt);
    const double t_launch = wall_s();
    Child job(job_argv(use, world),
              {"OLMO_RESIZE_REQUEST=" + request_, "OLMO_LAUNCH_JOB=" + std::to_string(attempt)});
    bool resumed = false, stalled = false;
    int64_t progress_step = -1;
    double t_progress = t_launch;
    StallLimit limit = stall_->limit(watch.step_times(), false, -1, longest_start_);
    int pending = 0;  // world size of a requested resize (0: none)
    double last_probe = wall_s();
    bool probing = false;
    std::vector<std::unique_ptr<Probe>> round;  // background probes in flight
    std::vector<Host> round_all, round_hosts;
    ExitStatus st;
    int forwarded = 0;  // signals to the launcher handled so far
    while (!job.poll(&st)) {
      if (g_signals > forwarded && forwarded == 0) {
        // Preemption: the ranks checkpoint at the next step boundary and exit kExitPreempted.
        forwarded = g_signals;
        ::kill(job.pid(), SIGUSR1);
        event("signal", {{"signal", int(g_signal)}, {"forwarded", "SIGUSR1"}, {"step", watch.last_step()}});
        note(cat("signal ", int(g_signal), " (", strsignal(g_signal), "): asked the job to checkpoint "
                 "and stop (SIGUSR1 to ", job_argv(use, world)[0], "); a second signal stops it at once"));
      } else if (g_signals > forwarded) {
        const int s = g_signal;
        job.stop(10.0);
        event("interrupted", {{"signal", s}});
        throw Error(cat("interrupted by signal ", s, " (", strsignal(s), "); the job was stopped"));
      }
      watch.poll();
      if (watch.last_step() != progress_step) {
        progress_step = watch.last_step();
        t_progress = wall_s();
        limit = stall_->limit(watch.step_times(), watch.last_step() >= 0, progress_step, longest_start_);
      }
      if (limit.seconds > 0 && wall_s() - t_progress > limit.seconds && !stalled) {
        // A hung job (a host cut off without its processes dying, a frozen rank): stopped and
        // counted as a failure like a dead one.
        stalled = true;
        const StepTimes& tm = watch.step_times();
        event("stalled", {{"attempt", attempt}, {"world", world}, {"step", watch.last_step()},
                          {"seconds", wall_s() - t_progress}, {"timeout_s", limit.seconds},
                          {"rule", limit.why}, {"plain_gaps", tm.plain_gaps.size()},
                          {"median_step_gap_s", limit.median_gap_s},
                          {"longest_heavy_gap_s", tm.longest_heavy_gap}});
        note(cat("job ", attempt, " made no progress for ", limit.seconds, " s (stall timeout: ",
                 limit.why, ") after step ", watch.last_step(), ": stopping it"));
        job.stop(10.0);
        continue;
      }
      if (!resumed && watch.started() && watch.last_step() > watch.start_step()) {
        resumed = true;
        longest_start_ = std::max(longest_start_, wall_s() - t_launch);
        json j = {{"attempt", attempt}, {"world", world}, {"step", watch.start_step()},
                  {"first_step_after_s", wall_s() - t_launch}};
        if (t_down >= 0) {
          j["restart_latency_s"] = wall_s() - t_down;
          latencies.push_back(wall_s() - t_down);
        }
        event("running", j);
      }
      // Slots while the job runs: the hosts not in use are probed in the background (the
      // job is still watched meanwhile); the answers decide whether to resize.
      if (!probing && wall_s() - last_probe >= o_.probe_interval_s && save_interval_ > 0) {
        probing = true;
        round_all = configured();
        round_hosts.clear();
        for (const Host& h : round_all)
          if (std::find(in_use.begin(), in_use.end(), h.name) == in_use.end()) {
            round_hosts.push_back(h);
            round.push_back(std::make_unique<Probe>(agent_, h.name, o_.probe_timeout_s));
          }
      }
      if (probing) {
        bool all = true;
        for (auto& p : round) all = p->poll() && all;
        if (all) {
          std::vector<std::string> whys;
          for (auto& p : round) whys.push_back(p->why());
          round.clear();
          probing = false;
          last_probe = wall_s();
          const std::vector<Host> now = sort_answers(round_all, round_hosts, whys, false);
          const int target = choose_world(total_slots(now), micro_batches_, instances_);
          if (target != world && target >= o_.min_np && target != pending) {
            write_file_atomic(request_, cat(target, "\n"));
            pending = target;
            event("resize_request", {{"from", world}, {"to", target}, {"step", watch.last_step()},
                                     {"slots", total_slots(now)}, {"hosts", host_list_string(now)}});
          } else if (pending && target == world) {
            fs::remove(request_, ec);
            event("resize_cancel", {{"world", world}, {"step", watch.last_step()}});
            pending = 0;
          }
        }
      }
      sleep_s(o_.poll_s);
    }
    watch.poll();
    t_down = wall_s();
    const std::vector<double>& saves = watch.save_seconds();
    if (stalled) st = ExitStatus{};  // whatever mpirun said when stopped: a failure
    if (st.code == train::kExitPreempted) return preempted(attempt, world, watch.last_step());
    if (forwarded && !st.ok()) {
      event("interrupted", {{"signal", int(g_signal)}, {"status", st.describe()}});
      throw Error(cat("interrupted by signal ", int(g_signal), "; the job ended with ", st.describe(),
                      " instead of a preemption checkpoint (exit ", train::kExitPreempted, ")"));
    }
    if (st.ok() && fs::exists(request_ + ".done", ec)) {
      const int64_t step = std::stoll(read_file(request_ + ".done"));
      avail = available({}, true);
      const int next = world_for(avail, true, cat("resize after step ", step));
      resizes += next != world;
      event(next == world ? "restart" : "resize",
            {{"reason", "slots changed"}, {"step", step}, {"from", world}, {"to", next},
             {"hosts", host_list_string(take_slots(avail, next))}});
      world = next;
      continue;
    }
    if (st.ok()) {
      json j = {{"step", watch.last_step()}, {"attempts", attempt + 1}, {"failures", failures},
                {"resizes", resizes}};
      if (!saves.empty()) {
        j["checkpoint_save_s_mean"] = [&] { double s = 0; for (double x : saves) s += x; return s / double(saves.size()); }();
        j["checkpoint_save_s_max"] = *std::max_element(saves.begin(), saves.end());
      }
      if (!latencies.empty()) j["restart_latency_s_max"] = *std::max_element(latencies.begin(), latencies.end());
      event("done", j);
      return 0;
    }
    ++failures;
    const int64_t ck = newest_checkpoint(run_dir_);
    const int64_t last = watch.last_step();
    event("failure", {{"attempt", attempt}, {"world", world},
                      {"status", stalled ? std::string("stalled") : st.describe()},
                      {"last_step", last}, {"checkpoint_step", ck},
                      {"lost_steps", std::max<int64_t>(0, last - std::max<int64_t>(ck, 0))},
                      {"failures", failures}, {"max_failures", o_.max_failures}});
    note(cat("job ", attempt, " on ", world, " process", world == 1 ? "" : "es", " failed (",
             st.describe(), ") after step ", last, "; newest complete checkpoint: ",
             ck >= 0 ? cat("step", ck) : std::string("none")));
    if (failures >= o_.max_failures)
      throw Error(cat("the job failed ", failures, " time", failures == 1 ? "" : "s",
                      " (last: ", st.describe(), "), --max-failures ", o_.max_failures,
                      ": giving up; the newest complete checkpoint is ",
                      ck >= 0 ? cat(run_dir_, "/step", ck) : std::string("none"),
                      " (olmo launch with the same arguments resumes from it)"));
    avail = available({}, true);
    const int next = world_for(avail, true, cat("relaunch after failure ", failures));
    event(next == world ? "restart" : "resize",
          {{"reason", "failure"}, {"step", ck}, {"from", world}, {"to", next},
           {"hosts", host_list_string(take_slots(avail, next))}});
    resizes += next != world;
    world = next;
  }
}

}  // namespace

int run_launcher(const LaunchOptions& opt) {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGUSR1, &sa, nullptr);
  Launcher l(opt);
  return l.run();
}

}  // namespace olmo::launch
