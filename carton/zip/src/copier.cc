#include "copier.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>
#include <utility>

#include "carton/common/fd_io.h"
#include "carton/common/posix_error.h"
#include "records.h"

namespace carton::zip_internal {

struct FileCopier::JobState {
  std::mutex mu;
  UniqueFd fd;
  bool opened = false;
  Status open_status;
  std::size_t pieces = 0;  // how many
  std::size_t done = 0;    // copied so far (under mu)
  Status status;           // set by FinishJob
};

namespace {

std::string Context(const FileCopier::Job& job) {
  return "entry " + QuoteName(job.name) + ": " + job.path;
}

}  // namespace

std::size_t FileCopier::Add(Job job) {
  const std::size_t index = jobs_.size();
  first_piece_.push_back(pieces_.size());
  auto state = std::make_unique<JobState>();
  for (std::uint64_t off = 0; off < job.identity.size; off += kPiece) {
    Piece p;
    p.job = index;
    p.offset = off;
    p.size = static_cast<std::size_t>(std::min(kPiece, job.identity.size - off));
    pieces_.push_back(std::move(p));
    ++state->pieces;
  }
  jobs_.push_back(std::move(job));
  states_.push_back(std::move(state));
  return index;
}

Status FileCopier::Start(int out_fd, const std::string& out_path, unsigned threads) {
  out_fd_.Reset(::fcntl(out_fd, F_DUPFD_CLOEXEC, 0));
  if (!out_fd_.valid()) return ErrnoIoError(errno, out_path + ": cannot duplicate descriptor");
  out_path_ = out_path;
  threads = std::max(1u, static_cast<unsigned>(std::min<std::size_t>(threads, pieces_.size())));
  buffers_.resize(threads + 2);
  for (int b = 0; b < static_cast<int>(buffers_.size()); ++b) free_.push_back(b);
  try {
    for (unsigned t = 0; t < threads; ++t) threads_.emplace_back([this] { Run(); });
  } catch (const std::system_error& e) {
    if (threads_.empty())
      return Internal(std::string("cannot start a copying thread: ") + e.what());
  }
  return Status::Ok();
}

void FileCopier::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    cancel_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
  out_fd_.Reset();
}

FileCopier::FileCopier() = default;
FileCopier::~FileCopier() { Stop(); }

void FileCopier::Run() {
  for (;;) {
    std::size_t index;
    int b;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return cancel_ || next_ == pieces_.size() || !free_.empty(); });
      if (cancel_ || next_ == pieces_.size()) return;
      index = next_++;
      b = free_.back();
      free_.pop_back();
    }
    Piece& p = pieces_[index];
    std::vector<std::byte>& buffer = buffers_[static_cast<std::size_t>(b)];
    if (buffer.size() < kPiece) buffer.resize(kPiece);
    Status s = Copy(p, buffer);
    {
      std::lock_guard<std::mutex> lock(mu_);
      p.buffer = b;
      p.status = std::move(s);
      p.ready = true;
    }
    cv_.notify_all();
  }
}

Result<int> FileCopier::OpenJob(std::size_t job) {
  JobState& st = *states_[job];
  std::lock_guard<std::mutex> lock(st.mu);
  if (!st.opened) {
    st.opened = true;
    const Job& j = jobs_[job];
    // O_NONBLOCK: a pipe put in the file's place must not hold the copy
    // (it fails the identity check instead); reads of files ignore it.
    st.fd.Reset(::open(j.path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
    if (!st.fd.valid()) {
      st.open_status = ErrnoIoError(errno, Context(j) + ": cannot open");
    } else if (auto id = IdentityOfFd(st.fd.get()); !id.ok() || *id != j.identity) {
      st.open_status = IoError(Context(j) + " changed between adding it and writing the archive");
    }
  }
  if (!st.open_status.ok()) return st.open_status;
  return st.fd.get();
}

Status FileCopier::Copy(Piece& p, std::vector<std::byte>& buffer) {
  const Job& job = jobs_[p.job];
  Status s = [&]() -> Status {
    CARTON_ASSIGN_OR_RETURN(int fd, OpenJob(p.job));
    const MutableByteView piece(buffer.data(), p.size);
    CARTON_ASSIGN_OR_RETURN(std::size_t got, PreadFull(fd, p.offset, piece, Context(job)));
    if (got != p.size) return IoError(Context(job) + " shrank before it was written");
    return PwriteFull(out_fd_.get(), job.out_offset + p.offset, piece,
                      "entry " + QuoteName(job.name) + ": " + out_path_);
  }();
  JobState& st = *states_[p.job];
  bool last;
  {
    std::lock_guard<std::mutex> lock(st.mu);
    last = ++st.done == st.pieces;
  }
  if (last) {
    Status end = FinishJob(p.job);
    if (s.ok()) s = std::move(end);
  }
  return s;
}

Status FileCopier::FinishJob(std::size_t job) {
  JobState& st = *states_[job];
  std::lock_guard<std::mutex> lock(st.mu);
  const Job& j = jobs_[job];
  if (st.fd.valid()) {
    std::byte extra;
    auto got = PreadFull(st.fd.get(), j.identity.size, {&extra, 1}, Context(j));
    auto id = IdentityOfFd(st.fd.get());
    if (!got.ok()) {
      st.status = got.status();
    } else if (*got != 0) {
      st.status = IoError(Context(j) + " grew before it was written");
    } else if (!id.ok() || *id != j.identity) {
      st.status = IoError(Context(j) + " changed while the archive was written");
    }
    st.fd.Reset();
  }
  return st.status;
}

Result<ByteView> FileCopier::Take(std::size_t job, std::uint64_t offset) {
  const std::size_t index = first_piece_[job] + static_cast<std::size_t>(offset / kPiece);
  std::unique_lock<std::mutex> lock(mu_);
  if (index >= pieces_.size() || pieces_[index].job != job) {
    return Internal("entry " + QuoteName(jobs_[job].name) + ": no piece at offset " +
                    std::to_string(offset));
  }
  Piece& p = pieces_[index];
  cv_.wait(lock, [&] { return p.ready || cancel_; });
  if (!p.ready) return Internal("entry " + QuoteName(jobs_[job].name) + ": copying was stopped");
  taken_ = index;
  if (!p.status.ok()) return p.status;
  if (p.buffer < 0) {
    return Internal("entry " + QuoteName(jobs_[job].name) + ": piece at offset " +
                    std::to_string(offset) + " taken twice");
  }
  return ByteView(buffers_[static_cast<std::size_t>(p.buffer)].data(), p.size);
}

void FileCopier::Give() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (taken_ >= pieces_.size()) return;
    Piece& p = pieces_[taken_];
    if (p.buffer >= 0) free_.push_back(std::exchange(p.buffer, -1));
    taken_ = static_cast<std::size_t>(-1);
  }
  cv_.notify_all();
}

Status FileCopier::JobStatus(std::size_t job) {
  JobState& st = *states_[job];
  std::lock_guard<std::mutex> lock(st.mu);
  return st.status;
}

}  // namespace carton::zip_internal
