#include "wire.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <utility>

#include "carton/common/posix_error.h"
#include "carton/safetensors/writer.h"

namespace carton::runner::internal {
namespace {

using Json = nlohmann::json;

// Metadata keys (PROTOCOL.md "Tensors").
constexpr std::string_view kOrderKey = "carton.order";
constexpr std::string_view kStringKeyPrefix = "carton.string:";

std::vector<std::byte> EncodeStrings(const std::vector<std::string>& strings) {
  std::size_t total = 0;
  for (const auto& s : strings) total += 8 + s.size();
  std::vector<std::byte> out(total);
  std::size_t pos = 0;
  for (const auto& s : strings) {
    StoreLE64(out.data() + pos, s.size());
    std::memcpy(out.data() + pos + 8, s.data(), s.size());
    pos += 8 + s.size();
  }
  return out;
}

// Sources and metadata for the writer; `scratch` owns encoded strings.
Result<std::vector<safetensors::TensorSource>> Sources(
    const std::vector<Tensor>& tensors, safetensors::Metadata* metadata,
    std::vector<std::vector<std::byte>>* scratch) {
  std::vector<safetensors::TensorSource> out;
  Json order = Json::array();
  scratch->reserve(tensors.size());
  for (const auto& t : tensors) {
    CARTON_RETURN_IF_ERROR(t.Validate());
    order.push_back(t.name);
    if (t.dtype == DataType::kString) {
      scratch->push_back(EncodeStrings(t.strings));
      (*metadata)[std::string(kStringKeyPrefix) + t.name] = Json(t.shape).dump();
      out.push_back(
          {t.name, safetensors::Dtype::kU8, {scratch->back().size()}, scratch->back(), {}});
    } else {
      out.push_back({t.name, *ToSafetensorsDtype(t.dtype), t.shape, t.data, {}});
    }
  }
  (*metadata)[std::string(kOrderKey)] = order.dump();
  return out;
}

Result<std::vector<std::string>> DecodeStrings(ByteView data, std::uint64_t numel,
                                               std::string_view name) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos < data.size()) {
    if (data.size() - pos < 8) break;
    std::uint64_t n = LoadLE64(data.data() + pos);
    pos += 8;
    if (n > data.size() - pos) break;
    out.emplace_back(reinterpret_cast<const char*>(data.data() + pos), n);
    pos += n;
    if (out.size() > numel) break;
  }
  if (pos != data.size() || out.size() != numel) {
    return Corrupt("tensor \"" + std::string(name) + "\": string data does not hold " +
                   std::to_string(numel) + " length-prefixed strings");
  }
  return out;
}

}  // namespace

Result<Tensor> DecodeTensor(const safetensors::File& file, std::string_view name, std::string as,
                            std::shared_ptr<const void> owner) {
  CARTON_ASSIGN_OR_RETURN(safetensors::TensorView v, file.Get(name));
  auto it = file.metadata().find(std::string(kStringKeyPrefix) + std::string(name));
  if (it != file.metadata().end()) {
    std::vector<std::uint64_t> shape;
    try {
      Json j = Json::parse(it->second);
      for (const auto& d : j) {
        if (!d.is_number_unsigned()) throw std::invalid_argument("dimension");
        shape.push_back(d.get<std::uint64_t>());
      }
    } catch (const std::exception&) {
      return Corrupt("tensor \"" + std::string(name) + "\": bad string shape " + it->second);
    }
    auto numel = safetensors::CheckedNumel(shape);
    if (!numel || *numel > v.data.size() / 8 + 1) {
      return Corrupt("tensor \"" + std::string(name) + "\": string shape too large");
    }
    CARTON_ASSIGN_OR_RETURN(auto strings, DecodeStrings(v.data, *numel, name));
    return Tensor::Strings(std::move(as), std::move(shape), std::move(strings));
  }
  auto dtype = FromSafetensorsDtype(v.dtype);
  if (!dtype) {
    return Unsupported("tensor \"" + std::string(name) + "\": dtype " +
                       std::string(safetensors::DtypeName(v.dtype)) + " has no carton type");
  }
  return Tensor::View(std::move(as), *dtype, {v.shape.begin(), v.shape.end()}, v.data,
                      std::move(owner));
}

Result<std::vector<Tensor>> DecodeTensors(const safetensors::File& file,
                                          std::shared_ptr<const void> owner) {
  std::vector<std::string> names;
  auto it = file.metadata().find(std::string(kOrderKey));
  if (it != file.metadata().end()) {
    try {
      for (const auto& n : Json::parse(it->second)) names.push_back(n.get<std::string>());
    } catch (const std::exception&) {
      return Corrupt("bad " + std::string(kOrderKey) + " metadata");
    }
    if (names.size() != file.size()) {
      return Corrupt(std::string(kOrderKey) + " lists " + std::to_string(names.size()) +
                     " tensors, the file has " + std::to_string(file.size()));
    }
  } else {
    for (const auto& t : file.tensors()) names.emplace_back(t.name);
    std::sort(names.begin(), names.end());
  }
  std::vector<Tensor> out;
  for (const auto& n : names) {
    CARTON_ASSIGN_OR_RETURN(Tensor t, DecodeTensor(file, n, n, owner));
    out.push_back(std::move(t));
  }
  return out;
}

Status WriteTensorsFile(const std::string& path, const std::vector<Tensor>& tensors) {
  safetensors::Metadata metadata;
  std::vector<std::vector<std::byte>> scratch;
  CARTON_ASSIGN_OR_RETURN(auto sources, Sources(tensors, &metadata, &scratch));
  return safetensors::WriteFile(path, sources, metadata);
}

Arena::Arena(Arena&& o) noexcept
    : name_(o.name_),
      fd_(std::move(o.fd_)),
      data_(std::exchange(o.data_, nullptr)),
      capacity_(std::exchange(o.capacity_, 0)) {}
Arena& Arena::operator=(Arena&& o) noexcept {
  if (this != &o) {
    if (data_ != nullptr) ::munmap(data_, capacity_);
    name_ = o.name_;
    fd_ = std::move(o.fd_);
    data_ = std::exchange(o.data_, nullptr);
    capacity_ = std::exchange(o.capacity_, 0);
  }
  return *this;
}
Arena::~Arena() {
  if (data_ != nullptr) ::munmap(data_, capacity_);
}

Status Arena::Reserve(std::size_t n, bool* replaced) {
  *replaced = false;
  if (fd_.valid() && n <= capacity_) return Status::Ok();
  std::size_t cap = 1 << 20;
  while (cap < n) cap *= 2;
  UniqueFd fd(::memfd_create(name_, MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd.valid()) return ErrnoIoError(errno, "memfd_create");
  if (::ftruncate(fd.get(), static_cast<off_t>(cap)) != 0) {
    return ErrnoIoError(errno, "memfd: cannot size");
  }
  // Readers map it without fear of SIGBUS: it can grow but never shrink.
  if (::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_SEAL) != 0) {
    return ErrnoIoError(errno, "memfd: cannot seal");
  }
  void* p = ::mmap(nullptr, cap, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (p == MAP_FAILED) return ErrnoIoError(errno, "memfd: cannot map");
  if (data_ != nullptr) ::munmap(data_, capacity_);
  data_ = static_cast<std::byte*>(p);
  capacity_ = cap;
  fd_ = std::move(fd);
  *replaced = true;
  return Status::Ok();
}

Result<std::size_t> Arena::Write(const std::vector<Tensor>& tensors, bool* replaced) {
  safetensors::Metadata metadata;
  std::vector<std::vector<std::byte>> scratch;
  CARTON_ASSIGN_OR_RETURN(auto sources, Sources(tensors, &metadata, &scratch));
  CARTON_ASSIGN_OR_RETURN(auto plan, safetensors::PlanHeader(sources, metadata));
  std::uint64_t total = plan.header.size() + plan.data_size;
  CARTON_RETURN_IF_ERROR(Reserve(total, replaced));
  std::memcpy(data_, plan.header.data(), plan.header.size());
  std::size_t pos = plan.header.size();
  for (std::size_t i : plan.order) {
    const auto& b = sources[i].bytes;
    if (!b.empty()) std::memcpy(data_ + pos, b.data(), b.size());
    pos += b.size();
  }
  return static_cast<std::size_t>(total);
}

Result<std::shared_ptr<const ArenaMapping>> ArenaMapping::Map(UniqueFd fd, bool writable) {
  int seals = ::fcntl(fd.get(), F_GET_SEALS);
  if (seals < 0 || (seals & F_SEAL_SHRINK) == 0) {
    return Corrupt("tensor arena is not a memfd sealed against shrinking");
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return ErrnoIoError(errno, "memfd");
  const auto size = static_cast<std::size_t>(st.st_size);
  if (size == 0) return Corrupt("tensor arena is empty");
  void* p =
      ::mmap(nullptr, size, writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd.get(), 0);
  if (p == MAP_FAILED) return ErrnoIoError(errno, "memfd: cannot map");
  std::shared_ptr<ArenaMapping> m(new ArenaMapping());
  m->data_ = static_cast<std::byte*>(p);
  m->size_ = size;
  return std::shared_ptr<const ArenaMapping>(std::move(m));
}

ArenaMapping::~ArenaMapping() {
  if (data_ != nullptr) ::munmap(data_, size_);
}

Result<std::vector<Tensor>> ArenaMapping::Read(std::size_t size,
                                               std::shared_ptr<const void> owner) const {
  if (size > size_) {
    return Corrupt("message of " + std::to_string(size) + " bytes past the arena's " +
                   std::to_string(size_));
  }
  auto file = safetensors::File::FromBuffer(ByteView(data_, size));
  if (!file.ok()) return file.status().WithContext("tensor arena");
  return DecodeTensors(*file, std::move(owner));
}

Status ArenaReader::Adopt(UniqueFd fd) {
  CARTON_ASSIGN_OR_RETURN(mapping_, ArenaMapping::Map(std::move(fd), /*writable=*/false));
  return Status::Ok();
}

Result<std::vector<Tensor>> ArenaReader::Read(std::size_t size) const {
  if (mapping_ == nullptr) return Corrupt("no tensor arena was sent");
  return mapping_->Read(size, mapping_);
}

Result<OutputArenas::Written> OutputArenas::Write(const std::vector<Tensor>& tensors,
                                                  const std::vector<int>& busy) {
  Written w;
  std::size_t i = 0;
  while (i < arenas_.size() &&
         std::find(busy.begin(), busy.end(), static_cast<int>(i)) != busy.end()) {
    ++i;
  }
  bool replaced = false;
  if (i == arenas_.size() && arenas_.size() >= kMaxOutputArenas) {
    CARTON_ASSIGN_OR_RETURN(w.size, w.one_off.Write(tensors, &replaced));
    w.fd = w.one_off.fd();
    return w;
  }
  if (i == arenas_.size()) arenas_.emplace_back("carton-outputs");
  CARTON_ASSIGN_OR_RETURN(w.size, arenas_[i].Write(tensors, &replaced));
  w.arena = static_cast<int>(i);
  w.fd = replaced ? arenas_[i].fd() : -1;
  return w;
}

Status SendMessage(int sock, std::string_view text, int fd) {
  if (text.size() > kMaxMessage) return Internal("message too long");
  struct iovec iov = {const_cast<char*>(text.data()), text.size()};
  struct msghdr msg = {};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(struct cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  if (fd >= 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    struct cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
  }
  for (;;) {
    if (::sendmsg(sock, &msg, MSG_NOSIGNAL) >= 0) return Status::Ok();
    if (errno == EINTR) continue;
    return ErrnoIoError(errno, "cannot send to the runner socket");
  }
}

Result<Message> ReceiveMessage(int sock, int timeout_ms) {
  struct pollfd pfd = {sock, POLLIN, 0};
  for (;;) {
    int r = ::poll(&pfd, 1, timeout_ms);
    if (r > 0) break;
    if (r == 0) return Internal("no answer within " + std::to_string(timeout_ms / 1000.0) + " s");
    if (errno != EINTR) return ErrnoIoError(errno, "poll");
  }
  Message m;
  m.text.resize(kMaxMessage);
  struct iovec iov = {m.text.data(), m.text.size()};
  struct msghdr msg = {};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(struct cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)] = {};
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ssize_t n;
  do {
    n = ::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    if (errno == ECONNRESET) return NotFound("closed");
    return ErrnoIoError(errno, "cannot read the runner socket");
  }
  for (struct cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      if (!m.fd.valid())
        m.fd.Reset(fd);
      else
        ::close(fd);
    }
  }
  if (n == 0) return NotFound("closed");
  if (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) return Corrupt("message too long");
  m.text.resize(static_cast<std::size_t>(n));
  return m;
}

}  // namespace carton::runner::internal

namespace carton::runner::internal {

std::string ErrorReply(const Status& status) {
  const ModelException* exception = status.model_exception();
  std::string error = status.message();
  std::string exception_message = exception != nullptr ? exception->message : "";
  for (;;) {
    nlohmann::json j = {
        {"ok", false}, {"code", std::string(StatusCodeName(status.code()))}, {"error", error}};
    if (exception != nullptr) {
      j["exception_type"] = exception->type;
      j["exception_message"] = exception_message;
    }
    // A model's message may hold any bytes: what is not UTF-8 is replaced.
    std::string text = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (text.size() <= kMaxMessage || (error.size() < 64 && exception_message.size() < 64)) {
      return text;
    }
    // A message must fit one packet: keep the start of long texts.
    for (std::string* s : {&error, &exception_message}) {
      if (s->size() >= 64) *s = s->substr(0, s->size() / 2) + " [...]";
    }
  }
}

Status StatusOfReply(std::string_view text) {
  try {
    auto j = nlohmann::json::parse(text);
    if (j.at("ok").get<bool>()) return Status::Ok();
    std::string code = j.at("code").get<std::string>();
    std::string error = j.at("error").get<std::string>();
    if (code == StatusCodeName(StatusCode::kModelError)) {
      ModelException e;
      e.type = j.value("exception_type", std::string());
      e.message = j.value("exception_message", std::string());
      return ModelError(std::move(error), std::move(e));
    }
    for (StatusCode c :
         {StatusCode::kInvalidArgument, StatusCode::kNotFound, StatusCode::kCorrupt,
          StatusCode::kUnsupported, StatusCode::kIoError, StatusCode::kNetworkError}) {
      if (StatusCodeName(c) == code) return Status(c, error);
    }
    return Internal(error);
  } catch (const std::exception&) {
    return Internal("the runner's reply is not valid protocol");
  }
}

}  // namespace carton::runner::internal
