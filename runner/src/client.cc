#include "carton/runner/client.h"

#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "carton/common/posix_error.h"
#include "carton/runner/runner.h"
#include "stderr_reader.h"
#include "subprocess.h"
#include "wire.h"

namespace carton::runner {
namespace {

// How much of the runner's stderr an error message quotes.
constexpr std::size_t kStderrTail = 2000;
// How long an error waits for a dead runner's last stderr bytes.
constexpr std::chrono::milliseconds kStderrDrain(1000);

// "noop" for ".../carton-runner-noop".
std::string RunnerName(const std::string& runner_path) {
  std::string name = std::filesystem::path(runner_path).filename().string();
  constexpr std::string_view kPrefix = "carton-runner-";
  if (name.starts_with(kPrefix) && name.size() > kPrefix.size()) name.erase(0, kPrefix.size());
  return name;
}

// Writes "[name] line\n" to our stderr in one write, so lines of runners
// and of this process do not mix within a line.
internal::StderrReader::Sink ForwardTo(std::string name) {
  return [prefix = "[" + std::move(name) + "] "](std::string_view line) {
    std::string out = prefix;
    out.append(line);
    out.push_back('\n');
    std::string_view left = out;
    while (!left.empty()) {
      ssize_t n = ::write(STDERR_FILENO, left.data(), left.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;
      left.remove_prefix(static_cast<std::size_t>(n));
    }
  };
}

}  // namespace

struct RunnerProcess::Impl {
  std::string path;
  RunnerProcessOptions options;
  // Declared before `child`: destroyed after the runner is reaped.
  std::unique_ptr<internal::StderrReader> stderr_reader;
  internal::Subprocess child;
  UniqueFd sock;
  internal::Arena inputs{"carton-inputs"};  // ours: requests are written here
  // The runner's output arenas, by number: each mapped once (writable, see
  // client.h) and kept while the runner keeps it.
  struct OutputArena {
    std::shared_ptr<const internal::ArenaMapping> mapping;
    // The owner of the views of the last reply read from it: the arena is
    // busy (the runner must not rewrite it) while that owner lives.
    std::weak_ptr<const void> held;
  };
  std::array<OutputArena, internal::kMaxOutputArenas> outputs;
  bool broken = false;

  // A protocol violation by the runner: the process is not used again.
  Status Broken(std::string_view what) {
    broken = true;
    return Internal("runner " + path + ": " + std::string(what));
  }

  // Turns a failed wait for the runner into an error that says what became
  // of it: exit status and the end of its stderr.
  Status Failure(std::string_view during, const Status& cause) {
    broken = true;
    std::string what;
    if (cause.code() == StatusCode::kInternal && cause.message().rfind("no answer", 0) == 0) {
      child.Kill();
      what = "did not answer " + std::string(during) + " within " +
             std::to_string(TimeoutFor(during).count() / 1000.0) + " s; killed";
    } else {
      auto status = child.Wait(std::chrono::seconds(5));
      what =
          status.ok()
              ? "exited with " + internal::DescribeWaitStatus(*status) + " " + std::string(during)
              : "closed its socket " + std::string(during) + " and " + status.status().message();
    }
    std::string tail = stderr_reader->Tail(kStderrDrain);
    return Internal("runner " + path + " " + what + (tail.empty() ? "" : "; its stderr: " + tail));
  }

  // Which output arenas the caller still holds.
  using HeldArenas = std::array<bool, internal::kMaxOutputArenas>;
  HeldArenas Held() const {
    HeldArenas held{};
    for (std::size_t i = 0; i < outputs.size(); ++i) held[i] = !outputs[i].held.expired();
    return held;
  }

  // Asks the runner to infer on the `size` bytes of inputs (sending the
  // input arena's fd when it was `replaced`) and returns its reply once
  // the reply says ok.
  Result<internal::Message> Exchange(std::size_t size, bool replaced, const HeldArenas& held) {
    // An arena is busy while a view of it lives; the runner writes this
    // reply elsewhere.
    nlohmann::json busy = nlohmann::json::array();
    for (std::size_t i = 0; i < held.size(); ++i) {
      if (held[i]) busy.push_back(i);
    }
    nlohmann::json request = {{"op", "infer"}, {"size", size}, {"busy", busy}};
    Status sent = internal::SendMessage(sock.get(), request.dump(), replaced ? inputs.fd() : -1);
    if (!sent.ok()) return Failure("while inferring", sent);
    auto reply =
        internal::ReceiveMessage(sock.get(), static_cast<int>(options.infer_timeout.count()));
    if (!reply.ok()) return Failure("while inferring", reply.status());
    Status s = internal::StatusOfReply(reply->text);
    if (!s.ok()) {
      // The runner's own error (a model's exception included) leaves it
      // ready for the next call; only kInternal means it is broken.
      if (s.code() == StatusCode::kInternal) broken = true;
      return s.WithContext("runner " + path);
    }
    return reply;
  }

  // Where a reply's outputs are: `size` bytes in output arena `arena`.
  struct ReplyPlace {
    std::size_t size = 0;
    int arena = -1;  // a one-off arena, not kept by the runner
  };
  Result<ReplyPlace> ParsePlace(const std::string& text) {
    ReplyPlace place;
    try {
      auto j = nlohmann::json::parse(text);
      place.size = j.at("size").get<std::size_t>();
      if (auto it = j.find("arena"); it != j.end()) place.arena = it->get<int>();
    } catch (const std::exception&) {
      return Broken("reply without a size, or with a bad arena number");
    }
    if (place.arena < -1 || place.arena >= static_cast<int>(outputs.size())) {
      return Broken("reply in output arena " + std::to_string(place.arena) + ", past the " +
                    std::to_string(outputs.size()) + " a runner may keep");
    }
    return place;
  }

  // The owner of the views of a reply in `arena` (sent with `fd`, or
  // invalid when the arena was sent before), which must not be one the
  // caller `held`; sets `mapping` to the arena's mapping.
  Result<std::shared_ptr<const void>> ReplyOwner(
      int arena, UniqueFd fd, const HeldArenas& held,
      std::shared_ptr<const internal::ArenaMapping>* mapping) {
    if (fd.valid()) {
      auto mapped = internal::ArenaMapping::Map(std::move(fd), /*writable=*/true);
      if (!mapped.ok()) {
        broken = true;
        return Status(mapped.status().code(), "runner " + path + ": " + mapped.status().message());
      }
      *mapping = std::move(mapped).value();
    }
    if (arena < 0) {
      if (*mapping == nullptr) return Broken("reply in a one-off arena without its fd");
      return std::shared_ptr<const void>(*mapping);
    }
    OutputArena& slot = outputs[static_cast<std::size_t>(arena)];
    if (held[static_cast<std::size_t>(arena)]) {
      return Broken("reply in output arena " + std::to_string(arena) +
                    ", which the caller still holds");
    }
    if (*mapping != nullptr) slot.mapping = *mapping;
    if (slot.mapping == nullptr) {
      return Broken("reply in output arena " + std::to_string(arena) + ", never sent");
    }
    *mapping = slot.mapping;
    // One owner per reply: the views hold it (and through it the mapping);
    // the slot watches it.
    std::shared_ptr<const void> owner =
        std::make_shared<const std::shared_ptr<const internal::ArenaMapping>>(*mapping);
    slot.held = owner;
    return owner;
  }

  std::chrono::milliseconds TimeoutFor(std::string_view during) const {
    return during == "while loading the model" ? options.load_timeout : options.infer_timeout;
  }
};

RunnerProcess::RunnerProcess(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RunnerProcess::RunnerProcess(RunnerProcess&&) noexcept = default;
RunnerProcess& RunnerProcess::operator=(RunnerProcess&&) noexcept = default;
RunnerProcess::~RunnerProcess() {
  if (impl_ && impl_->child.pid() >= 0) {
    impl_->sock.Reset();  // the runner exits on EOF
    (void)impl_->child.Wait(std::chrono::seconds(2));
  }
}

const std::string& RunnerProcess::runner_path() const { return impl_->path; }

Result<RunnerProcess> RunnerProcess::Start(const std::string& runner_path, const std::string& model,
                                           const RunnerProcessOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->path = runner_path;
  impl->options = options;
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
    return ErrnoIoError(errno, "socketpair");
  }
  impl->sock.Reset(pair[0]);
  UniqueFd theirs(pair[1]);
  auto sink = options.on_stderr_line ? internal::StderrReader::Sink(options.on_stderr_line)
                                     : ForwardTo(RunnerName(runner_path));
  CARTON_ASSIGN_OR_RETURN(impl->stderr_reader,
                          internal::StderrReader::Start(std::move(sink), kStderrTail));
  const loader::Device device = options.device ? *options.device : loader::DefaultDevice();
  std::vector<std::string> argv = {runner_path, "serve", model, "--fd", "3"};
  argv.push_back(device.requested ? "--device" : "--default-device");
  argv.push_back(device.Name());
  if (options.lenient) argv.push_back("--lenient");
  for (const auto& [k, v] : options.opts) {
    argv.push_back("--opt");
    argv.push_back(k + "=" + v);
  }
  // The runner's stdout is not part of the protocol: what it prints there
  // joins its stderr, so that it never mixes into the caller's output.
  auto child = internal::Subprocess::Spawn(argv, impl->stderr_reader->write_fd(),
                                           impl->stderr_reader->write_fd(), theirs.get(),
                                           {{"CUDA_VISIBLE_DEVICES", device.VisibleDevices()}});
  if (!child.ok()) return child.status();
  impl->child = std::move(child).value();
  theirs.Reset();
  impl->stderr_reader->CloseWriteEnd();
  auto ready =
      internal::ReceiveMessage(impl->sock.get(), static_cast<int>(options.load_timeout.count()));
  if (!ready.ok()) return impl->Failure("while loading the model", ready.status());
  Status s = internal::StatusOfReply(ready->text);
  if (!s.ok()) {
    impl->broken = true;
    // (WithContext keeps what a model raised.)
    return s.WithContext("runner " + runner_path);
  }
  int version = 0;
  try {
    version = nlohmann::json::parse(ready->text).at("protocol_version").get<int>();
  } catch (const std::exception&) {
  }
  if (version != kProtocolVersion) {
    impl->broken = true;
    return Unsupported("runner " + runner_path + " speaks serve protocol version " +
                       std::to_string(version) + "; this client speaks version " +
                       std::to_string(kProtocolVersion) + " (rebuild the runner)");
  }
  return RunnerProcess(std::move(impl));
}

Result<std::vector<Tensor>> RunnerProcess::Infer(const std::vector<Tensor>& inputs) {
  Impl& im = *impl_;
  if (im.broken) return Internal("runner " + im.path + " is no longer usable");
  bool replaced = false;
  CARTON_ASSIGN_OR_RETURN(std::size_t size, im.inputs.Write(inputs, &replaced));
  // Listed before sending: an output dropped meanwhile only frees its arena
  // for a later call.
  const Impl::HeldArenas held = im.Held();
  CARTON_ASSIGN_OR_RETURN(internal::Message reply, im.Exchange(size, replaced, held));
  CARTON_ASSIGN_OR_RETURN(Impl::ReplyPlace place, im.ParsePlace(reply.text));
  std::shared_ptr<const internal::ArenaMapping> mapping;
  CARTON_ASSIGN_OR_RETURN(std::shared_ptr<const void> owner,
                          im.ReplyOwner(place.arena, std::move(reply.fd), held, &mapping));
  auto outputs = mapping->Read(place.size, std::move(owner));
  if (!outputs.ok()) {
    return Status(outputs.status().code(),
                  "runner " + im.path + ": outputs: " + outputs.status().message());
  }
  return outputs;
}

Status RunnerProcess::Close() {
  Impl& im = *impl_;
  if (im.child.pid() < 0) return Status::Ok();
  (void)internal::SendMessage(im.sock.get(), R"({"op":"close"})", -1);
  im.sock.Reset();
  auto status = im.child.Wait(std::chrono::seconds(10));
  if (!status.ok()) return Internal("runner " + im.path + " " + status.status().message());
  if (*status != 0) {
    return Internal("runner " + im.path + " exited with " + internal::DescribeWaitStatus(*status));
  }
  return Status::Ok();
}

}  // namespace carton::runner
