// What the C++ halves of the PyTorch parity tests share: device tensors filled from and saved to raw files, phase 2
// of an aclnn call with its workspace, dtype names, and the main loop over DIR/cases.txt.
#ifndef PACL_TESTS_PARITY_PARITY_RUNNER_UTIL_H_
#define PACL_TESTS_PARITY_PARITY_RUNNER_UTIL_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "op_calls.h"
#include "acl/acl.h"
#include "aclnn/aclnn_base.h"

namespace parity {

// aclGetRecentErrMsg() as a string, "(no message)" when there is none.
std::string RecentError();

// A contiguous tensor in device memory; the storage holds at least one byte so that empty tensors have a
// non-null data pointer. Every method that can fail returns "" or what went wrong.
class DeviceTensor {
 public:
  DeviceTensor(const std::vector<int64_t>& shape, aclDataType dtype);
  ~DeviceTensor();
  DeviceTensor(const DeviceTensor&) = delete;
  DeviceTensor& operator=(const DeviceTensor&) = delete;

  aclTensor* get() const { return tensor_; }
  // Why construction failed; "" when it did not.
  const std::string& error() const { return error_; }

  // Reads the tensor's contents from a raw file of exactly the tensor's size.
  std::string Load(const std::string& path);
  // Every element NaN (DOUBLE, FLOAT, FLOAT16 or BFLOAT16).
  std::string FillNaN();
  // Writes the tensor's contents to a raw file.
  std::string Save(const std::string& path) const;

 private:
  std::string CopyIn(const std::vector<char>& host);

  aclDataType dtype_;
  size_t bytes_ = 0;
  void* data_ = nullptr;
  aclTensor* tensor_ = nullptr;
  std::string error_;
};

// The call of the operator-call table run the way CANN's samples do (opcall::Run); "" or what failed.
std::string RunCall(const opcall::OpCall& call, aclrtStream stream);

// The dtype named text among the (name, dtype) pairs; false if none.
bool ParseDType(const std::string& text, std::initializer_list<std::pair<const char*, aclDataType>> known,
                aclDataType* dtype);

// Runs one line of cases.txt: sets *case_name (for the report) and returns "" or what went wrong.
using RunCaseLine =
    std::function<std::string(const std::string& dir, const std::string& line, aclrtStream stream,
                              std::string* case_name)>;

// The whole runner: checks the command line (one argument, DIR), sets up the runtime and a stream, runs every
// non-empty line of DIR/cases.txt (failing or not, so that one report lists all the failures) and tears down.
// Returns the exit status: 0 when every case succeeded, 1 otherwise, 2 on a usage error. source_file names the
// runner's source in the usage message.
int RunParityMain(int argc, char** argv, const char* source_file, const RunCaseLine& run_case_line);

// RunParityMain for a runner that parses each line into a Case (which has a `name`), then runs it; a line that does
// not parse is reported as that case's failure.
template <class Case>
int RunParityCases(int argc, char** argv, const char* source_file, std::string (*parse)(const std::string&, Case*),
                   std::string (*run)(const std::string& dir, const Case&, aclrtStream)) {
  return RunParityMain(
      argc, argv, source_file,
      [parse, run](const std::string& dir, const std::string& line, aclrtStream stream, std::string* case_name) {
        Case c;
        const std::string error = parse(line, &c);
        *case_name = c.name;
        return error.empty() ? run(dir, c, stream) : error;
      });
}

}  // namespace parity

#endif  // PACL_TESTS_PARITY_PARITY_RUNNER_UTIL_H_
