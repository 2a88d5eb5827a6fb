#include "carton/common/notice.h"

#include <cstdio>
#include <memory>
#include <mutex>
#include <utility>

namespace carton {
namespace {

void ToStderr(std::string_view text) {
  std::fprintf(stderr, "carton: %.*s\n", static_cast<int>(text.size()), text.data());
}

struct Sink {
  std::mutex mu;
  // Shared, so a notice being delivered keeps its sink while another
  // thread replaces it.
  std::shared_ptr<const NoticeFn> fn = std::make_shared<const NoticeFn>(&ToStderr);
};

Sink& TheSink() {
  static Sink* sink = new Sink;  // never destroyed: notices may come late
  return *sink;
}

}  // namespace

NoticeFn SetNoticeSink(NoticeFn sink) {
  Sink& s = TheSink();
  auto next = std::make_shared<const NoticeFn>(std::move(sink));
  std::lock_guard<std::mutex> lock(s.mu);
  NoticeFn previous = *s.fn;
  s.fn = std::move(next);
  return previous;
}

void Notice(std::string_view text) {
  Sink& s = TheSink();
  std::shared_ptr<const NoticeFn> fn;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    fn = s.fn;
  }
  if (*fn) (*fn)(text);
}

}  // namespace carton
