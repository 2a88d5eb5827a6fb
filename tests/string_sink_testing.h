// A net::StreamSink that collects a streamed download in a string, for
// the FetchToStream and registry tests; optionally it refuses to start over
// once it has bytes.
#pragma once

#include <string>

#include "carton/common/bytes.h"
#include "carton/common/status.h"
#include "carton/net/fetch.h"

namespace carton::testing {

class StringSink final : public net::StreamSink {
 public:
  explicit StringSink(bool refuse_restart = false) : refuse_restart_(refuse_restart) {}
  Status Restart() override {
    ++restarts;
    if (refuse_restart_ && !bytes.empty()) return IoError("cannot take the bytes again");
    bytes.clear();
    return Status::Ok();
  }
  Status Append(ByteView b) override {
    bytes.append(reinterpret_cast<const char*>(b.data()), b.size());
    return Status::Ok();
  }
  std::string bytes;
  int restarts = 0;

 private:
  bool refuse_restart_;
};

}  // namespace carton::testing
