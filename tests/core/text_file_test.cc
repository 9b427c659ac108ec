#include "core/text_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cerrno>
#include <fstream>
#include <thread>

#include "../store/scratch.h"

namespace tempo {
namespace {

class TextFile : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(dir_.empty()); }
  std::string write(const std::string& name, size_t bytes) {
    const std::string p = dir_ + "/" + name;
    std::ofstream(p) << std::string(bytes, 'x');
    return p;
  }
  test::ScratchDir scratch_;
  const std::string dir_ = scratch_.path();
};

TEST_F(TextFile, ReadsUpToTheBoundAndRefusesPastIt) {
  std::string text, err;
  EXPECT_EQ(read_text_file(write("max", kMaxTextFileBytes), "spec", &text, &err), 0);
  EXPECT_EQ(text.size(), kMaxTextFileBytes);
  const std::string big = write("big", kMaxTextFileBytes + 1);
  EXPECT_EQ(read_text_file(big, "spec", &text, &err), -EFBIG);
  EXPECT_EQ(err, big + ": larger than 1 MiB: not a spec");
  EXPECT_TRUE(text.empty());
}

TEST_F(TextFile, EndlessDirectoryAndMissingPathsAreErrors) {
  std::string text, err;
  EXPECT_EQ(read_text_file("/dev/zero", "configuration file", &text, &err), -EFBIG);
  EXPECT_EQ(err, "/dev/zero: larger than 1 MiB: not a configuration file");
  EXPECT_EQ(read_text_file(dir_, "spec", &text, &err), -EISDIR);
  EXPECT_EQ(err, dir_ + ": cannot read: Is a directory");
  EXPECT_EQ(read_text_file(dir_ + "/none", "spec", &text, &err), -ENOENT);
  EXPECT_EQ(err, dir_ + "/none: cannot read: No such file or directory");
}

// A FIFO with a writer (what a shell's process substitution gives) reads to its end.
TEST_F(TextFile, AFifoIsReadToItsEnd) {
  const std::string fifo = dir_ + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::thread writer([&] { std::ofstream(fifo) << "policy = tempo\n"; });
  std::string text, err;
  EXPECT_EQ(read_text_file(fifo, "configuration file", &text, &err), 0) << err;
  writer.join();
  EXPECT_EQ(text, "policy = tempo\n");
}

}  // namespace
}  // namespace tempo
