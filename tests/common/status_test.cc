#include "carton/common/status.h"

#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <csignal>
#include <string>

#include "carton/common/bytes.h"
#include "carton/common/posix_error.h"

using namespace carton;

TEST_CASE("common: status carries code, message and context", "[common]") {
  Status s = Corrupt("bad byte", 7);
  CHECK_FALSE(s.ok());
  CHECK(s.code() == StatusCode::kCorrupt);
  CHECK(s.detail() == 7);
  Status c = s.WithContext("model.safetensors");
  CHECK(c.message() == "model.safetensors: bad byte");
  CHECK(c.detail() == 7);
  CHECK(c.ToString() == "corrupt: model.safetensors: bad byte");
  CHECK(Status::Ok().WithContext("x").ok());
}

TEST_CASE("common: a context the message already names is not added again", "[common]") {
  Status s = Corrupt("f.carton: entry \"model/t.txt\": crc-32 mismatch");
  CHECK(s.WithContext("f.carton").message() == s.message());
  CHECK(s.WithContext("model/t.txt").message() == s.message());
  CHECK(Corrupt("runner r: f.carton: bad").WithContext("f.carton").message() ==
        "runner r: f.carton: bad");
  // A name that is only a prefix of a part, or a part of a name, is not it.
  CHECK(s.WithContext("f.cart").message() == "f.cart: " + s.message());
  CHECK(s.WithContext("model").message() == "model: " + s.message());
}

TEST_CASE("common: a model error keeps what the model raised through contexts", "[common]") {
  Status s = ModelError("the model raised ValueError: no", {"ValueError", "no"});
  CHECK(s.code() == StatusCode::kModelError);
  CHECK(StatusCodeName(s.code()) == "model error");
  Status c = s.WithContext("runner r");
  REQUIRE(c.model_exception() != nullptr);
  CHECK(c.model_exception()->type == "ValueError");
  CHECK(c.model_exception()->message == "no");
  CHECK(c.message() == "runner r: the model raised ValueError: no");
  CHECK(Corrupt("x").model_exception() == nullptr);
}

static Result<int> Half(int x) {
  if (x % 2) return InvalidArgument("odd");
  return x / 2;
}
static Result<int> Quarter(int x) {
  CARTON_ASSIGN_OR_RETURN(int h, Half(x));
  return Half(h);
}

TEST_CASE("common: Result propagates errors through ASSIGN_OR_RETURN", "[common]") {
  CHECK(*Quarter(8) == 2);
  auto r = Quarter(6);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("common: Result::value() on an error aborts with the status message", "[common]") {
  // In a child process: its stderr goes to a pipe, and it must die by
  // SIGABRT before reaching _exit.
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::dup2(fds[1], 2);
    Result<int> r = NotFound("model.carton: no such file");
    const int v = r.value();
    ::_exit(v == 0 ? 3 : 4);
  }
  ::close(fds[1]);
  std::string err;
  char buf[256];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof(buf))) > 0;) err.append(buf, n);
  ::close(fds[0]);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGABRT);
  CHECK_THAT(err,
             Catch::Contains("Result::value() on an error: not found: model.carton: no such file"));
}

TEST_CASE("common: errno becomes a status with the system's text", "[common]") {
  Status missing = ErrnoStatus(ENOENT, "model.carton: cannot open");
  CHECK(missing.code() == StatusCode::kNotFound);
  CHECK(missing.message() == "model.carton: cannot open: No such file or directory");
  Status denied = ErrnoStatus(EACCES, "model.carton: cannot open");
  CHECK(denied.code() == StatusCode::kIoError);
  CHECK(denied.message() == "model.carton: cannot open: Permission denied");
  Status full = ErrnoIoError(ENOENT, "out.carton: write failed");
  CHECK(full.code() == StatusCode::kIoError);
  CHECK(full.message() == "out.carton: write failed: No such file or directory");
}

TEST_CASE("common: little-endian helpers and checked arithmetic", "[common]") {
  std::byte b[8];
  StoreLE64(b, 0x0102030405060708ull);
  CHECK(std::to_integer<int>(b[0]) == 8);
  CHECK(LoadLE64(b) == 0x0102030405060708ull);
  StoreLE32(b, 0xA1B2C3D4u);
  CHECK(LoadLE32(b) == 0xA1B2C3D4u);
  StoreLE16(b, 0xBEEF);
  CHECK(LoadLE16(b) == 0xBEEF);
  std::uint64_t out;
  CHECK_FALSE(CheckedMul(1ull << 62, 4, &out));
  CHECK(CheckedMul(1ull << 61, 4, &out));
  CHECK_FALSE(CheckedAdd(~0ull, 1, &out));
  CHECK(InBounds(8, 0, 8));
  CHECK_FALSE(InBounds(9, 0, 8));
  CHECK_FALSE(InBounds(4, ~0ull, 8));
}
