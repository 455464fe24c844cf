// Phase 1's check of an NSA operator's actual-length array of cumulative sequence ends (host data, read in phase 1):
// shared by NsaSelectedAttention(Grad) and NsaCompressAttention, whose documents give the arrays the same form.
#ifndef PACL_OPS_NSA_SELECTED_ATTENTION_NSA_SEQUENCE_ENDS_H_
#define PACL_OPS_NSA_SELECTED_ATTENTION_NSA_SEQUENCE_ENDS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "pacl/op_glue.h"

namespace pacl::nsa_sequence_ends {

// Cumulative sequence ends (a leading 0 is an empty first sequence), non-decreasing from 0; each sequence at most
// max_length tokens when max_length >= 0 (a multiple of 1024, named in K); the last entry equal to `tokens`, T of
// `tensors`, when tokens >= 0.
inline bool CheckEnds(OpChecker& check, const std::vector<int64_t>& ends, const char* param, const char* tensors,
                      int64_t tokens, int64_t max_length) {
  const auto ll = [](int64_t v) { return static_cast<long long>(v); };
  int64_t start = 0;
  for (size_t i = 0; i < ends.size(); ++i) {
    if (!check.Check(ends[i] >= start,
                     "%s must hold non-decreasing cumulative sequence ends from 0, got %s[%zu] = %lld after %lld",
                     param, param, i, ll(ends[i]), ll(start)) ||
        !check.Check(max_length < 0 || ends[i] - start <= max_length,
                     "%s: sequence %zu has %lld tokens (%s[%zu] - %lld), more than %lldK (%lld)", param, i,
                     ll(ends[i] - start), param, i, ll(start), ll(max_length / 1024), ll(max_length))) {
      return false;
    }
    start = ends[i];
  }
  return tokens < 0 || check.Check(start == tokens, "the last entry of %s must equal T of %s (dim 0) = %lld, got %lld",
                                   param, tensors, ll(tokens), ll(start));
}

}  // namespace pacl::nsa_sequence_ends

#endif  // PACL_OPS_NSA_SELECTED_ATTENTION_NSA_SEQUENCE_ENDS_H_
