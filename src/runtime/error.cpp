// The thread-local "recent error message" (aclGetRecentErrMsg) and message formatting.
#include "pacl/error.h"

#include <cstdarg>
#include <cstdio>
#include <deque>
#include <string>
#include <utility>

#include "acl/acl.h"
#include "runtime_state.h"

namespace pacl {

namespace {

constexpr size_t kMaxPendingMessages = 32;

struct ThreadMessages {
  std::deque<std::string> pending;  // oldest first
  std::string handed_out;           // the text of the last aclGetRecentErrMsg, which the caller may still read
};

ThreadMessages& Messages() {
  thread_local ThreadMessages messages;
  return messages;
}

}  // namespace

void SetRecentErrorMessage(const std::string& message) {
  if (message.empty()) return;  // "" means "no message" to RecentErrorMessage
  ThreadMessages& messages = Messages();
  messages.pending.push_back(message);
  while (messages.pending.size() > kMaxPendingMessages) messages.pending.pop_front();
}

std::string RecentErrorMessage() {
  const ThreadMessages& messages = Messages();
  return messages.pending.empty() ? std::string() : messages.pending.back();
}

std::string VStrFormat(const char* format, va_list args) {
  va_list copy;
  va_copy(copy, args);
  const int length = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  if (length <= 0) return std::string();
  std::string text(static_cast<size_t>(length) + 1, '\0');
  std::vsnprintf(&text[0], text.size(), format, args);
  text.resize(static_cast<size_t>(length));
  return text;
}

std::string StrFormat(const char* format, ...) {
  va_list args;
  va_start(args, format);
  std::string text = VStrFormat(format, args);
  va_end(args);
  return text;
}

namespace rt {
void ClearRecentErrorMessages() { Messages().pending.clear(); }
}  // namespace rt

}  // namespace pacl

extern "C" const char* aclGetRecentErrMsg(void) {
  pacl::ThreadMessages& messages = pacl::Messages();
  if (messages.pending.empty()) {
    messages.handed_out.clear();
    return nullptr;
  }
  std::string text;
  for (auto it = messages.pending.rbegin(); it != messages.pending.rend(); ++it) {
    if (!text.empty()) text += '\n';
    text += *it;
  }
  messages.pending.clear();
  messages.handed_out = std::move(text);
  return messages.handed_out.c_str();
}
