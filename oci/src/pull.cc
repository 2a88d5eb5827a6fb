// carton pull, and reading a carton's metadata from a registry (oci/
// FORMAT.md "Cartons as OCI artifacts"). Everything the registry sends is untrusted:
// the manifest and config are checked against each other and against
// MANIFEST before any file is written, and every blob against its digest.
// A ModelPack another tool wrote goes to import.h instead.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <random>
#include <set>
#include <thread>

#include "artifact.h"
#include "carton/carton/links.h"
#include "carton/carton/writer_options.h"
#include "carton/common/atomic_file.h"
#include "carton/common/parallel.h"
#include "carton/common/posix_error.h"
#include "carton/common/temporaries.h"
#include "carton/common/unique_fd.h"
#include "carton/links/cache_layout.h"
#include "carton/links/links.h"
#include "carton/manifest/manifest.h"
#include "carton/oci/artifact.h"
#include "check.h"
#include "import.h"
#include "layout.h"
#include "referrers.h"
#include "session.h"

namespace carton::oci {
namespace {

namespace fs = std::filesystem;
using internal::OciSession;

// A carton in a registry, its manifest and config checked.
struct Pulled {
  OciSession session;
  manifest::Digest manifest_digest{};
  std::string manifest_bytes;  // the OCI manifest as the registry sent it
  internal::OciArtifact artifact;
  internal::OciLayout layout;
  manifest::Manifest manifest;
  std::string config_path;  // the config blob in the cache
  // The blobs this pull uses, held from before each is looked up until the
  // pull ends, so that gc does not remove them meanwhile.
  links::BlobsInUse uses;
};

// The bytes of a small blob (the config, MANIFEST, a text file), fetched
// into the cache, held in use (Pulled::uses) from before the lookup.
Result<std::string> ReadSmallBlob(Pulled& p, const manifest::Digest& digest, std::uint64_t size,
                                  std::uint64_t limit, const std::string& what) {
  const OciSession& s = p.session;
  CARTON_RETURN_IF_ERROR(p.uses.Hold(digest));
  if (size > limit) {
    return Corrupt(s.where + ": " + what + ": " + std::to_string(size) +
                   " bytes, more than the limit of " + std::to_string(limit));
  }
  CARTON_ASSIGN_OR_RETURN(std::string path,
                          s.client->FetchBlob(s.cache, s.ref.repository, digest, size));
  CARTON_ASSIGN_OR_RETURN(auto bytes, ReadFile(path));
  return std::string(AsChars(bytes));
}

// Resolves the reference to its OCI manifest, checked to be a carton's.
Result<Pulled> OpenArtifact(const Location& reference, const Environment& environment,
                            const OciOptions& options) {
  Pulled p;
  CARTON_ASSIGN_OR_RETURN(p.session, internal::OpenOciSession(reference, environment, options));
  const OciSession& s = p.session;
  auto m = s.client->GetManifest(s.ref.repository, s.ref.Target());
  if (!m.ok()) return m.status().WithContext(s.where);
  p.manifest_digest = m->digest;
  p.manifest_bytes = m->bytes;
  CARTON_ASSIGN_OR_RETURN(p.artifact, internal::ParseOciArtifact(m->bytes, s.where));
  p.uses = s.cache.Uses();
  return p;
}

// Fetches the config and MANIFEST and checks them against each other and
// the layers.
Status LoadLayout(Pulled& p, const CartonLimits& limits = {}) {
  const OciSession& s = p.session;
  const internal::OciArtifact& a = p.artifact;
  CARTON_ASSIGN_OR_RETURN(
      std::string config,
      ReadSmallBlob(p, a.config_digest, a.config_size, internal::kMaxOciLayoutSize, "config blob"));
  auto layout = internal::ParseOciLayout(config);
  if (!layout.ok()) return layout.status().WithContext(s.where);
  p.layout = std::move(layout).value();
  const internal::OciLayer* ml = a.Find("MANIFEST");
  CARTON_ASSIGN_OR_RETURN(std::string text, ReadSmallBlob(p, ml->digest, ml->size,
                                                          limits.max_manifest_size, "MANIFEST"));
  auto m = manifest::Manifest::Parse(AsBytes(text));
  if (!m.ok()) return m.status().WithContext(s.where);
  p.manifest = std::move(m).value();
  return internal::CheckOciLayout(a, p.layout, p.manifest, s.where);
}

// Stored blobs at least this large are written into the carton while
// they download (BlobStream) rather than after.
constexpr std::uint64_t kStreamMinSize = std::uint64_t{8} << 20;

// A blob downloading into the blob cache while the carton is written: its
// zip entry reads what has reached the download's file, and the blob's
// last bytes only once the download is verified, so a carton never holds a
// blob whose sha256 did not match. A retry starts a new file: the bytes
// already read came from a failed attempt, so the stream fails then
// (restarted()) and the pull writes the carton again from the cached blob.
class BlobStream {
 public:
  explicit BlobStream(std::uint64_t size) : size_(size) {}

  // FetchOptions::on_written, on the download's thread.
  void OnWritten(int fd, std::uint64_t length) {
    struct stat st {};
    const bool stat_ok = ::fstat(fd, &st) == 0;
    std::lock_guard lock(mu_);
    if (restarted_) return;
    if (!file_.valid()) {
      file_.Reset(::fcntl(fd, F_DUPFD_CLOEXEC, 0));
      if (!file_.valid() || !stat_ok) {
        restarted_ = true;  // cannot follow this download; rebuild after it
      } else {
        dev_ = st.st_dev;
        ino_ = st.st_ino;
      }
    } else if (!stat_ok || st.st_dev != dev_ || st.st_ino != ino_ || length < available_) {
      restarted_ = true;
    }
    available_ = length;
    cv_.notify_all();
  }

  // The download's result: the blob's path in the cache, or its error.
  void Done(const Result<std::string>& path) {
    std::lock_guard lock(mu_);
    done_ = true;
    status_ = path.status();
    if (path.ok() && !file_.valid()) {
      // Another process had it cached meanwhile: read the cached file.
      file_.Reset(::open(path->c_str(), O_RDONLY | O_CLOEXEC));
      if (!file_.valid()) status_ = ErrnoIoError(errno, *path + ": cannot open");
    }
    cv_.notify_all();
  }

  bool restarted() const {
    std::lock_guard lock(mu_);
    return restarted_;
  }

  // ZipWriter::StreamProducer: the bytes from `offset` on that have
  // reached the file, up to 256 KiB, in a buffer of this object's.
  Result<ByteView> Read(std::uint64_t offset) {
    std::size_t n = 0;
    {
      std::unique_lock lock(mu_);
      // Bytes short of the end may be read as they arrive; the end waits
      // for the verdict.
      auto readable = [&]() -> std::uint64_t {
        if (done_) return status_.ok() ? size_ : 0;
        return available_ < size_ ? available_ : size_ - 1;
      };
      cv_.wait(lock, [&] { return restarted_ || done_ || readable() > offset; });
      if (restarted_) return IoError("the download restarted");
      if (!status_.ok()) return status_;
      n = static_cast<std::size_t>(std::min<std::uint64_t>(kReadSize, readable() - offset));
    }
    buffer_.resize(kReadSize);
    for (std::size_t got = 0; got < n;) {
      const ssize_t r =
          ::pread(file_.get(), buffer_.data() + got, n - got, static_cast<off_t>(offset + got));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return ErrnoIoError(errno, "reading the download");
      if (r == 0) return IoError("the download's file is shorter than it said");
      got += static_cast<std::size_t>(r);
    }
    return ByteView(buffer_.data(), n);
  }

 private:
  static constexpr std::size_t kReadSize = std::size_t{256} << 10;

  const std::uint64_t size_;
  std::vector<std::byte> buffer_;  // the last Read's bytes (the reader's only)
  mutable std::mutex mu_;
  std::condition_variable cv_;
  UniqueFd file_;  // set once, before readers use it; then never changed
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  std::uint64_t available_ = 0;
  bool restarted_ = false;
  bool done_ = false;
  Status status_;
};

// Bytes a BlobPipe holds for its zip entry at most: the download waits
// (and TCP with it) while the archive writer is behind.
constexpr std::size_t kPipeCapacity = std::size_t{16} << 20;

// A blob downloading straight into its zip entry, never into a file of its
// own (the one-write path: on this kind of machine a second copy in the
// page cache costs as much as the download). The download hands over its
// buffers as it fills them (no copy); the zip entry reads them in order,
// all but the blob's last byte as it arrives and that byte only once the
// download is verified, so a carton never holds a blob whose size or sha256
// did not match. The bytes cannot be read twice: a download that starts
// over after the entry took some fails (restarted()), and the pull writes
// the carton again from the blob cache.
class BlobPipe final : public net::StreamSink {
 public:
  explicit BlobPipe(std::uint64_t size) : size_(size) {}

  // net::StreamSink, on the download's thread.
  Status Restart() override {
    std::lock_guard lock(mu_);
    if (abandoned_) return IoError("the carton is no longer being written");
    if (consumed_ > 0) {
      restarted_ = true;
      cv_.notify_all();
      return IoError("the download started over after " + std::to_string(consumed_) +
                     " bytes were written into the carton");
    }
    queue_.clear();
    queued_ = 0;
    received_ = 0;
    return Status::Ok();
  }
  Status Append(ByteView bytes) override {
    std::shared_ptr<std::byte[]> copy;
    try {
      copy = std::make_shared_for_overwrite<std::byte[]>(bytes.size());
    } catch (const std::bad_alloc&) {
      return Internal("out of memory for the download's bytes");
    }
    std::memcpy(copy.get(), bytes.data(), bytes.size());
    return AppendShared(std::shared_ptr<const std::byte>(copy, copy.get()),
                        ByteView(copy.get(), bytes.size()));
  }
  Status AppendShared(std::shared_ptr<const std::byte> owner, ByteView bytes) override {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return abandoned_ || queued_ < kPipeCapacity; });
    if (abandoned_) return IoError("the carton is no longer being written");
    try {
      queue_.push_back(Piece{std::move(owner), bytes});
    } catch (const std::bad_alloc&) {
      return Internal("out of memory for the download's bytes");
    }
    queued_ += bytes.size();
    received_ += bytes.size();
    cv_.notify_all();
    return Status::Ok();
  }

  // The download's verdict.
  void Done(Status status) {
    std::lock_guard lock(mu_);
    done_ = true;
    status_ = std::move(status);
    if (status_.ok() && received_ != size_) {
      status_ = Internal("the download delivered " + std::to_string(received_) + " of " +
                         std::to_string(size_) + " bytes");
    }
    failed_on_its_own_ = !status_.ok() && !abandoned_;
    cv_.notify_all();
  }

  // The carton is not written on: a waiting download gives up, and the
  // buffers held here go back to it.
  void Abandon() {
    std::lock_guard lock(mu_);
    abandoned_ = true;
    queue_.clear();
    lent_.reset();
    queued_ = 0;
    front_used_ = 0;
    cv_.notify_all();
  }

  bool restarted() const {
    std::lock_guard lock(mu_);
    return restarted_;
  }

  // The download failed before the pull gave up on it.
  bool failed_on_its_own() const {
    std::lock_guard lock(mu_);
    return failed_on_its_own_;
  }

  // ZipWriter::StreamProducer: the next bytes of the download's front
  // buffer, where they are, in order from where the last read ended. The
  // download gets that buffer back at the next call.
  Result<ByteView> Read(std::uint64_t offset) {
    std::unique_lock lock(mu_);
    lent_.reset();  // read by now
    if (offset != consumed_) {
      return Internal("the blob's bytes were asked for at " + std::to_string(offset) + ", after " +
                      std::to_string(consumed_));
    }
    // Every byte short of the last may be read as it arrives; the last
    // waits for the verdict.
    auto readable = [&]() -> std::uint64_t {
      if (done_ && status_.ok()) return size_;
      return std::min(received_, size_ - 1);
    };
    cv_.wait(lock, [&] { return abandoned_ || restarted_ || done_ || readable() > consumed_; });
    if (abandoned_) return Internal("the blob's bytes were asked for after the pull gave up");
    if (restarted_) return IoError("the download restarted");
    if (!status_.ok()) return status_;
    if (readable() <= consumed_) return IoError("the download ended early");
    Piece& front = queue_.front();
    const auto n = static_cast<std::size_t>(
        std::min<std::uint64_t>(front.bytes.size() - front_used_, readable() - consumed_));
    const ByteView lent = front.bytes.subspan(front_used_, n);
    lent_ = front.owner;
    front_used_ += n;
    consumed_ += n;
    if (front_used_ == front.bytes.size()) {
      queued_ -= front.bytes.size();
      queue_.pop_front();
      front_used_ = 0;
      // Only room in the queue can let the download go on.
      cv_.notify_all();
    }
    return lent;
  }

 private:
  struct Piece {
    std::shared_ptr<const std::byte> owner;  // keeps `bytes` alive
    ByteView bytes;
  };

  const std::uint64_t size_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Piece> queue_;  // received, not yet read
  // The buffer of the last Read's bytes, kept until the reader is done.
  std::shared_ptr<const std::byte> lent_;
  std::size_t front_used_ = 0;  // read of queue_.front()
  std::size_t queued_ = 0;      // bytes in queue_
  std::uint64_t received_ = 0;
  std::uint64_t consumed_ = 0;
  bool restarted_ = false;
  bool abandoned_ = false;
  bool done_ = false;
  bool failed_on_its_own_ = false;
  Status status_;
};

using Streams = std::map<manifest::Digest, std::shared_ptr<BlobStream>>;
using Pipes = std::map<manifest::Digest, std::shared_ptr<BlobPipe>>;
using BlobPaths = std::map<manifest::Digest, std::string>;

// The blobs written into the carton while they download, and what their
// downloads gave.
struct Streamed {
  Streams streams;
  Pipes pipes;
  std::set<manifest::Digest> digests;
  // The streamed blobs in the order of their entries: downloads start in
  // this order, so the one the archive writer waits for is always running
  // (a pipe holds only kPipeCapacity bytes).
  std::vector<const internal::OciLayer*> layers;
  std::vector<Status> status;      // per layer, its download's result
  std::vector<std::string> paths;  // streams: the cached blob

  // Whether a download started over after the carton took some of its
  // bytes (or a stream could not follow its download).
  bool restarted() const {
    bool restarted = false;
    for (const auto& [digest, pipe] : pipes) restarted = restarted || pipe->restarted();
    for (const auto& [digest, stream] : streams) restarted = restarted || stream->restarted();
    return restarted;
  }
};

// The blob cache path of every distinct blob of the artifact but those in
// `streams`, fetched with `jobs` transfers at once.
Result<BlobPaths> FetchAll(const Pulled& p, unsigned jobs,
                           const std::set<manifest::Digest>& was_cached,
                           const std::set<manifest::Digest>& skip, OciPullReport* report) {
  const OciSession& s = p.session;
  std::map<manifest::Digest, const internal::OciLayer*> unique;
  for (const internal::OciLayer& l : p.artifact.layers) {
    if (skip.count(l.digest) == 0) unique.emplace(l.digest, &l);
  }
  std::vector<const internal::OciLayer*> todo;
  for (const auto& [digest, layer] : unique) todo.push_back(layer);
  std::vector<Result<std::string>> paths(todo.size(), Status(Internal("not fetched")));
  ParallelFor(todo.size(), jobs, [&](std::size_t i) {
    const internal::OciLayer& l = *todo[i];
    paths[i] = s.client->FetchBlob(s.cache, s.ref.repository, l.digest, l.size);
  });
  BlobPaths out;
  for (std::size_t i = 0; i < todo.size(); ++i) {
    if (!paths[i].ok()) return paths[i].status().WithContext(s.where + ": " + todo[i]->title);
    out[todo[i]->digest] = *paths[i];
    const bool cached = was_cached.count(todo[i]->digest) != 0;
    report->blobs.push_back(
        {todo[i]->title, todo[i]->digest, todo[i]->size, cached ? "cached" : "downloaded"});
    if (!cached) report->bytes_downloaded += todo[i]->size;
  }
  return out;
}

std::string TempName(const std::string& out_path) {
  const fs::path p(out_path);
  std::random_device rd;
  return (p.parent_path() / ("." + p.filename().string() + ".pull-" + std::to_string(rd())))
      .string();
}

// Holds every blob of the artifact in use (Pulled::uses), before the pull
// looks any of them up: gc leaves them all until the carton is written.
Status HoldBlobs(Pulled& p) {
  CARTON_RETURN_IF_ERROR(p.uses.Hold(p.artifact.config_digest).WithContext(p.session.where));
  for (const internal::OciLayer& l : p.artifact.layers) {
    CARTON_RETURN_IF_ERROR(p.uses.Hold(l.digest).WithContext(p.session.where));
  }
  return Status::Ok();
}

// What the cache holds of the artifact's blobs before this pull, for the
// report.
std::set<manifest::Digest> CachedBlobs(const Pulled& p) {
  const OciSession& s = p.session;
  std::set<manifest::Digest> was_cached;
  if (s.cache.Get(p.artifact.config_digest).ok()) {
    was_cached.insert(p.artifact.config_digest);
  }
  for (const internal::OciLayer& l : p.artifact.layers) {
    if (s.cache.Get(l.digest).ok()) was_cached.insert(l.digest);
  }
  return was_cached;
}

// The report's start: the artifact, and its config blob.
OciPullReport StartReport(const Pulled& p, const std::set<manifest::Digest>& was_cached) {
  OciPullReport report;
  report.reference = p.session.where;
  report.manifest_digest = p.manifest_digest;
  report.manifest_hash = p.artifact.manifest_hash;
  const bool config_cached = was_cached.count(p.artifact.config_digest) != 0;
  report.blobs.push_back({"(config)", p.artifact.config_digest, p.artifact.config_size,
                          config_cached ? "cached" : "downloaded"});
  if (!config_cached) report.bytes_downloaded += p.artifact.config_size;
  return report;
}

// Chooses the blobs written into the carton while they download.
Streamed PlanStreams(const Pulled& p, const std::set<manifest::Digest>& was_cached,
                     bool cache_large_blobs) {
  // Large stored blobs not cached yet are written into the carton as they
  // download: straight from the download (pipes), or, to keep them in the
  // blob cache too, from the download's file there (streams). A blob that
  // more than one entry needs goes through the cache. Every other blob is
  // fetched first.
  std::map<manifest::Digest, int> uses;
  for (const auto& e : p.layout.entries) {
    if (e.kind == internal::OciEntryKind::kDirectory) continue;
    ++uses[p.artifact.Find(e.kind == internal::OciEntryKind::kSymlink ? e.target : e.name)->digest];
  }
  Streamed out;
  for (const auto& e : p.layout.entries) {
    if (e.kind != internal::OciEntryKind::kFile || e.method != Compression::kStored) continue;
    const internal::OciLayer* layer = p.artifact.Find(e.name);
    if (layer->size < kStreamMinSize || was_cached.count(layer->digest) != 0 ||
        out.digests.count(layer->digest) != 0) {
      continue;
    }
    if (cache_large_blobs) {
      out.streams.emplace(layer->digest, std::make_shared<BlobStream>(layer->size));
    } else if (uses[layer->digest] == 1) {
      out.pipes.emplace(layer->digest, std::make_shared<BlobPipe>(layer->size));
    } else {
      continue;
    }
    out.digests.insert(layer->digest);
    out.layers.push_back(layer);
  }
  out.status.assign(out.layers.size(), Internal("not fetched"));
  out.paths.resize(out.layers.size());
  return out;
}

// Downloads the streamed blobs, `jobs` at once: a pipe's straight into its
// entry, a stream's into the blob cache. Records each one's result.
void DownloadStreamed(const OciSession& s, unsigned jobs, Streamed* streamed) {
  ParallelFor(streamed->layers.size(), jobs, [&](std::size_t i) {
    const internal::OciLayer& layer = *streamed->layers[i];
    if (auto pipe = streamed->pipes.find(layer.digest); pipe != streamed->pipes.end()) {
      streamed->status[i] =
          s.client->FetchBlobToStream(s.ref.repository, layer.digest, layer.size, *pipe->second);
      pipe->second->Done(streamed->status[i]);
      return;
    }
    BlobStream* stream = streamed->streams.at(layer.digest).get();
    auto path = s.client->FetchBlob(
        s.cache, s.ref.repository, layer.digest, layer.size,
        [stream](int fd, std::uint64_t length) { stream->OnWritten(fd, length); });
    stream->Done(path);
    streamed->status[i] = path.status();
    if (path.ok()) streamed->paths[i] = *path;
  });
}

// The rebuild: the recorded entries, in order, with the recorded
// settings, each file's bytes from its blob, or from its download.
class CartonRebuild {
 public:
  CartonRebuild(const Pulled& p, const Streamed& streamed, const BlobPaths& blobs, unsigned threads,
                const std::string& temp, const std::string& out_path)
      : p_(p),
        streamed_(streamed),
        blobs_(blobs),
        threads_(threads),
        temp_(temp),
        out_path_(out_path) {}

  // Writes the carton at `temp`; with `stream`, the streamed blobs from
  // their downloads, else every blob from `blobs`.
  Status Write(bool stream) {
    ZipWriterOptions zip_options = CartonWriterOptions(threads_, p_.layout.alignment);
    if (!p_.layout.zstd_multithreaded) zip_options.zstd_workers = 0;
    zip_options.zstd_frames = p_.layout.zstd_frames;
    CARTON_ASSIGN_OR_RETURN(ZipWriter zip, ZipWriter::Create(temp_, zip_options));
    differs_.clear();
    for (const auto& e : p_.layout.entries) {
      if (e.kind == internal::OciEntryKind::kDirectory) {
        CARTON_RETURN_IF_ERROR(zip.AddDirectory(e.name));
        continue;
      }
      Result<ZipAddResult> added = AddFile(zip, e, stream);
      if (!added.ok()) return added.status().WithContext(Where());
      if (differs_.empty() && added->compressed_size != e.compressed_size) {
        differs_ = e.name + " came out " + std::to_string(added->compressed_size) +
                   " bytes long, the pushed carton had " + std::to_string(e.compressed_size);
      }
    }
    if (Status st = zip.Finish(); !st.ok()) {
      return st.WithContext(Where());
    }
    return Status::Ok();
  }

  // The first entry that came out unlike the pushed one, or empty.
  const std::string& differs() const { return differs_; }

 private:
  std::string Where() const { return p_.session.where + ": rebuilding " + out_path_; }

  // Adds the file or symlink entry `e` with its blob's bytes.
  Result<ZipAddResult> AddFile(ZipWriter& zip, const internal::OciZipEntry& e, bool stream) const {
    const std::string source = e.kind == internal::OciEntryKind::kSymlink ? e.target : e.name;
    const internal::OciLayer* layer = p_.artifact.Find(source);
    auto in_pipes = streamed_.pipes.find(layer->digest);
    auto in_streams = streamed_.streams.find(layer->digest);
    const bool stored_file =
        e.kind == internal::OciEntryKind::kFile && e.method == Compression::kStored;
    if (stream && stored_file && in_pipes != streamed_.pipes.end()) {
      return zip.AddStream(e.name, layer->size, [b = in_pipes->second.get()](std::uint64_t offset) {
        return b->Read(offset);
      });
    }
    if (stream && stored_file && in_streams != streamed_.streams.end()) {
      return zip.AddStream(
          e.name, layer->size,
          [b = in_streams->second.get()](std::uint64_t offset) { return b->Read(offset); });
    }
    const std::string& blob = blobs_.at(layer->digest);
    return e.method == Compression::kStored ? zip.AddFileUnread(e.name, blob)
                                            : zip.AddFile(e.name, blob, e.method, e.level);
  }

  const Pulled& p_;
  const Streamed& streamed_;
  const BlobPaths& blobs_;
  const unsigned threads_;
  const std::string& temp_;
  const std::string& out_path_;
  std::string differs_;
};

// After the downloads: the first that failed on its own; else the
// streamed blobs go into the report, and the streams' cached blobs into
// `blobs`.
Status TakeDownloads(const OciSession& s, const Streamed& streamed, bool restarted,
                     BlobPaths* blobs, OciPullReport* report) {
  for (std::size_t i = 0; i < streamed.layers.size(); ++i) {
    const internal::OciLayer& layer = *streamed.layers[i];
    auto pipe = streamed.pipes.find(layer.digest);
    // A pipe's download fails when the pull gives up on it; the pull's
    // reason is the rebuild's failure (`built`) then.
    const bool own_failure = pipe == streamed.pipes.end() || pipe->second->failed_on_its_own();
    if (!streamed.status[i].ok() && own_failure && !(pipe != streamed.pipes.end() && restarted)) {
      return streamed.status[i].WithContext(s.where + ": " + layer.title);
    }
    if (pipe == streamed.pipes.end()) (*blobs)[layer.digest] = streamed.paths[i];
    report->blobs.push_back({layer.title, layer.digest, layer.size, "downloaded"});
    report->bytes_downloaded += layer.size;
  }
  return Status::Ok();
}

// Fetches the blobs that went through pipes into the blob cache.
Status FetchPiped(const OciSession& s, const Streamed& streamed, BlobPaths* blobs) {
  for (const internal::OciLayer* layer : streamed.layers) {
    if (streamed.pipes.count(layer->digest) == 0) continue;
    auto path = s.client->FetchBlob(s.cache, s.ref.repository, layer->digest, layer->size);
    if (!path.ok()) return path.status().WithContext(s.where + ": " + layer->title);
    (*blobs)[layer->digest] = *path;
  }
  return Status::Ok();
}

// Records in `report` whether the carton rebuilt at `temp` is the pushed
// one byte for byte, and if not why. Errors: reading the rebuilt carton.
Status CompareWithPushed(const Pulled& p, const std::string& temp, const std::string& differs,
                         OciPullReport* report) {
  if (!p.layout.layout_sha256) {
    report->not_identical_reason =
        "the pushed carton was not written by carton's zip writer (the same manifest hash is "
        "the guarantee)";
    return Status::Ok();
  }
  if (!differs.empty()) {
    report->not_identical_reason = differs;
    return Status::Ok();
  }
  auto rebuilt = ZipReader::Open(temp);
  if (!rebuilt.ok()) return rebuilt.status().WithContext(p.session.where + ": the rebuilt carton");
  CARTON_ASSIGN_OR_RETURN(const manifest::Digest hash, internal::LayoutSha256(*rebuilt));
  std::error_code ec;
  const auto size = fs::file_size(temp, ec);
  if (hash == *p.layout.layout_sha256 && !ec && size == p.layout.size) {
    report->byte_identical = true;
  } else {
    report->not_identical_reason =
        "the rebuilt carton's layout differs from the pushed one (another zip or zstd "
        "version?)";
  }
  return Status::Ok();
}

// A ModelPack carton did not write, imported into a carton in the cache's
// downloads directory for `read` (info, hash), which is removed after.
template <typename T>
Result<T> ReadImported(Pulled& p, const OciOptions& options,
                       const std::function<Result<T>(CartonSource&)>& read,
                       const CartonLimits& limits = {}) {
  const OciSession& s = p.session;
  const links::CacheLayout layout(s.cache_root);
  std::error_code ec;
  fs::create_directories(layout.DownloadsDir(), ec);
  if (ec) return IoError(layout.DownloadsDir() + ": cannot create: " + ec.message());
  // Named by this process, so that gc removes it (and the import's
  // directory beside it) once this process is gone.
  const std::string path = layout.ProcessDownloadPath(links::kPulledCopyPrefix);
  const TemporaryPath registration(path, TemporaryKind::kFile);
  auto imported = internal::ImportModelPack(s, p.manifest_bytes, path, options, &p.uses);
  Result<T> out = imported.status();
  if (imported.ok()) {
    SourceOptions source_options;
    source_options.limits = limits;
    out = read(*OpenFileCopy(Location(s.where), path, s.env, source_options));
  }
  fs::remove(path, ec);
  return out;
}

}  // namespace

Result<OciResolved> ResolveOciCarton(const Location& reference, const Environment& environment,
                                     const OciOptions& options) {
  CARTON_ASSIGN_OR_RETURN(Pulled p, OpenArtifact(reference, environment, options));
  return OciResolved{p.session.where, p.manifest_digest, p.artifact.manifest_hash,
                     p.artifact.foreign};
}

Result<manifest::Digest> OciManifestHash(const Location& reference, const Environment& environment,
                                         const OciOptions& options) {
  CARTON_ASSIGN_OR_RETURN(Pulled p, OpenArtifact(reference, environment, options));
  if (p.artifact.foreign) {
    return ReadImported<manifest::Digest>(
        p, options, [&](CartonSource& imported) { return imported.ManifestHash(); });
  }
  const internal::OciLayer* ml = p.artifact.Find("MANIFEST");
  CARTON_ASSIGN_OR_RETURN(std::string text, ReadSmallBlob(p, ml->digest, ml->size,
                                                          carton::kMaxManifestSize, "MANIFEST"));
  auto m = manifest::Manifest::Parse(AsBytes(text));
  if (!m.ok()) return m.status().WithContext(p.session.where);
  return p.artifact.manifest_hash;
}

Result<OciManifestText> ReadOciManifest(const Location& reference, const Environment& environment,
                                        const OciOptions& options) {
  CARTON_ASSIGN_OR_RETURN(Pulled p, OpenArtifact(reference, environment, options));
  OciManifestText out;
  out.manifest_digest = p.manifest_digest;
  if (p.artifact.foreign) {
    out.imported = true;
    return out;
  }
  const internal::OciLayer* ml = p.artifact.Find(std::string(manifest::kManifestPath));
  CARTON_ASSIGN_OR_RETURN(out.text, ReadSmallBlob(p, ml->digest, ml->size, carton::kMaxManifestSize,
                                                  std::string(manifest::kManifestPath)));
  auto m = manifest::Manifest::Parse(AsBytes(out.text));
  if (!m.ok()) return m.status().WithContext(p.session.where);
  return out;
}

Result<CartonInfo> ReadOciInfo(const Location& reference, const Environment& environment,
                               const OciOptions& options, const CartonLimits& limits) {
  CARTON_ASSIGN_OR_RETURN(Pulled p, OpenArtifact(reference, environment, options));
  if (p.artifact.foreign) {
    return ReadImported<CartonInfo>(
        p, options, [&](CartonSource& imported) { return imported.Info(); }, limits);
  }
  CARTON_RETURN_IF_ERROR(LoadLayout(p, limits));
  const OciSession& s = p.session;
  auto text_of = [&](const std::string& path, std::uint64_t limit) -> Result<std::string> {
    const internal::OciLayer* l = p.artifact.Find(path);
    if (l == nullptr) return NotFound(s.where + ": " + path + ": missing");
    return ReadSmallBlob(p, l->digest, l->size, limit, path);
  };
  CartonInfo info;
  info.manifest_hash = p.artifact.manifest_hash;
  info.has_links = p.artifact.Find("LINKS") != nullptr;
  if (info.has_links) {
    CARTON_ASSIGN_OR_RETURN(std::string text, text_of("LINKS", limits.links.max_size));
    auto parsed = links::ParseLinks(text, limits.links);
    if (!parsed.ok()) return parsed.status().WithContext(s.where);
  }
  auto config_text = text_of("carton.toml", limits.config.max_size);
  if (!config_text.ok()) {
    if (config_text.status().code() == StatusCode::kNotFound) {
      return Corrupt(s.where + ": carton.toml: missing");
    }
    return config_text.status();
  }
  auto config = ParseConfig(*config_text, "carton.toml", limits.config);
  if (!config.ok()) return config.status().WithContext(s.where);
  info.config = std::move(config).value();
  if (p.manifest.Find("tensor_data/index.toml") != nullptr) {
    CARTON_ASSIGN_OR_RETURN(std::string text,
                            text_of("tensor_data/index.toml", limits.tensor_data.max_index_size));
    auto index = ParseIndex(text, limits.tensor_data);
    if (!index.ok()) return index.status().WithContext(s.where);
    info.tensor_index = std::move(index).value();
  }
  for (const auto& me : p.manifest.entries()) {
    CartonFileInfo f;
    f.path = me.path;
    f.size = p.artifact.Find(me.path)->size;
    const internal::OciZipEntry* e = nullptr;
    for (const auto& z : p.layout.entries) {
      if (z.name == me.path) e = &z;
    }
    if (e == nullptr) {
      f.linked = true;
      f.method = "linked";
    } else {
      f.method = std::string(CompressionName(e->method));
      f.compressed_size = e->compressed_size;
    }
    info.files.push_back(std::move(f));
  }
  return info;
}

namespace {

// The rebuilt carton `temp` renamed into place (removed on failure), and
// its signature beside it when asked for.
Status Publish(Pulled& p, const std::string& temp, const std::string& out_path,
               const OciOptions& options, OciPullReport* report) {
  std::error_code ec;
  fs::rename(temp, out_path, ec);
  if (ec) {
    fs::remove(temp, ec);
    return IoError(out_path + ": cannot rename the rebuilt carton into place: " + ec.message());
  }
  if (options.fetch_signature) {
    CARTON_ASSIGN_OR_RETURN(
        report->signature_path,
        internal::PlaceSignature(p.session, p.manifest_digest, p.manifest, out_path));
  }
  return Status::Ok();
}

}  // namespace

Result<OciPullReport> PullCarton(const Location& reference, const std::string& out_path,
                                 const Environment& environment, const OciOptions& options) {
  CARTON_RETURN_IF_ERROR(CheckOutputPath(out_path, "the .carton"));
  CARTON_ASSIGN_OR_RETURN(Pulled p, OpenArtifact(reference, environment, options));
  const OciSession& s = p.session;
  if (p.artifact.foreign) {
    auto report = internal::ImportModelPack(s, p.manifest_bytes, out_path, options, &p.uses);
    if (report.ok()) report->manifest_digest = p.manifest_digest;
    return report;
  }
  CARTON_RETURN_IF_ERROR(HoldBlobs(p));
  const std::set<manifest::Digest> was_cached = CachedBlobs(p);
  CARTON_RETURN_IF_ERROR(LoadLayout(p));
  OciPullReport report = StartReport(p, was_cached);
  Streamed streamed = PlanStreams(p, was_cached, options.cache_large_blobs);
  CARTON_ASSIGN_OR_RETURN(BlobPaths blobs,
                          FetchAll(p, s.env.jobs, was_cached, streamed.digests, &report));
  std::thread downloads([&] { DownloadStreamed(s, s.env.jobs, &streamed); });

  const std::string temp = TempName(out_path);
  // Between Finish() and the rename the rebuilt carton is a plain file: an
  // interrupt removes it too.
  const TemporaryPath registration(temp, TemporaryKind::kFile);
  CartonRebuild rebuild(p, streamed, blobs, s.env.threads, temp, out_path);
  Status built = rebuild.Write(/*stream=*/true);
  if (!built.ok()) {
    for (auto& [digest, pipe] : streamed.pipes) pipe->Abandon();
  }
  downloads.join();
  auto cleanup = [&] {
    std::error_code ec;
    fs::remove(temp, ec);
  };
  const bool restarted = streamed.restarted();
  if (Status st = TakeDownloads(s, streamed, restarted, &blobs, &report); !st.ok()) {
    cleanup();
    return st;
  }
  if (!built.ok()) {
    if (!restarted) return built;
    // A download started over after some of its bytes went into the
    // carton: write the carton again from verified blobs. What went
    // through pipes is only in the abandoned carton, so those blobs are
    // fetched into the blob cache now.
    CARTON_RETURN_IF_ERROR(FetchPiped(s, streamed, &blobs));
    CARTON_RETURN_IF_ERROR(rebuild.Write(/*stream=*/false));
  }
  if (Status st = CompareWithPushed(p, temp, rebuild.differs(), &report); !st.ok()) {
    cleanup();
    return st;
  }
  CARTON_RETURN_IF_ERROR(Publish(p, temp, out_path, options, &report));
  return report;
}

}  // namespace carton::oci
