// Slurm allocations for the elastic launcher (see slurm.h).
#include "launch/slurm.h"

#include <cstdlib>
#include <sstream>
#include <thread>

#include "core/error.h"
#include "core/runtime.h"
#include "launch/process.h"

namespace olmo::launch {

namespace {

std::string env(const char* k) { return runtime().env(k).value_or(""); }

// Runs argv to its end (at most timeout_s); its output, or throws naming the command.
std::string run_capture(const std::vector<std::string>& argv, double timeout_s) {
  CapturedRun r(argv, timeout_s);
  while (!r.poll()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  std::string cmd;
  for (const std::string& a : argv) cmd += (cmd.empty() ? "" : " ") + a;
  if (r.timed_out()) throw Error(cat("'", cmd, "' did not answer within ", timeout_s, " s"));
  if (!r.status().ok())
    throw Error(cat("'", cmd, "' failed (", r.status().describe(), "): ", r.output()));
  return r.output();
}

int positive(const std::string& v, const std::string& where) {
  size_t used = 0;
  int n = 0;
  try {
    n = std::stoi(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != v.size() || v.empty() || n < 1)
    throw Error(cat(where, ": '", v, "' is not a positive count"));
  return n;
}

}  // namespace

bool in_slurm_allocation() { return !env("SLURM_JOB_ID").empty(); }

std::vector<int> parse_tasks_per_node(const std::string& s, const std::string& where) {
  std::vector<int> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    int times = 1;
    const size_t p = item.find("(x");
    if (p != std::string::npos) {
      if (item.back() != ')') throw Error(cat(where, "='", s, "': bad entry '", item, "'"));
      times = positive(item.substr(p + 2, item.size() - p - 3), cat(where, "='", s, "'"));
      item = item.substr(0, p);
    }
    const int n = positive(item, cat(where, "='", s, "'"));
    out.insert(out.end(), size_t(times), n);
  }
  if (out.empty()) throw Error(cat(where, " is empty"));
  return out;
}

std::vector<std::string> expand_nodelist(const std::string& scontrol, const std::string& list) {
  std::vector<std::string> names;
  std::stringstream ss(run_capture({scontrol, "show", "hostnames", list}, 30));
  for (std::string n; ss >> n;) names.push_back(n);
  if (names.empty()) throw Error(cat("'", scontrol, " show hostnames ", list, "' named no host"));
  return names;
}

SlurmAllocation read_allocation(const std::string& scontrol) {
  SlurmAllocation a;
  a.job_id = env("SLURM_JOB_ID");
  OLMO_CHECK(!a.job_id.empty(), "not inside a Slurm allocation (SLURM_JOB_ID is not set): run "
             "olmo launch from an sbatch script or salloc, or give --np / --hosts / --hostfile");
  a.nodelist = env("SLURM_JOB_NODELIST");
  if (a.nodelist.empty()) a.nodelist = env("SLURM_NODELIST");
  OLMO_CHECK(!a.nodelist.empty(), "SLURM_JOB_ID=", a.job_id, " but SLURM_JOB_NODELIST is not set");
  const std::vector<std::string> names = expand_nodelist(scontrol, a.nodelist);
  std::vector<int> slots;
  if (!env("SLURM_TASKS_PER_NODE").empty()) {
    slots = parse_tasks_per_node(env("SLURM_TASKS_PER_NODE"), "SLURM_TASKS_PER_NODE");
  } else if (!env("SLURM_NTASKS").empty()) {
    const int n = positive(env("SLURM_NTASKS"), "SLURM_NTASKS");
    for (size_t i = 0; i < names.size(); ++i)
      slots.push_back(n / int(names.size()) + (int(i) < n % int(names.size())));
  } else {
    slots.assign(names.size(), 1);  // salloc -N without -n: one task per node
  }
  if (slots.size() != names.size())
    throw Error(cat("SLURM_TASKS_PER_NODE='", env("SLURM_TASKS_PER_NODE"), "' gives ", slots.size(),
                    " node", slots.size() == 1 ? "" : "s", " but SLURM_JOB_NODELIST='", a.nodelist,
                    "' has ", names.size()));
  if (!env("SLURM_CPUS_PER_TASK").empty())
    a.cpus_per_task = positive(env("SLURM_CPUS_PER_TASK"), "SLURM_CPUS_PER_TASK");
  // Never more ranks on a node than its allocated CPUs hold at cpus_per_task each (a job whose
  // task count was raised while it was pending keeps its old CPU count: srun would refuse).
  if (!env("SLURM_JOB_CPUS_PER_NODE").empty()) {
    const std::vector<int> cpus = parse_tasks_per_node(env("SLURM_JOB_CPUS_PER_NODE"), "SLURM_JOB_CPUS_PER_NODE");
    for (size_t i = 0; i < names.size() && i < cpus.size(); ++i)
      if (slots[i] * a.cpus_per_task > cpus[i]) {
        const int fit = cpus[i] / a.cpus_per_task;
        a.capped += cat(a.capped.empty() ? "" : "; ", names[i], ": ", slots[i], " task", slots[i] == 1 ? "" : "s",
                        " but ", cpus[i], " CPU", cpus[i] == 1 ? "" : "s", " (", a.cpus_per_task,
                        " per task): ", fit, " slot", fit == 1 ? "" : "s");
        slots[i] = fit;
      }
  }
  for (size_t i = 0; i < names.size(); ++i)
    if (slots[i] > 0) a.hosts.push_back({names[i], slots[i]});
  return a;
}

std::vector<Host> live_hosts(const std::string& scontrol, const SlurmAllocation& alloc) {
  std::string list;
  try {
    std::stringstream ss(run_capture({scontrol, "show", "job", "-o", alloc.job_id}, 30));
    for (std::string w; ss >> w;)
      if (w.rfind("NodeList=", 0) == 0) list = w.substr(9);
  } catch (const Error&) {
    return alloc.hosts;  // the controller is slow to answer: keep what the allocation said
  }
  if (list.empty() || list == "(null)") return alloc.hosts;
  std::vector<Host> out;
  for (const std::string& n : expand_nodelist(scontrol, list))
    for (const Host& h : alloc.hosts)
      if (h.name == n) out.push_back(h);
  return out;
}

std::string srun_probe_agent(const std::string& srun) { return srun + " --overlap -N1 -n1 -w"; }

std::vector<std::string> srun_argv(const std::string& srun, const std::vector<std::string>& extra,
                                   const std::vector<Host>& hosts, int world, int cpus_per_task,
                                   const std::vector<std::string>& command) {
  std::string names;
  for (const Host& h : hosts) names += (names.empty() ? "" : ",") + h.name;
  std::vector<std::string> a = {srun, "--mpi=pmix", "--ntasks=" + std::to_string(world),
                                "--nodes=" + std::to_string(hosts.size()), "--nodelist=" + names,
                                "--cpus-per-task=" + std::to_string(cpus_per_task),
                                "--kill-on-bad-exit=1", "--export=ALL"};
  a.insert(a.end(), extra.begin(), extra.end());
  a.insert(a.end(), command.begin(), command.end());
  return a;
}

std::string requeue_job(const std::string& scontrol, const std::string& job_id) {
  try {
    run_capture({scontrol, "requeue", job_id}, 30);
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

}  // namespace olmo::launch
