// NOTE [Multi-scale deformable attention on the CPU: the generic kernels]
//
// What the vector kernels (msda_cpu.cpp) do not take: DOUBLE, and channel counts that are not a multiple of 8 or
// exceed 256. Both are extensions beyond CANN (FLOAT, FLOAT16, BFLOAT16; c a multiple of 8 in [8, 256]) for the
// programs that mmcv's MultiScaleDeformableAttnFunction serves: mmcv's own tests run it in DOUBLE with gradcheck and
// with c = 4, 30, 32, 64, 71 and 1025. The problem and the per-point rules are the vector kernels' (the corners are
// msda_corners.h's ComputeCorners, with its exact key check: hostile spatialShape / levelStartIndex contents are as
// safe here); the code is scalar and reads and writes every tensor through its strides.
//
// Arithmetic: double for DOUBLE (the corners too, so that finite differences see the function gradcheck expects),
// fp32 for FLOAT, FLOAT16 and BFLOAT16 (as the vector kernels); inputs widened exactly, outputs rounded once.
// Forward: tasks of rows (image, query, head); a row's channel sums walk the points (levels, then points, ascending)
// and their 4 corners in order: out[c] = sum of (attn * weight_k) * value[key_k, c], fused multiply-adds.
// Backward: one task per (image, head) plane, queries ascending, points and corners in the same order: the plane's
// gradValue sums (in the workspace, the arithmetic type, layout (bs, nh, nk, c)) get (attn * weight_k) *
// gradOutput[c]; dot_k = the sum over c ascending of gradOutput[c] * value[key_k, c]; gradAttnWeight = sum_k
// weight_k * dot_k; gradLocation = (attn * W * sum_k d_dx_k * dot_k, attn * H * sum_k d_dy_k * dot_k). The sums
// are rounded into gradValue at the end. Every sum has one order whatever the thread count: deterministic.
// Cost: scalar loads with a dtype switch per element; this path is for compatibility, not speed.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "msda/cpu/msda_cpu_common.h"
#include "msda/msda_corners.h"
#include "msda/msda_params.h"
#include "pacl/dtype.h"
#include "pacl/host_device.h"
#include "pacl/parallel.h"
#include "pacl/workspace_plan.h"

namespace pacl::msda {
namespace {

constexpr int64_t kRowsPerTask = 64;

// Element `element` (an element index from the data pointer) of a FLOAT, FLOAT16, BFLOAT16 or DOUBLE tensor,
// widened exactly to Acc (a DOUBLE tensor always comes with Acc = double).
template <class Acc>
Acc LoadAs(const TensorDesc& t, int64_t element) {
  return DispatchFloatOrDouble(t.dtype, [&](auto tag) -> Acc {
    using T = typename decltype(tag)::type;
    T v;
    std::memcpy(&v, static_cast<const char*>(t.data) + element * static_cast<int64_t>(sizeof(T)), sizeof v);
    if constexpr (std::is_same_v<T, double>) {
      return static_cast<Acc>(v);
    } else {
      return static_cast<Acc>(ToFloat(v));
    }
  });
}

// Stores value rounded once into element `element` of a tensor of the call's dtype.
template <class Acc>
void StoreAs(const TensorDesc& t, int64_t element, Acc value) {
  DispatchFloatOrDouble(t.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T v;
    if constexpr (std::is_same_v<T, double>) {
      v = static_cast<double>(value);
    } else {
      v = FromFloat<T>(static_cast<float>(value));
    }
    std::memcpy(static_cast<char*>(t.data) + element * static_cast<int64_t>(sizeof(T)), &v, sizeof v);
  });
}

// A sample point: its corners, its attention weight (0 when it has no valid corner: it is dropped) and its level's
// size.
template <class Acc>
struct Point {
  PointCornersOf<Acc> corners;
  Acc attn;
  Acc width, height;
};

template <class Acc>
Point<Acc> LoadPoint(const MsdaShape& s, const MsdaInputs& in, const Level& level, int64_t b, int64_t q, int64_t h,
                     int64_t l, int64_t p) {
  const int64_t at = PointElement(in.location, b, q, h, l, p);
  const Acc x = LoadAs<Acc>(in.location, at);
  const Acc y = LoadAs<Acc>(in.location, at + in.location.strides[5]);
  Point<Acc> point;
  const bool kept = ComputeCorners(level.height, level.width, level.start, s.keys, x, y, &point.corners);
  point.attn = kept ? LoadAs<Acc>(in.attn_weight, PointElement(in.attn_weight, b, q, h, l, p)) : Acc(0);
  point.width = static_cast<Acc>(level.width);
  point.height = static_cast<Acc>(level.height);
  return point;
}

template <class Acc>
void Forward(const ForwardParams& params) {
  const MsdaShape& s = params.shape;
  const MsdaInputs& in = params.in;
  const std::vector<Level> levels = ReadLevels(in.spatial_shape, in.level_start_index, s.levels, s.keys);
  ParallelFor(s.batch * s.queries * s.heads, kRowsPerTask, [&](int64_t begin, int64_t end) {
    std::vector<Acc> sums(static_cast<size_t>(s.channels));
    for (int64_t row = begin; row < end; ++row) {
      const int64_t h = row % s.heads;
      const int64_t q = row / s.heads % s.queries;
      const int64_t b = row / (s.heads * s.queries);
      std::fill(sums.begin(), sums.end(), Acc(0));
      for (int64_t l = 0; l < s.levels; ++l) {
        for (int64_t p = 0; p < s.points; ++p) {
          const Point<Acc> point = LoadPoint<Acc>(s, in, levels[static_cast<size_t>(l)], b, q, h, l, p);
          for (int k = 0; k < 4; ++k) {
            const int64_t key = point.corners.key[k];
            if (key < 0) continue;
            const Acc w = point.attn * point.corners.weight[k];
            const int64_t first = ElementOf(in.value, b, key, h);
            for (int64_t c = 0; c < s.channels; ++c) {
              Acc& sum = sums[static_cast<size_t>(c)];
              sum = hd::Fma(w, LoadAs<Acc>(in.value, first + c * in.value.strides[3]), sum);
            }
          }
        }
      }
      for (int64_t c = 0; c < s.channels; ++c) {
        StoreAs(params.output.desc, HeadRowElement(params.output, b, q, h, c), sums[static_cast<size_t>(c)]);
      }
    }
  });
}

// sums: bs * nh * nk * c values of Acc (nullptr when that is 0).
template <class Acc>
void Backward(const BackwardParams& params, Acc* sums) {
  const MsdaShape& s = params.shape;
  const MsdaInputs& in = params.in;
  const std::vector<Level> levels = ReadLevels(in.spatial_shape, in.level_start_index, s.levels, s.keys);
  const int64_t plane_size = s.keys * s.channels;
  ParallelFor(s.batch * s.heads, 1, [&](int64_t begin, int64_t end) {
    std::vector<Acc> g(static_cast<size_t>(s.channels));
    for (int64_t plane = begin; plane < end; ++plane) {
      const int64_t b = plane / s.heads;
      const int64_t h = plane % s.heads;
      Acc* plane_sums = sums != nullptr ? sums + plane * plane_size : nullptr;
      if (plane_sums != nullptr) std::fill(plane_sums, plane_sums + plane_size, Acc(0));
      for (int64_t q = 0; q < s.queries; ++q) {
        for (int64_t c = 0; c < s.channels; ++c) {
          const int64_t at = HeadRowElement(params.grad_output, b, q, h, c);
          g[static_cast<size_t>(c)] = LoadAs<Acc>(params.grad_output.desc, at);
        }
        for (int64_t l = 0; l < s.levels; ++l) {
          for (int64_t p = 0; p < s.points; ++p) {
            const Point<Acc> point = LoadPoint<Acc>(s, in, levels[static_cast<size_t>(l)], b, q, h, l, p);
            Acc by_weight = 0, by_dx = 0, by_dy = 0;
            for (int k = 0; k < 4; ++k) {
              const int64_t key = point.corners.key[k];
              if (key < 0) continue;  // never for a dropped point: all its keys are -1
              const Acc scatter = point.attn * point.corners.weight[k];
              const int64_t first = ElementOf(in.value, b, key, h);
              Acc* key_sums = plane_sums + key * s.channels;
              Acc dot = 0;
              for (int64_t c = 0; c < s.channels; ++c) {
                const Acc gc = g[static_cast<size_t>(c)];
                dot = hd::Fma(gc, LoadAs<Acc>(in.value, first + c * in.value.strides[3]), dot);
                key_sums[c] = hd::Fma(scatter, gc, key_sums[c]);
              }
              by_weight = hd::Fma(point.corners.weight[k], dot, by_weight);
              by_dx = hd::Fma(point.corners.d_dx[k], dot, by_dx);
              by_dy = hd::Fma(point.corners.d_dy[k], dot, by_dy);
            }
            StoreAs(params.grad_attn_weight, PointElement(params.grad_attn_weight, b, q, h, l, p), by_weight);
            const TensorDesc& location_grad = params.grad_location;
            const int64_t at = PointElement(location_grad, b, q, h, l, p);
            StoreAs(location_grad, at, by_dx * (point.attn * point.width));
            StoreAs(location_grad, at + location_grad.strides[5], by_dy * (point.attn * point.height));
          }
        }
      }
    }
  });
  if (sums == nullptr) return;
  ParallelFor(s.batch * s.heads, 1, [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      const int64_t b = plane / s.heads;
      const int64_t h = plane % s.heads;
      const Acc* plane_sums = sums + plane * plane_size;
      for (int64_t key = 0; key < s.keys; ++key) {
        for (int64_t c = 0; c < s.channels; ++c) {
          const TensorDesc& grad_value = params.grad_value;
          StoreAs(grad_value, ElementOf(grad_value, b, key, h) + c * grad_value.strides[3],
                  plane_sums[key * s.channels + c]);
        }
      }
    }
  });
}

uint64_t SumsElements(const MsdaShape& s) {
  uint64_t elements = SaturatingMul(static_cast<uint64_t>(s.batch), static_cast<uint64_t>(s.heads));
  elements = SaturatingMul(elements, static_cast<uint64_t>(s.keys));
  return SaturatingMul(elements, static_cast<uint64_t>(s.channels));
}

}  // namespace

bool VectorKernelsTake(const MsdaShape& shape, aclDataType dtype) {
  return dtype != ACL_DOUBLE && shape.channels % kChannelMultiple == 0 && shape.channels <= kMaxChannels;
}

WorkspacePlan PlanGenericBackwardWorkspace(const BackwardParams& params) {
  WorkspacePlan plan;
  WorkspaceLayout layout;
  const uint64_t elements = SumsElements(params.shape);
  const uint64_t element_bytes = params.in.value.dtype == ACL_DOUBLE ? sizeof(double) : sizeof(float);
  if (elements > 0) plan.grad_value_sums = layout.Reserve(SaturatingMul(elements, element_bytes));
  plan.bytes = layout.TotalBytes();
  return plan;
}

aclnnStatus RunForwardCpuGeneric(const ForwardParams& params, void*) {
  if (params.in.value.dtype == ACL_DOUBLE) {
    Forward<double>(params);
  } else {
    Forward<float>(params);
  }
  return ACLNN_SUCCESS;
}

aclnnStatus RunBackwardCpuGeneric(const BackwardParams& params, void* workspace) {
  char* sums = params.workspace.grad_value_sums >= 0 ? AlignedWorkspace(workspace) + params.workspace.grad_value_sums
                                                     : nullptr;
  if (params.in.value.dtype == ACL_DOUBLE) {
    Backward<double>(params, reinterpret_cast<double*>(sums));
  } else {
    Backward<float>(params, reinterpret_cast<float*>(sums));
  }
  return ACLNN_SUCCESS;
}

}  // namespace pacl::msda
