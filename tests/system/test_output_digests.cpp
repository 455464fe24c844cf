// Output digests: the same bits on every machine. Every conformance case (op_cases.h: each operator, dtype, layout
// and mode variant, at both sizes, so the size-dependent paths and the parallel split run too) is computed on the CPU
// from inputs drawn by a portable generator (optest::UniformValue on std::mt19937_64), and a 64-bit FNV-1a digest of
// its output bytes is compared with the operator's src/ops/<op>/test/output_digests.txt: one file per operator,
// checked into the repository, for x86 (every SIMD target: AVX-512, AVX2, SSE4, the scalar baseline) and aarch64
// (NEON, SVE at any vector length, SVE2). A difference names the case and the target; a deliberate change of results
// (a new algorithm, a new operator) is recorded by running the test with PACL_WRITE_OUTPUT_DIGESTS=1, which rewrites
// the files, and reviewing the diff.
//
// NaN outputs count by class only (any NaN of the dtype hashes as its canonical quiet NaN): which NaN a kernel
// returns is not pinned down across targets (pacl/canonical_math-inl.h).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "op_test_util.h"
#include "system/op_cases.h"

namespace {

using systest::CaseSize;
using systest::OpCase;

// Digests by case name ("GridSampler2D/FLOAT/v0/small"), per digest file (one per operator folder).
using DigestMap = std::map<std::string, std::string>;
using DigestFiles = std::map<std::string, DigestMap>;

std::string DigestFileOf(const systest::CaseMaker& maker) {
  return std::string(PACL_OPS_SOURCE_DIR) + "/" + maker.folder + "/test/output_digests.txt";
}

// FNV-1a, 64 bits.
class Digest {
 public:
  void Add(uint8_t byte) {
    hash_ ^= byte;
    hash_ *= 0x100000001B3ull;
  }
  void AddLittleEndian(uint64_t value, size_t bytes) {
    for (size_t i = 0; i < bytes; ++i) Add(static_cast<uint8_t>(value >> (8 * i)));
  }
  std::string Hex() const {
    char text[17];
    std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash_));
    return text;
  }

 private:
  uint64_t hash_ = 0xCBF29CE484222325ull;
};

// The element's bits with any NaN replaced by the dtype's canonical quiet NaN.
uint64_t CanonicalBits(const uint8_t* element, aclDataType dtype, size_t bytes) {
  uint64_t bits = 0;
  for (size_t i = 0; i < bytes; ++i) bits |= static_cast<uint64_t>(element[i]) << (8 * i);
  switch (dtype) {
    case ACL_FLOAT:
      return (bits & 0x7FFFFFFFu) > 0x7F800000u ? 0x7FC00000u : bits;
    case ACL_FLOAT16:
      return (bits & 0x7FFFu) > 0x7C00u ? 0x7E00u : bits;
    case ACL_BF16:
      return (bits & 0x7FFFu) > 0x7F80u ? 0x7FC0u : bits;
    default:
      return bits;
  }
}

std::string OutputDigest(const OpCase& c) {
  Digest digest;
  for (const optest::DeviceTensor& output : c.outputs()) {
    const size_t element_bytes = static_cast<size_t>(aclDataTypeSize(output.dtype()));
    const std::vector<uint8_t> bytes = output.ReadBytes();
    for (size_t at = 0; at + element_bytes <= bytes.size(); at += element_bytes) {
      digest.AddLittleEndian(CanonicalBits(bytes.data() + at, output.dtype(), element_bytes), element_bytes);
    }
  }
  return digest.Hex();
}

// The conformance table's cases and seeds (test_conformance.cpp), named "<op>/<dtype>/v<variant>/<size>".
DigestFiles ComputeDigests(aclrtStream stream) {
  DigestFiles digests;
  for (const systest::CaseMaker& maker : systest::AllCaseMakers()) {
    for (aclDataType dtype : maker.dtypes) {
      for (CaseSize size : {CaseSize::kSmall, CaseSize::kConcurrency}) {
        for (int variant = 0; variant < (size == CaseSize::kSmall ? 6 : 1); ++variant) {
          const uint64_t seed = 1234 + static_cast<uint64_t>(variant);
          std::unique_ptr<OpCase> c = maker.make(dtype, seed, variant, size);
          const std::string name = c->name() + (size == CaseSize::kSmall ? "/small" : "/large");
          EXPECT_TRUE(c->RunAndWait(stream)) << name;
          digests[DigestFileOf(maker)][name] = OutputDigest(*c);
        }
      }
    }
  }
  return digests;
}

DigestMap ReadDigestFile(const std::string& path) {
  DigestMap digests;
  std::ifstream file(path);
  std::string line;
  while (std::getline(file, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string name, digest;
    if (fields >> name >> digest) digests[name] = digest;
  }
  return digests;
}

void WriteDigestFile(const std::string& path, const DigestMap& digests) {
  std::ofstream file(path);
  file << "# Output digests of this operator's conformance cases, the same on every CPU and SIMD target (x86 and\n"
          "# aarch64). Checked by tests/system/test_output_digests.cpp; rewritten by running it with\n"
          "# PACL_WRITE_OUTPUT_DIGESTS=1 (only when results change on purpose: review the diff).\n"
          "# <operator>/<dtype>/v<variant>/<size> <FNV-1a 64>\n";
  for (const auto& [name, digest] : digests) file << name << " " << digest << "\n";
  ASSERT_TRUE(file.good()) << "cannot write " << path;
}

class OutputDigests : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!optest::DeviceIsCpu()) GTEST_SKIP() << optest::CpuOnlyReason("the digests are the CPU kernels' bits");
  }
  optest::TestStream stream_;
};

// This process's target (ACLNN_SIMD_TARGET pins it; unpinned: the best this CPU runs).
TEST_F(OutputDigests, EveryCaseMatchesTheCheckedInDigest) {
  const std::vector<std::string> targets = optest::SimdTargetNames();
  const std::string target = targets.empty() ? "?" : targets.front();
  const DigestFiles computed = ComputeDigests(stream_.get());
  if (const char* write = std::getenv("PACL_WRITE_OUTPUT_DIGESTS"); write != nullptr && std::strcmp(write, "1") == 0) {
    for (const auto& [path, digests] : computed) {
      WriteDigestFile(path, digests);
      std::printf("wrote %zu digests (target %s) to %s\n", digests.size(), target.c_str(), path.c_str());
    }
    return;
  }
  for (const auto& [path, digests] : computed) {
    const DigestMap expected = ReadDigestFile(path);
    EXPECT_FALSE(expected.empty()) << "no digests in " << path << " (a new operator: run this test with "
                                   << "PACL_WRITE_OUTPUT_DIGESTS=1 and check the file in)";
    std::string differences;
    int count = 0;
    for (const auto& [name, digest] : digests) {
      const auto found = expected.find(name);
      if (found != expected.end() && found->second == digest) continue;
      ++count;
      differences += "  " + name + ": " + digest + ", checked in: " +
                     (found == expected.end() ? std::string("none") : found->second) + "\n";
    }
    for (const auto& [name, digest] : expected) {
      if (digests.count(name) == 0) {
        ++count;
        differences += "  " + name + ": no longer computed\n";
      }
    }
    EXPECT_EQ(count, 0) << count << " of " << digests.size() << " cases differ from " << path << " on SIMD target "
                        << target << ":\n"
                        << differences;
  }
  testing::Test::RecordProperty("simd_target", target);
}

// Every SIMD target this CPU runs, each in a child process pinned to it.
TEST_F(OutputDigests, EverySimdTargetMatchesTheCheckedInDigests) {
  if (const char* pinned = std::getenv("ACLNN_SIMD_TARGET"); pinned != nullptr && *pinned != '\0') {
    GTEST_SKIP() << "this process is pinned to ACLNN_SIMD_TARGET=" << pinned << "; the unpinned run tries each target";
  }
  for (const std::string& target : optest::SimdTargetNames()) {
    SCOPED_TRACE("ACLNN_SIMD_TARGET=" + target);
    optest::RunTestInChild("OutputDigests.EveryCaseMatchesTheCheckedInDigest", {{"ACLNN_SIMD_TARGET", target}});
  }
}

}  // namespace
