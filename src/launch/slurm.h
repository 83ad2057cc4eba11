// `olmo launch` inside a Slurm allocation (sbatch / salloc): the slots come from the allocation,
// the ranks are started as a job step with `srun --mpi=pmix` (Debian's Open MPI 4.1.4 is built
// with PMIx and Slurm 22.05 ships the pmix_v4 plugin, so srun starts MPI ranks directly, no
// mpirun), and a preempted run asks Slurm to requeue the job.
// Contracts:
//   * hosts: SLURM_JOB_NODELIST ("n[1-3],m7") expanded by `scontrol show hostnames`; slots per
//     host from SLURM_TASKS_PER_NODE ("2(x3),1"), else SLURM_NTASKS spread evenly; threads per
//     rank from SLURM_CPUS_PER_TASK (1 when unset: Slurm gives one CPU per task then); a node's
//     slots never exceed its CPUs (SLURM_JOB_CPUS_PER_NODE) / CPUs per task;
//   * while the job runs the live node list is `scontrol show job -o $SLURM_JOB_ID`'s NodeList
//     (it shrinks when a node fails under `sbatch --no-kill`), each node keeping its slots;
//   * nodes other than this one are probed with `srun --overlap -N1 -n1 -w HOST true`;
//   * bad or missing variables throw olmo::Error naming the variable and its value.
// Cost: one scontrol call per read (~10 ms); nothing is cached across reads of the live list.
#pragma once
#include <string>
#include <vector>

#include "launch/hosts.h"

namespace olmo::launch {

struct SlurmAllocation {
  std::string job_id;       // SLURM_JOB_ID
  std::vector<Host> hosts;  // every node of the allocation with its task slots
  int cpus_per_task = 1;    // threads per rank
  std::string nodelist;     // SLURM_JOB_NODELIST as given
  std::string capped;       // nodes whose slots were cut to their CPUs (empty: none)
};

// True when SLURM_JOB_ID is set (inside sbatch, salloc or srun).
bool in_slurm_allocation();
// The allocation from the environment (throws naming the variable when one is missing/bad).
SlurmAllocation read_allocation(const std::string& scontrol);
// "2(x3),1" -> {2,2,2,1}; throws naming `where` and the entry.
std::vector<int> parse_tasks_per_node(const std::string& s, const std::string& where);
// Host names of a Slurm node list, expanded by `scontrol show hostnames LIST`.
std::vector<std::string> expand_nodelist(const std::string& scontrol, const std::string& list);
// The nodes of `alloc` that the job holds now (scontrol show job's NodeList), with their slots;
// alloc.hosts when scontrol does not answer.
std::vector<Host> live_hosts(const std::string& scontrol, const SlurmAllocation& alloc);
// The remote shell for probes of other nodes: `srun --overlap -N1 -n1 -w` (+ HOST true).
std::string srun_probe_agent(const std::string& srun);
// `srun --mpi=pmix -n WORLD -N NODES -w HOSTS -c CPUS --kill-on-bad-exit=1 --export=ALL [extra]
// CMD...` (--export=ALL: the launcher's variables reach the ranks even under sbatch --export=NONE).
std::vector<std::string> srun_argv(const std::string& srun, const std::vector<std::string>& extra,
                                   const std::vector<Host>& hosts, int world, int cpus_per_task,
                                   const std::vector<std::string>& command);
// `scontrol requeue JOB`: "" on success, else what scontrol said.
std::string requeue_job(const std::string& scontrol, const std::string& job_id);

}  // namespace olmo::launch
