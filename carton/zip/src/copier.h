// FileCopier: copies the stored files of an archive into their places in
// the output on several threads, ahead of libzip, which then takes each
// piece from the copier, in order, for its CRC-32 and drops its own write
// of the bytes (ZipOutput::MarkWritten).
//
// Every entry's offset is known before zip_close (ZipWriter places each one
// when it is added), so the files can be copied in any order by any number
// of threads: the read and the write of every byte run there, and the
// thread running zip_close is left with one pass over bytes already in
// memory. Without it, that thread read each file, wrote it and computed its
// CRC-32, one entry after the other: on many cores the copy of a large
// model was serial however many threads hashed it.
//
// The files are cut into pieces of kPiece bytes, in archive order; a thread
// takes the next piece when a buffer is free, reads it (pread), writes it
// at its place in the output (pwrite) and hands the buffer to the consumer,
// which gives it back once libzip has the bytes. Buffers: threads + 2, so
// memory is bounded whatever the sizes, and the pieces are taken in order:
// the consumer's next piece is always being copied or done.
//
// Each file is opened when its first piece is taken and must be the version
// seen when it was added (FileIdentity), when it is opened and after its
// last piece (no byte more, none less): otherwise the piece carries an
// kIoError naming the entry and the file.
//
// Thread-safety: Take, Give and JobStatus are called from one consumer
// thread; the copying threads are the object's own. Stop() (and the
// destructor) cancels and joins them: until then they may write into the
// output, through a descriptor of their own (so the output may be closed
// or removed first, as libzip's rollback does: the writes then go to the
// removed file).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "carton/common/bytes.h"
#include "carton/common/file_identity.h"
#include "carton/common/status.h"
#include "carton/common/unique_fd.h"

namespace carton::zip_internal {

class FileCopier {
 public:
  static constexpr std::uint64_t kPiece = std::uint64_t{1} << 20;
  // Smaller files are left to libzip's own pass.
  static constexpr std::uint64_t kMinFile = std::uint64_t{256} << 10;

  struct Job {
    std::string name;  // the entry's, for messages
    std::string path;
    FileIdentity identity;
    std::uint64_t out_offset = 0;  // where the data goes in the output
  };

  FileCopier();
  FileCopier(const FileCopier&) = delete;
  FileCopier& operator=(const FileCopier&) = delete;

  // Adds a file to copy; returns its job number. Before Start().
  std::size_t Add(Job job);
  std::size_t job_count() const { return jobs_.size(); }
  // Starts `threads` threads writing into a duplicate of `out_fd` (so the
  // output may be closed or removed before Stop(): the writes then go
  // nowhere). Errors: kIoError (no descriptor), kInternal (no thread).
  Status Start(int out_fd, const std::string& out_path, unsigned threads);
  // Cancels the pieces not taken yet and joins the threads.
  void Stop();
  ~FileCopier();

  // The bytes of job `job` from `offset` (a multiple of kPiece), once
  // copied: valid until Give(). Waits for them. Errors: the piece's.
  Result<ByteView> Take(std::size_t job, std::uint64_t offset);
  // Hands back the buffer of the piece last taken.
  void Give();
  // After the last piece of `job` was taken: OK or why the file was not the
  // version added.
  Status JobStatus(std::size_t job);

 private:
  struct JobState;
  struct Piece {
    std::size_t job = 0;
    std::uint64_t offset = 0;
    std::size_t size = 0;
    int buffer = -1;  // while copied or waiting to be taken
    bool ready = false;
    Status status;
  };

  void Run();
  // Copies piece `p` into buffer `b`; returns its status.
  Status Copy(Piece& p, std::vector<std::byte>& b);
  Result<int> OpenJob(std::size_t job);
  // Called by the thread that copied the last piece of `job`.
  Status FinishJob(std::size_t job);

  std::vector<Job> jobs_;
  std::vector<std::unique_ptr<JobState>> states_;
  std::vector<Piece> pieces_;
  std::vector<std::size_t> first_piece_;  // per job
  std::vector<std::vector<std::byte>> buffers_;
  std::vector<int> free_;
  UniqueFd out_fd_;
  std::string out_path_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::size_t next_ = 0;  // the next piece to take
  std::size_t taken_ = static_cast<std::size_t>(-1);
  bool cancel_ = false;
  std::vector<std::jthread> threads_;
};

}  // namespace carton::zip_internal
