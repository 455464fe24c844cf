// aclInit's configuration file: any JSON object is accepted (CANN's acl.json sections are ignored), a broken file is
// refused with the line and column, and the "portable_aclnn" section chooses the device (ACLNN_DEVICE wins).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "acl/acl.h"
#include "runtime_test_util.h"

namespace {

using pacl_test::Mentions;
using pacl_test::TakeErrors;

// A temporary file holding text, removed when the test ends.
class ConfigFile {
 public:
  explicit ConfigFile(const std::string& text) {
    char name[] = "/tmp/pacl_acl_json_XXXXXX";
    const int fd = ::mkstemp(name);
    if (fd >= 0) {
      const ssize_t written = ::write(fd, text.data(), text.size());
      (void)written;
      ::close(fd);
    }
    path_ = name;
  }
  ~ConfigFile() { std::remove(path_.c_str()); }
  const char* path() const { return path_.c_str(); }

 private:
  std::string path_;
};

TEST(Config, AnyJsonObjectIsAccepted) {
  TakeErrors();
  for (const char* text :
       {"{}", " {\n} \n", "{\"dump\": {\"dump_list\": [], \"dump_path\": \"/tmp/dump\", \"dump_mode\": \"output\"},"
                          " \"profiler\": {\"switch\": \"off\", \"aicpu\": \"on\"}, \"x\": [1, -2.5e3, true, null,"
                          " \"a\\\"b\\u00e9\"]}",
        "{\"portable_aclnn\": {}}", "{\"portable_aclnn\": {\"device\": \"auto\"}}"}) {
    ConfigFile file(text);
    EXPECT_EQ(aclInit(file.path()), ACL_SUCCESS) << text << ": " << TakeErrors();
    EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
  }
}

TEST(Config, BrokenJsonIsRefusedWithWhere) {
  TakeErrors();
  struct Case {
    const char* text;
    const char* where;
  };
  for (const Case& c : {Case{"", "line 1, column 1"}, Case{"{", "line 1, column 2"},
                        Case{"[1, 2]", "must be a JSON object"}, Case{"{\"a\": tru}", "line 1, column 7"},
                        Case{"{\n  \"a\": 1,\n}", "line 3, column 1"}, Case{"{\"a\": 01}", "expected ','"},
                        Case{"{\"a\": \"\\q\"}", "unknown escape"}, Case{"{} {}", "after the JSON value"}}) {
    ConfigFile file(c.text);
    EXPECT_EQ(aclInit(file.path()), ACL_ERROR_PARSE_FILE) << c.text;
    const std::string message = TakeErrors();
    EXPECT_TRUE(Mentions(message, {"aclInit", "not a valid configuration", c.where})) << c.text;
    EXPECT_EQ(aclFinalize(), ACL_ERROR_REPEAT_FINALIZE);  // nothing was initialised
    TakeErrors();
  }
}

TEST(Config, PortableAclnnSectionIsChecked) {
  TakeErrors();
  struct Case {
    const char* text;
    const char* says;
  };
  for (const Case& c : {Case{"{\"portable_aclnn\": {\"device\": \"gpu\"}}", "\"cuda\", \"cuda,cpu\" or \"auto\""},
                        Case{"{\"portable_aclnn\": {\"device\": 1}}", "must be a string"},
                        Case{"{\"portable_aclnn\": {\"devices\": \"cpu\"}}", "no key \"devices\""},
                        Case{"{\"portable_aclnn\": {\"strict\": 1}}", "\"strict\" must be true or false"},
                        Case{"{\"portable_aclnn\": {\"strict\": \"on\"}}", "\"strict\" must be true or false"},
                        Case{"{\"portable_aclnn\": \"cpu\"}", "must be an object"}}) {
    ConfigFile file(c.text);
    EXPECT_EQ(aclInit(file.path()), ACL_ERROR_FILE_ATTR_INVALID) << c.text;
    EXPECT_TRUE(Mentions(TakeErrors(), {"aclInit", c.says})) << c.text;
  }
}

// In a fresh process (the devices are numbered once): the file chooses the CPU; ACLNN_DEVICE overrides the file; a
// file that disagrees with devices already numbered is refused.
TEST(Config, DeviceChoice) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        unsetenv("ACLNN_DEVICE");
        ConfigFile file("{\"portable_aclnn\": {\"device\": \"cpu\"}}");
        uint32_t count = 0;
        const bool ok = aclInit(file.path()) == ACL_SUCCESS && aclrtGetDeviceCount(&count) == ACL_SUCCESS &&
                        count == 1 && aclrtSetDevice(0) == ACL_SUCCESS;
        std::exit(ok ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
  EXPECT_EXIT(
      {
        setenv("ACLNN_DEVICE", "tpu", 1);
        ConfigFile file("{\"portable_aclnn\": {\"device\": \"cpu\"}}");
        uint32_t count = 0;
        const bool ok = aclInit(file.path()) == ACL_SUCCESS &&
                        aclrtGetDeviceCount(&count) == ACL_ERROR_RT_NO_DEVICE &&
                        Mentions(TakeErrors(), {"ACLNN_DEVICE=\"tpu\""});
        std::exit(ok ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
  EXPECT_EXIT(
      {
        unsetenv("ACLNN_DEVICE");
        uint32_t count = 0;
        aclrtGetDeviceCount(&count);  // numbers the devices for "auto"
        ConfigFile file("{\"portable_aclnn\": {\"device\": \"cpu\"}}");
        const bool ok = aclInit(file.path()) == ACL_ERROR_FILE_ATTR_INVALID &&
                        Mentions(TakeErrors(), {"already numbered", "call aclInit first"});
        std::exit(ok ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

// In a fresh process: "strict": true turns strict mode on (fresh device memory reads as 0xFF bytes), "strict": false
// leaves it off; once device memory has been allocated, turning it on is refused (docs/strict_mode.md).
TEST(Config, StrictKey) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  // The first byte of a fresh 64-byte aclrtMalloc block, read through aclrtMemcpy; -1 on failure.
  auto first_fresh_byte = [] {
    void* device = nullptr;
    unsigned char byte = 0;
    if (aclrtSetDevice(0) != ACL_SUCCESS || aclrtMalloc(&device, 64, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS ||
        aclrtMemcpy(&byte, 1, device, 1, ACL_MEMCPY_DEVICE_TO_HOST) != ACL_SUCCESS || aclrtFree(device) != 0) {
      return -1;
    }
    return static_cast<int>(byte);
  };
  EXPECT_EXIT(
      {
        unsetenv("ACLNN_STRICT");
        ConfigFile file("{\"portable_aclnn\": {\"strict\": true}}");
        std::exit(aclInit(file.path()) == ACL_SUCCESS && first_fresh_byte() == 0xFF ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
  EXPECT_EXIT(
      {
        unsetenv("ACLNN_STRICT");
        ConfigFile file("{\"portable_aclnn\": {\"strict\": false}}");
        // Not poisoned: a block straight from the system reads as zeros.
        std::exit(aclInit(file.path()) == ACL_SUCCESS && first_fresh_byte() == 0 ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
  EXPECT_EXIT(
      {
        unsetenv("ACLNN_STRICT");
        const bool first_run = aclInit(nullptr) == ACL_SUCCESS && first_fresh_byte() == 0 &&
                               aclFinalize() == ACL_SUCCESS;
        ConfigFile file("{\"portable_aclnn\": {\"strict\": true}}");
        const bool ok = first_run && aclInit(file.path()) == ACL_ERROR_FILE_ATTR_INVALID &&
                        Mentions(TakeErrors(), {"\"strict\": true comes too late", "call aclInit first"});
        std::exit(ok ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
