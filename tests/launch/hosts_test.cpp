// The launcher's slot logic (src/launch/hosts.h): host lists and hostfiles (good and bad
// input), the world size a slot count allows (largest divisor of the micro-batches, at most the
// instances of a batch), taking slots in order, and probes through a remote-shell command
// (an answering, a failing and a hanging agent).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "launch/hosts.h"

namespace fs = std::filesystem;
using namespace olmo::launch;

TEST(Hosts, ParseList) {
  auto h = parse_host_list("a:2, b ,c:4,a:1", "--hosts");
  ASSERT_EQ(h.size(), 3u);
  EXPECT_EQ(h[0], (Host{"a", 3}));
  EXPECT_EQ(h[1], (Host{"b", 1}));
  EXPECT_EQ(h[2], (Host{"c", 4}));
  EXPECT_EQ(total_slots(h), 8);
  EXPECT_EQ(host_list_string(h), "a:3,b:1,c:4");
  for (const char* bad : {"", "a:0", "a:x", "a:2,,b", ":3", "a:-1"}) {
    try {
      parse_host_list(bad, "--hosts");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const olmo::Error& e) {
      EXPECT_NE(std::string(e.what()).find("--hosts"), std::string::npos) << e.what();
    }
  }
}

TEST(Hosts, Hostfile) {
  const std::string p = (fs::temp_directory_path() / ("olmo_hostfile_" + std::to_string(::getpid()))).string();
  std::ofstream(p) << "# slots\nn1 slots=2\n\nn2:3  # comment\nn3\n";
  auto h = read_hostfile(p);
  ASSERT_EQ(h.size(), 3u);
  EXPECT_EQ(h[0], (Host{"n1", 2}));
  EXPECT_EQ(h[1], (Host{"n2", 3}));
  EXPECT_EQ(h[2], (Host{"n3", 1}));
  std::ofstream(p) << "n1 slots=2\nn2 cpus=4\n";
  try {
    read_hostfile(p);
    ADD_FAILURE() << "accepted cpus=4";
  } catch (const olmo::Error& e) {
    EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
  }
  fs::remove(p);
  EXPECT_THROW(read_hostfile(p), olmo::Error);
}

TEST(Hosts, ChooseWorld) {
  EXPECT_EQ(choose_world(4, 12, 12), 4);
  EXPECT_EQ(choose_world(5, 12, 12), 4);   // 5 does not divide 12
  EXPECT_EQ(choose_world(3, 8, 8), 2);     // 3 does not divide 8
  EXPECT_EQ(choose_world(7, 7, 7), 7);
  EXPECT_EQ(choose_world(16, 24, 6), 6);   // at most the instances of a batch
  EXPECT_EQ(choose_world(0, 12, 12), 0);
  // dist.reduce=exact (micro_batches 0): any count up to the instances.
  EXPECT_EQ(choose_world(3, 0, 8), 3);
  EXPECT_EQ(choose_world(63, 0, 512), 63);
  EXPECT_EQ(choose_world(16, 0, 6), 6);
  EXPECT_EQ(choose_world(0, 0, 8), 0);
  auto t = take_slots({{"a", 2}, {"b", 2}, {"c", 2}}, 3);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0], (Host{"a", 2}));
  EXPECT_EQ(t[1], (Host{"b", 1}));
}

TEST(Hosts, Probe) {
  const fs::path d = fs::temp_directory_path() / ("olmo_probe_" + std::to_string(::getpid()));
  fs::create_directories(d);
  auto script = [&](const char* name, const char* body) {
    const std::string p = (d / name).string();
    std::ofstream(p) << "#!/bin/sh\n" << body << "\n";
    fs::permissions(p, fs::perms::owner_all);
    return p;
  };
  const std::string ok = script("ok.sh", "shift; exec \"$@\"");
  const std::string no = script("no.sh", "echo \"ssh: connect to host $1 port 22: No route to host\" >&2; exit 255");
  const std::string hang = script("hang.sh", "sleep 30");
  EXPECT_EQ(probe_host(no, "localhost", 1), "");  // local: never probed
  EXPECT_EQ(probe_host(ok, "node7", 5), "");
  const std::string why = probe_host(no, "node7", 5);
  EXPECT_NE(why.find("No route to host"), std::string::npos) << why;
  EXPECT_NE(why.find("exit code 255"), std::string::npos) << why;
  const std::string slow = probe_host(hang, "node7", 0.3);
  EXPECT_NE(slow.find("no answer"), std::string::npos) << slow;
  fs::remove_all(d);
}
