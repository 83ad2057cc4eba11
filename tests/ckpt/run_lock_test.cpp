// RunDirLock: a run dir locked by another (forked) process is refused with "locked by pid P"
// naming the holder's pid, and nothing in the dir changes; a second lock in the same process is
// refused too; once the holder exits (even killed) the dir can be locked again.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "ckpt/run_lock.h"
#include "core/error.h"

namespace fs = std::filesystem;
using olmo::ckpt::RunDirLock;

TEST(RunDirLock, OtherProcessRefused) {
  const std::string run = (fs::temp_directory_path() / ("olmo_lock_test_" + std::to_string(::getpid()))).string();
  fs::remove_all(run);
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(ready[0]);
    try {
      RunDirLock lock(run);
      char c = 'k';
      if (write(ready[1], &c, 1) != 1) _exit(2);
      pause();  // hold the lock until killed
    } catch (...) {
      _exit(1);
    }
    _exit(0);
  }
  close(ready[1]);
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  close(ready[0]);
  std::ofstream(run + "/marker") << "keep";
  try {
    RunDirLock second(run);
    FAIL() << "second lock acquired";
  } catch (const olmo::Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("run dir " + run + " is locked by pid " + std::to_string(child)), std::string::npos) << msg;
  }
  EXPECT_TRUE(fs::exists(run + "/marker"));
  kill(child, SIGKILL);
  int st = 0;
  waitpid(child, &st, 0);
  {
    RunDirLock again(run);  // the OS released the dead holder's lock
    EXPECT_THROW(RunDirLock{run}, olmo::Error);  // same process, second lock
  }
  RunDirLock third(run);
  fs::remove_all(run);
}

TEST(RunDirLock, UncreatableDir) {
  const std::string base = (fs::temp_directory_path() / ("olmo_lock_file_" + std::to_string(::getpid()))).string();
  std::ofstream(base) << "x";
  try {
    RunDirLock l(base + "/run");
    FAIL();
  } catch (const olmo::Error& e) {
    EXPECT_NE(std::string(e.what()).find(base + "/run"), std::string::npos) << e.what();
  }
  fs::remove(base);
}
