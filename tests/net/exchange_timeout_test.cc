// The exchange deadline's setting: FetchOptions::exchange_timeout, else
// $CARTON_HTTP_TIMEOUT, else 120 s (net/FORMAT.md "Small exchanges").
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <optional>
#include <string>

#include "carton/net/fetch.h"
#include "carton/net/http_client.h"

namespace carton::net {
namespace {

// Sets (or, with nullopt, unsets) an environment variable for the life of
// the object.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::optional<std::string>& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      ::setenv(name, value->c_str(), 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST_CASE("exchange timeout: the option, else CARTON_HTTP_TIMEOUT, else 120 s",
          "[net][timeout][deadline]") {
  FetchOptions o;
  {
    ScopedEnv unset("CARTON_HTTP_TIMEOUT", std::nullopt);
    CHECK(*ResolveExchangeTimeout(o) == std::chrono::seconds(120));
    ScopedEnv empty("CARTON_HTTP_TIMEOUT", "");
    CHECK(*ResolveExchangeTimeout(o) == kDefaultExchangeTimeout);
  }
  ScopedEnv set("CARTON_HTTP_TIMEOUT", "7");
  CHECK(*ResolveExchangeTimeout(o) == std::chrono::seconds(7));
  o.exchange_timeout = std::chrono::seconds(3);
  CHECK(*ResolveExchangeTimeout(o) == std::chrono::seconds(3));
  o.exchange_timeout = std::chrono::seconds(0);
  CHECK(ResolveExchangeTimeout(o).status().message() == "exchange_timeout must be positive");
  // An HttpClient takes it when it is created.
  o.exchange_timeout.reset();
  o.access = HttpAccess{};
  auto client = HttpClient::Create(o);
  REQUIRE(client.ok());
  CHECK((*client)->exchange_timeout() == std::chrono::seconds(7));
}

TEST_CASE("exchange timeout: CARTON_HTTP_TIMEOUT must be whole seconds from 1 to 1000000",
          "[net][timeout][deadline]") {
  FetchOptions o;
  o.access = HttpAccess{};
  for (const char* bad : {"0", "-1", "1.5", "2s", " 2", "1000001", "99999999999999999999"}) {
    INFO(bad);
    ScopedEnv set("CARTON_HTTP_TIMEOUT", bad);
    auto t = ResolveExchangeTimeout(o);
    REQUIRE_FALSE(t.ok());
    CHECK(t.status().code() == StatusCode::kInvalidArgument);
    CHECK(t.status().message() == std::string("CARTON_HTTP_TIMEOUT: \"") + bad +
                                      "\" is not a whole number of seconds from 1 to 1000000");
    CHECK(HttpClient::Create(o).status().code() == StatusCode::kInvalidArgument);
  }
  ScopedEnv most("CARTON_HTTP_TIMEOUT", "1000000");
  CHECK(*ResolveExchangeTimeout(o) == std::chrono::seconds(1'000'000));
}

}  // namespace
}  // namespace carton::net
