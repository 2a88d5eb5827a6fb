// Private key files (sign/FORMAT.md "Keys"): the mode check, passphrases
// (the environment or the terminal), reading and writing. Nothing here
// prints a key or a passphrase.
#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "carton/common/atomic_file.h"
#include "carton/common/fd_io.h"
#include "carton/common/posix_error.h"
#include "carton/common/unique_fd.h"
#include "key_impl.h"

namespace carton::sign {
namespace {

constexpr int kMaxPassphrase = 1024;

// What the PEM reader's callback needs, and what it saw.
struct PassphraseCall {
  const PassphraseFn* ask;
  const std::string* path;
  bool asked = false;
  Status error;
};

int PassphraseCallback(char* buf, int size, int /*rwflag*/, void* u) {
  auto* call = static_cast<PassphraseCall*>(u);
  call->asked = true;
  if (!*call->ask) {
    call->error =
        InvalidArgument(*call->path + ": the key is encrypted, and no passphrase was given");
    return -1;
  }
  Result<std::string> pass = (*call->ask)(*call->path);
  if (!pass.ok()) {
    call->error = pass.status();
    return -1;
  }
  if (pass->size() > static_cast<std::size_t>(size)) {
    call->error = InvalidArgument(*call->path + ": the passphrase is too long");
    return -1;
  }
  std::memcpy(buf, pass->data(), pass->size());
  OPENSSL_cleanse(pass->data(), pass->size());
  return static_cast<int>(pass->size());
}

// Reads one line from the terminal `fd` with echo off.
Result<std::string> ReadHidden(int fd, const std::string& prompt) {
  termios old{};
  const bool tty = tcgetattr(fd, &old) == 0;
  if (tty) {
    termios quiet = old;
    quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO);
    tcsetattr(fd, TCSAFLUSH, &quiet);
  }
  (void)!write(fd, prompt.data(), prompt.size());
  std::string line;
  char c = 0;
  while (line.size() < kMaxPassphrase && read(fd, &c, 1) == 1 && c != '\n') line += c;
  if (tty) tcsetattr(fd, TCSAFLUSH, &old);
  (void)!write(fd, "\n", 1);
  return line;
}

}  // namespace

PassphraseFn DefaultPassphrase() {
  return [](const std::string& path) -> Result<std::string> {
    if (const char* env = std::getenv("CARTON_KEY_PASSPHRASE")) return std::string(env);
    UniqueFd tty(open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC));
    if (!tty.valid()) {
      return InvalidArgument(path +
                             ": the key is encrypted: set CARTON_KEY_PASSPHRASE, or run "
                             "on a terminal to be asked");
    }
    return ReadHidden(tty.get(), "Passphrase for " + path + ": ");
  };
}

Status CheckPrivateKeyFileMode(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return ErrnoStatus(errno, path);
  if (!S_ISREG(st.st_mode)) return InvalidArgument(path + ": not a regular file");
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return InvalidArgument(path + ": permissions " + mode +
                           " are too open: a private key must be readable by its owner only "
                           "(chmod 600 " +
                           path + ")");
  }
  return Status::Ok();
}

Result<PrivateKey> PrivateKey::FromPem(std::string_view pem, const std::string& source,
                                       const PassphraseFn& passphrase) {
  internal::BioPtr in = internal::MemoryBio(AsBytes(pem));
  PassphraseCall call{&passphrase, &source, false, Status::Ok()};
  internal::PkeyPtr key(PEM_read_bio_PrivateKey(in.get(), nullptr, PassphraseCallback, &call));
  if (!key) {
    ERR_clear_error();
    if (!call.error.ok()) return call.error;
    if (call.asked) return InvalidArgument(source + ": wrong passphrase");
    return Corrupt(source + ": not a PEM private key (\"BEGIN PRIVATE KEY\")");
  }
  return internal::MakePrivateKey(std::move(key), source);
}

Result<PrivateKey> PrivateKey::ReadFile(const std::string& path, const PassphraseFn& passphrase) {
  CARTON_RETURN_IF_ERROR(CheckPrivateKeyFileMode(path));
  CARTON_ASSIGN_OR_RETURN(auto bytes, carton::ReadFile(path));
  Result<PrivateKey> key = FromPem(AsChars(bytes), path, passphrase);
  OPENSSL_cleanse(bytes.data(), bytes.size());
  return key;
}

Status WritePrivateKeyFile(const std::string& path, std::string_view pem) {
  const std::string temp = path + ".tmp-" + std::to_string(getpid());
  UniqueFd fd(open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd.valid()) return ErrnoIoError(errno, temp);
  Status s = fchmod(fd.get(), 0600) == 0 ? PwriteFull(fd.get(), 0, AsBytes(pem), temp)
                                         : ErrnoIoError(errno, temp);
  if (s.ok() && fsync(fd.get()) != 0) s = ErrnoIoError(errno, temp);
  fd.Reset();
  // link(2) never replaces: an existing key stays as it is.
  if (s.ok() && link(temp.c_str(), path.c_str()) != 0) {
    s = errno == EEXIST ? InvalidArgument(path + ": exists; not replaced")
                        : ErrnoIoError(errno, path);
  }
  unlink(temp.c_str());
  return s;
}

}  // namespace carton::sign
