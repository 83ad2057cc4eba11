// Reading a Slurm allocation (src/launch/slurm.h) without a Slurm: SLURM_* variables set here
// and a stand-in `scontrol` (a shell script printing one host per line for `show hostnames`, as
// the real one does), checking the slots per node ("2(x3),1" forms, the even split of
// SLURM_NTASKS, the cap at the node's CPUs / CPUs per task), the errors naming the variable, and
// the srun command line. The real scontrol and srun are exercised by launch_slurm_* (Python).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "launch/slurm.h"

namespace fs = std::filesystem;
using namespace olmo::launch;

namespace {

// A fake scontrol: `show hostnames LIST` prints n1 n2 n3 (LIST is ignored), anything else fails.
std::string fake_scontrol() {
  const std::string p = (fs::temp_directory_path() / ("olmo_fake_scontrol_" + std::to_string(::getpid()))).string();
  std::ofstream(p) << "#!/bin/sh\n[ \"$1 $2\" = \"show hostnames\" ] && printf 'n1\\nn2\\nn3\\n' && exit 0\n"
                      "echo \"scontrol: unsupported $*\" >&2; exit 1\n";
  ::chmod(p.c_str(), 0755);
  return p;
}

void set_env(std::initializer_list<std::pair<const char*, const char*>> kv) {
  for (const char* k : {"SLURM_JOB_ID", "SLURM_JOB_NODELIST", "SLURM_NODELIST", "SLURM_TASKS_PER_NODE",
                        "SLURM_NTASKS", "SLURM_CPUS_PER_TASK", "SLURM_JOB_CPUS_PER_NODE"})
    ::unsetenv(k);
  for (auto& [k, v] : kv) ::setenv(k, v, 1);
}

std::string error_of(const std::string& scontrol) {
  try {
    read_allocation(scontrol);
  } catch (const olmo::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Slurm, TasksPerNode) {
  EXPECT_EQ(parse_tasks_per_node("2(x3),1", "V"), (std::vector<int>{2, 2, 2, 1}));
  EXPECT_EQ(parse_tasks_per_node("4", "V"), (std::vector<int>{4}));
  for (const char* bad : {"", "2(x0)", "a", "2(x3", "2,,1", "-1"}) {
    try {
      parse_tasks_per_node(bad, "SLURM_TASKS_PER_NODE");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const olmo::Error& e) {
      EXPECT_NE(std::string(e.what()).find("SLURM_TASKS_PER_NODE"), std::string::npos) << e.what();
    }
  }
}

TEST(Slurm, Allocation) {
  const std::string sc = fake_scontrol();
  set_env({{"SLURM_JOB_ID", "7"}, {"SLURM_JOB_NODELIST", "n[1-3]"}, {"SLURM_TASKS_PER_NODE", "2(x2),1"},
           {"SLURM_CPUS_PER_TASK", "4"}});
  SlurmAllocation a = read_allocation(sc);
  EXPECT_EQ(a.job_id, "7");
  EXPECT_EQ(host_list_string(a.hosts), "n1:2,n2:2,n3:1");
  EXPECT_EQ(a.cpus_per_task, 4);
  EXPECT_TRUE(a.capped.empty());

  // No SLURM_TASKS_PER_NODE: SLURM_NTASKS spread, the first nodes take the remainder.
  set_env({{"SLURM_JOB_ID", "7"}, {"SLURM_JOB_NODELIST", "n[1-3]"}, {"SLURM_NTASKS", "5"}});
  a = read_allocation(sc);
  EXPECT_EQ(host_list_string(a.hosts), "n1:2,n2:2,n3:1");
  EXPECT_EQ(a.cpus_per_task, 1);

  // More tasks than CPUs / CPUs per task on a node: cut to what fits, said in `capped`.
  set_env({{"SLURM_JOB_ID", "7"}, {"SLURM_JOB_NODELIST", "n[1-3]"}, {"SLURM_TASKS_PER_NODE", "2(x3)"},
           {"SLURM_CPUS_PER_TASK", "2"}, {"SLURM_JOB_CPUS_PER_NODE", "4,2,4"}});
  a = read_allocation(sc);
  EXPECT_EQ(host_list_string(a.hosts), "n1:2,n2:1,n3:2");
  EXPECT_NE(a.capped.find("n2: 2 tasks but 2 CPUs (2 per task): 1 slot"), std::string::npos) << a.capped;
}

TEST(Slurm, AllocationErrors) {
  const std::string sc = fake_scontrol();
  set_env({});
  EXPECT_NE(error_of(sc).find("SLURM_JOB_ID is not set"), std::string::npos) << error_of(sc);
  set_env({{"SLURM_JOB_ID", "7"}});
  EXPECT_NE(error_of(sc).find("SLURM_JOB_NODELIST is not set"), std::string::npos) << error_of(sc);
  set_env({{"SLURM_JOB_ID", "7"}, {"SLURM_JOB_NODELIST", "n[1-3]"}, {"SLURM_TASKS_PER_NODE", "2(x2)"}});
  EXPECT_NE(error_of(sc).find("gives 2 nodes but SLURM_JOB_NODELIST='n[1-3]' has 3"), std::string::npos)
      << error_of(sc);
  set_env({{"SLURM_JOB_ID", "7"}, {"SLURM_JOB_NODELIST", "n1"}, {"SLURM_CPUS_PER_TASK", "x"}});
  EXPECT_NE(error_of(sc).find("SLURM_CPUS_PER_TASK: 'x' is not a positive count"), std::string::npos)
      << error_of(sc);
  set_env({{"SLURM_JOB_ID", "7"}, {"SLURM_JOB_NODELIST", "n1"}});
  EXPECT_NE(error_of("/nonexistent/scontrol").find("/nonexistent/scontrol"), std::string::npos)
      << error_of("/nonexistent/scontrol");
  set_env({});
}

TEST(Slurm, SrunCommand) {
  const auto a = srun_argv("srun", {"--mpi=pmi2"}, {{"n1", 2}, {"n2", 2}}, 3, 4, {"olmo", "train", "c.yaml"});
  const std::vector<std::string> want = {"srun", "--mpi=pmix", "--ntasks=3", "--nodes=2", "--nodelist=n1,n2",
                                         "--cpus-per-task=4", "--kill-on-bad-exit=1", "--export=ALL",
                                         "--mpi=pmi2", "olmo", "train", "c.yaml"};
  EXPECT_EQ(a, want);
}
