// pacl::BroadcastStrides and pacl::ContiguousStrides: NumPy broadcasting (right-aligned) on typical, edge and
// failing shapes, checked by reading elements through the strides against an independent index computation.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "pacl/broadcast.h"
#include "pacl/tensor.h"

namespace {

using Shape = std::vector<int64_t>;

pacl::TensorDesc Desc(const Shape& shape, const Shape& strides) {
  pacl::TensorDesc t;
  t.dtype = ACL_FLOAT;
  t.rank = static_cast<int>(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    t.shape[d] = shape[d];
    t.strides[d] = strides[d];
  }
  return t;
}

// Row-major strides written out by hand-rule: product of the later dims (sizes 0 count as 1).
Shape RowMajor(const Shape& shape) {
  Shape strides(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    int64_t product = 1;
    for (size_t k = d + 1; k < shape.size(); ++k) product *= shape[k] > 0 ? shape[k] : 1;
    strides[d] = product;
  }
  return strides;
}

struct BroadcastResult {
  bool ok;
  Shape strides;
};

BroadcastResult Broadcast(const pacl::TensorDesc& t, const Shape& target) {
  Shape strides(pacl::kMaxRank, -777);
  const bool ok = pacl::BroadcastStrides(t, target.data(), static_cast<int>(target.size()), strides.data());
  strides.resize(target.size());
  return {ok, strides};
}

TEST(ContiguousStridesTest, RowMajor) {
  const Shape shapes[] = {{}, {5}, {2, 3}, {2, 3, 4}, {1, 1, 7}, {4, 1, 3}, {2, 0, 3}, {3, 2, 1, 5, 1, 2, 2, 3}};
  for (const Shape& shape : shapes) {
    Shape strides(shape.size() + 1, -777);  // one sentinel past the end
    pacl::ContiguousStrides(shape.data(), static_cast<int>(shape.size()), strides.data());
    EXPECT_EQ(strides.back(), -777) << "wrote past rank";
    strides.pop_back();
    EXPECT_EQ(strides, RowMajor(shape));
  }
  const int64_t shape[] = {2, 3, 4};
  int64_t three[3];
  pacl::ContiguousStrides(shape, 3, three);
  EXPECT_EQ(three[0], 12);
  EXPECT_EQ(three[1], 4);
  EXPECT_EQ(three[2], 1);
}

TEST(BroadcastStridesTest, SameShapeKeepsStrides) {
  const pacl::TensorDesc t = Desc({2, 3, 4}, {12, 4, 1});
  const BroadcastResult r = Broadcast(t, {2, 3, 4});
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.strides, (Shape{12, 4, 1}));
}

TEST(BroadcastStridesTest, NonContiguousAndNegativeStridesAreKept) {
  const pacl::TensorDesc t = Desc({3, 4}, {-1, 6});
  const BroadcastResult r = Broadcast(t, {5, 3, 4});
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.strides, (Shape{0, -1, 6}));
}

TEST(BroadcastStridesTest, SizeOneAndMissingLeadingDimsGetStrideZero) {
  struct Case {
    Shape source, source_strides, target, expected;
  };
  const Case cases[] = {
      {{1}, {1}, {7}, {0}},
      {{3, 1}, {1, 1}, {3, 5}, {1, 0}},
      {{1, 5}, {5, 1}, {4, 5}, {0, 1}},
      {{5}, {1}, {2, 3, 5}, {0, 0, 1}},
      {{}, {}, {2, 3}, {0, 0}},          // a scalar broadcasts to anything
      {{1, 1}, {9, 9}, {1, 1}, {0, 0}},  // size-1 dims never advance
      {{2, 1, 4}, {4, 4, 1}, {3, 2, 6, 4}, {0, 4, 0, 1}},
      {{1}, {1}, {0}, {0}},              // 1 broadcasts to an empty dim
      {{0, 3}, {3, 1}, {0, 3}, {3, 1}},  // empty stays empty
      {{4, 1, 1, 1, 1, 1, 1, 2}, {2, 2, 2, 2, 2, 2, 2, 1}, {4, 2, 3, 1, 5, 1, 6, 2}, {2, 0, 0, 0, 0, 0, 0, 1}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE("source rank " + std::to_string(c.source.size()) + ", target rank " + std::to_string(c.target.size()));
    const BroadcastResult r = Broadcast(Desc(c.source, c.source_strides), c.target);
    ASSERT_TRUE(r.ok);
    EXPECT_EQ(r.strides, c.expected);
  }
}

TEST(BroadcastStridesTest, IncompatibleShapesFail) {
  struct Case {
    Shape source, target;
  };
  const Case cases[] = {
      {{3}, {4}},  {{2, 3}, {3, 2}},       {{2, 3}, {3}},  // source has more dims than the target
      {{0}, {1}},                                          // NumPy: an empty dim does not stretch
      {{3}, {0}},  {{2, 1, 4}, {2, 3, 5}}, {{5}, {5, 4}},  // right alignment: 5 meets 4
      {{4}, {-4}},                                         // negative target dim
  };
  for (const Case& c : cases) {
    const pacl::TensorDesc t = Desc(c.source, RowMajor(c.source));
    EXPECT_FALSE(Broadcast(t, c.target).ok) << "source rank " << c.source.size();
  }
  // Target rank outside [0, kMaxRank].
  const pacl::TensorDesc t = Desc({2}, {1});
  int64_t big_target[pacl::kMaxRank + 1];
  int64_t strides[pacl::kMaxRank + 1];
  for (auto& d : big_target) d = 2;
  EXPECT_FALSE(pacl::BroadcastStrides(t, big_target, pacl::kMaxRank + 1, strides));
  EXPECT_FALSE(pacl::BroadcastStrides(t, big_target, -1, strides));
}

// Reads every element of the broadcast view through the returned strides and compares with NumPy's rule written
// as index arithmetic: source index = target index with leading dims dropped and size-1 dims pinned to 0.
TEST(BroadcastStridesTest, ElementsReadThroughStridesMatchIndexRule) {
  const Shape source_shape = {3, 1, 4};
  const Shape source_strides = RowMajor(source_shape);
  std::vector<float> storage(12);
  for (size_t i = 0; i < storage.size(); ++i) storage[i] = static_cast<float>(i) * 1.5f + 0.25f;
  const Shape target = {2, 3, 5, 4};
  const BroadcastResult r = Broadcast(Desc(source_shape, source_strides), target);
  ASSERT_TRUE(r.ok);
  int64_t mismatches = 0;
  for (int64_t a = 0; a < 2; ++a) {
    for (int64_t b = 0; b < 3; ++b) {
      for (int64_t c = 0; c < 5; ++c) {
        for (int64_t d = 0; d < 4; ++d) {
          const int64_t via_strides = a * r.strides[0] + b * r.strides[1] + c * r.strides[2] + d * r.strides[3];
          const int64_t via_rule = b * 4 + 0 * 4 + d;  // dims (3, 1, 4): index (b, 0, d)
          mismatches += storage[static_cast<size_t>(via_strides)] != storage[static_cast<size_t>(via_rule)];
        }
      }
    }
  }
  EXPECT_EQ(mismatches, 0);
}

}  // namespace
