// System options (aclSysParamOpt): process-wide values and per-context values; pacl::rt::DeterministicEnabled.
#include <mutex>

#include "acl/acl.h"
#include "pacl/runtime.h"
#include "runtime_state.h"

using pacl::rt::Context;
using pacl::rt::Fail;
using pacl::rt::FailNoContext;
using pacl::rt::OptionSet;
using pacl::rt::RuntimeState;
using pacl::rt::State;

namespace {

aclError CheckOption(const char* function, aclSysParamOpt opt) {
  const int value = static_cast<int>(opt);
  if (value >= 0 && value < pacl::rt::kOptionCount) return ACL_SUCCESS;
  return Fail(ACL_ERROR_INVALID_PARAM, function,
              "opt (%d) is not an aclSysParamOpt: expected 0 (ACL_OPT_DETERMINISTIC), 1 (ACL_OPT_ENABLE_DEBUG_KERNEL) "
              "or 2 (ACL_OPT_STRONG_CONSISTENCY)",
              value);
}

aclError CheckOptionValue(const char* function, aclSysParamOpt opt, int64_t value) {
  if (aclError error = CheckOption(function, opt)) return error;
  if (opt == ACL_OPT_DETERMINISTIC && value != 0 && value != 1) {
    return Fail(ACL_ERROR_INVALID_PARAM, function,
                "value (%lld) for ACL_OPT_DETERMINISTIC must be 0 (off) or 1 (on)", static_cast<long long>(value));
  }
  return ACL_SUCCESS;
}

void SetOption(OptionSet& options, aclSysParamOpt opt, int64_t value) {
  options.value[opt] = value;
  options.is_set[opt] = true;
}

int64_t GetOption(const OptionSet& options, aclSysParamOpt opt) { return options.is_set[opt] ? options.value[opt] : 0; }

}  // namespace

extern "C" {

aclError aclrtSetSysParamOpt(aclSysParamOpt opt, int64_t value) {
  if (aclError error = CheckOptionValue("aclrtSetSysParamOpt", opt, value)) return error;
  RuntimeState& state = State();
  std::lock_guard<std::mutex> lock(state.mutex);
  SetOption(state.process_options, opt, value);
  return ACL_SUCCESS;
}

aclError aclrtGetSysParamOpt(aclSysParamOpt opt, int64_t* value) {
  if (value == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtGetSysParamOpt", "value must not be null");
  if (aclError error = CheckOption("aclrtGetSysParamOpt", opt)) return error;
  RuntimeState& state = State();
  std::lock_guard<std::mutex> lock(state.mutex);
  *value = GetOption(state.process_options, opt);
  return ACL_SUCCESS;
}

aclError aclrtCtxSetSysParamOpt(aclSysParamOpt opt, int64_t value) {
  if (aclError error = CheckOptionValue("aclrtCtxSetSysParamOpt", opt, value)) return error;
  RuntimeState& state = State();
  std::lock_guard<std::mutex> lock(state.mutex);
  Context* context = pacl::rt::CurrentContextLocked(state);
  if (context == nullptr) return FailNoContext("aclrtCtxSetSysParamOpt");
  SetOption(context->options, opt, value);
  return ACL_SUCCESS;
}

aclError aclrtCtxGetSysParamOpt(aclSysParamOpt opt, int64_t* value) {
  if (value == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtCtxGetSysParamOpt", "value must not be null");
  if (aclError error = CheckOption("aclrtCtxGetSysParamOpt", opt)) return error;
  RuntimeState& state = State();
  std::lock_guard<std::mutex> lock(state.mutex);
  Context* context = pacl::rt::CurrentContextLocked(state);
  if (context == nullptr) return FailNoContext("aclrtCtxGetSysParamOpt");
  *value = GetOption(context->options, opt);
  return ACL_SUCCESS;
}

}  // extern "C"

namespace pacl::rt {

bool DeterministicEnabled() {
  RuntimeState& state = State();
  std::lock_guard<std::mutex> lock(state.mutex);
  const Context* context = CurrentContextLocked(state);
  if (context != nullptr && context->options.is_set[ACL_OPT_DETERMINISTIC]) {
    return context->options.value[ACL_OPT_DETERMINISTIC] != 0;
  }
  if (state.process_options.is_set[ACL_OPT_DETERMINISTIC]) {
    return state.process_options.value[ACL_OPT_DETERMINISTIC] != 0;
  }
  return true;  // deterministic unless the application turned it off
}

}  // namespace pacl::rt
