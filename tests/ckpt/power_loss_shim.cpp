// LD_PRELOAD shim of the power-loss test (tests/ckpt/power_loss_test.py): records, in order, every
// file-system call a process makes under one directory, with the bytes written, so that the test
// can replay what a crash at any point would have kept.
//   OLMO_PL_ROOT=DIR  the directory watched (absolute, normalised; DIR itself and below)
//   OLMO_PL_LOG=FILE  the log, appended to (one record per call, O_APPEND, whole records)
//   OLMO_PL_DROP_SYNC=PREFIX  (the test's control) fsync/fdatasync of a watched file whose name
//                     starts with PREFIX does nothing and is not recorded: a writer without it
// Record: a 48-byte header {char kind[4]; int32 pid, fd, flags; int64 off, len; int32 n1, n2;
// int32 pad} then path1 (n1 bytes), path2 (n2 bytes), and for WRIT the len bytes written.
// Kinds: OPEN fd flags path1 | WRIT fd off len data | TRUN fd len | SYNC fd (fsync/fdatasync) |
// CLOS fd | RENM path1 -> path2 | UNLK path1 | RMDR path1 | MKDR path1 | GSYN (sync/syncfs).
// Only calls that succeeded are recorded, each right after the real call, under one mutex (the
// order in the log is the order the calls took effect). Paths are made absolute (the cwd or the
// *at call's directory fd) but not otherwise normalised. stdio's internal writes (fopen/fwrite)
// bypass the shim: the checkpoint writer uses open/write/fsync/rename directly.
// Cost: one mutex and one log write per call on a watched file; other calls pass straight on.
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

struct Header {
  char kind[4];
  int32_t pid, fd, flags;
  int64_t off, len;
  int32_t n1, n2, pad;
};
static_assert(sizeof(Header) == 48, "log header layout");

constexpr int kMaxFd = 1 << 16;
pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
bool g_tracked[kMaxFd];
bool g_drop[kMaxFd];  // OLMO_PL_DROP_SYNC matches this descriptor's file
std::string* g_root = nullptr;
std::string* g_drop_prefix = nullptr;
int g_log = -1;

template <class F>
F real(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

__attribute__((constructor)) void init() {
  const char* root = std::getenv("OLMO_PL_ROOT");
  const char* log = std::getenv("OLMO_PL_LOG");
  if (!root || !log || !*root || !*log) return;
  g_root = new std::string(root);
  if (const char* d = std::getenv("OLMO_PL_DROP_SYNC"); d && *d) g_drop_prefix = new std::string(d);
  while (g_root->size() > 1 && g_root->back() == '/') g_root->pop_back();
  g_log = int(syscall(SYS_openat, AT_FDCWD, log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
}

std::string absolute(int dirfd, const char* p) {
  if (!p) return {};
  if (p[0] == '/') return p;
  char buf[PATH_MAX];
  std::string base;
  if (dirfd == AT_FDCWD) {
    if (getcwd(buf, sizeof buf)) base = buf;
  } else {
    char link[64];
    std::snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
    const ssize_t n = readlink(link, buf, sizeof buf - 1);
    if (n > 0) base.assign(buf, size_t(n));
  }
  return base + "/" + p;
}

bool watched(const std::string& p) {
  if (!g_root || g_log < 0) return false;
  return p == *g_root || (p.size() > g_root->size() && p.compare(0, g_root->size(), *g_root) == 0 &&
                          p[g_root->size()] == '/');
}

bool tracked(int fd) { return g_log >= 0 && fd >= 0 && fd < kMaxFd && g_tracked[fd]; }

// One record, written whole (writev on an O_APPEND file); called with g_mu held.
void record(const char* kind, int fd, int flags, int64_t off, int64_t len, const std::string& p1,
            const std::string& p2 = {}, const void* data = nullptr) {
  Header h{};
  std::memcpy(h.kind, kind, 4);
  h.pid = int32_t(getpid());
  h.fd = fd;
  h.flags = flags;
  h.off = off;
  h.len = len;
  h.n1 = int32_t(p1.size());
  h.n2 = int32_t(p2.size());
  iovec v[4] = {{&h, sizeof h}, {const_cast<char*>(p1.data()), p1.size()},
                {const_cast<char*>(p2.data()), p2.size()},
                {const_cast<void*>(data), data ? size_t(len) : 0}};
  syscall(SYS_writev, g_log, v, 4);
}

// A descriptor is watched while it names a watched path; one reused for another path (after a
// close the shim did not see, e.g. closedir) is unwatched again.
int after_open(int fd, int flags, const std::string& path) {
  if (fd < 0 || fd >= kMaxFd || g_log < 0) return fd;
  const bool w = watched(path);
  pthread_mutex_lock(&g_mu);
  g_tracked[fd] = w;
  const size_t slash = path.rfind('/');
  g_drop[fd] = w && g_drop_prefix && path.compare(slash + 1, g_drop_prefix->size(), *g_drop_prefix) == 0;
  if (w) record("OPEN", fd, flags, 0, 0, path);
  pthread_mutex_unlock(&g_mu);
  return fd;
}

mode_t mode_arg(int flags, va_list ap) {
  return (flags & (O_CREAT | O_TMPFILE)) ? mode_t(va_arg(ap, int)) : 0;
}

// The path calls: run, and record when the path is watched and the call succeeded.
template <class Call>
int path_op(const char* kind, const std::string& p1, const std::string& p2, Call call) {
  if (!watched(p1) && !watched(p2)) return call();
  pthread_mutex_lock(&g_mu);
  const int rc = call();
  const int e = errno;
  if (rc == 0) record(kind, -1, 0, 0, 0, p1, p2);
  pthread_mutex_unlock(&g_mu);
  errno = e;
  return rc;
}

ssize_t write_op(int fd, int64_t at, ssize_t (*call)(int, const void*, size_t, off_t),
                 ssize_t (*plain)(int, const void*, size_t), const void* buf, size_t n) {
  if (!tracked(fd)) return at < 0 ? plain(fd, buf, n) : call(fd, buf, n, off_t(at));
  pthread_mutex_lock(&g_mu);
  const ssize_t w = at < 0 ? plain(fd, buf, n) : call(fd, buf, n, off_t(at));
  const int e = errno;
  if (w > 0) {
    const int64_t off = at >= 0 ? at : int64_t(lseek(fd, 0, SEEK_CUR)) - w;
    record("WRIT", fd, 0, off, w, {}, {}, buf);
  }
  pthread_mutex_unlock(&g_mu);
  errno = e;
  return w;
}

int fd_op(const char* kind, int fd, int (*call)(int)) {
  if (!tracked(fd)) return call(fd);
  if (g_drop[fd] && std::strcmp(kind, "SYNC") == 0) return 0;  // the control's missing fsync
  pthread_mutex_lock(&g_mu);
  const int rc = call(fd);
  const int e = errno;
  if (rc == 0 || std::strcmp(kind, "CLOS") == 0) record(kind, fd, 0, 0, 0, {});
  if (std::strcmp(kind, "CLOS") == 0) g_tracked[fd] = false;
  pthread_mutex_unlock(&g_mu);
  errno = e;
  return rc;
}

}  // namespace

extern "C" {

int open(const char* p, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  const mode_t m = mode_arg(flags, ap);
  va_end(ap);
  static auto f = real<int (*)(const char*, int, ...)>("open");
  return after_open(f(p, flags, m), flags, absolute(AT_FDCWD, p));
}
int open64(const char* p, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  const mode_t m = mode_arg(flags, ap);
  va_end(ap);
  static auto f = real<int (*)(const char*, int, ...)>("open64");
  return after_open(f(p, flags, m), flags, absolute(AT_FDCWD, p));
}
int openat(int d, const char* p, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  const mode_t m = mode_arg(flags, ap);
  va_end(ap);
  static auto f = real<int (*)(int, const char*, int, ...)>("openat");
  return after_open(f(d, p, flags, m), flags, absolute(d, p));
}
int openat64(int d, const char* p, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  const mode_t m = mode_arg(flags, ap);
  va_end(ap);
  static auto f = real<int (*)(int, const char*, int, ...)>("openat64");
  return after_open(f(d, p, flags, m), flags, absolute(d, p));
}
int __open_2(const char* p, int flags) { return open(p, flags); }
int __open64_2(const char* p, int flags) { return open64(p, flags); }
int __openat_2(int d, const char* p, int flags) { return openat(d, p, flags); }
int creat(const char* p, mode_t m) { return open(p, O_WRONLY | O_CREAT | O_TRUNC, m); }
int creat64(const char* p, mode_t m) { return open64(p, O_WRONLY | O_CREAT | O_TRUNC, m); }

ssize_t write(int fd, const void* b, size_t n) {
  static auto w = real<ssize_t (*)(int, const void*, size_t)>("write");
  return write_op(fd, -1, nullptr, w, b, n);
}
ssize_t pwrite(int fd, const void* b, size_t n, off_t at) {
  static auto w = real<ssize_t (*)(int, const void*, size_t, off_t)>("pwrite");
  return write_op(fd, at, w, nullptr, b, n);
}
ssize_t pwrite64(int fd, const void* b, size_t n, off_t at) {
  static auto w = real<ssize_t (*)(int, const void*, size_t, off_t)>("pwrite64");
  return write_op(fd, at, w, nullptr, b, n);
}
ssize_t writev(int fd, const struct iovec* v, int cnt) {
  static auto w = real<ssize_t (*)(int, const struct iovec*, int)>("writev");
  if (!tracked(fd)) return w(fd, v, cnt);
  ssize_t total = 0;  // watched files: one recorded write per buffer
  for (int i = 0; i < cnt; ++i) {
    const ssize_t r = write(fd, v[i].iov_base, v[i].iov_len);
    if (r < 0) return total ? total : r;
    total += r;
    if (size_t(r) < v[i].iov_len) break;
  }
  return total;
}
int ftruncate(int fd, off_t len) {
  static auto t = real<int (*)(int, off_t)>("ftruncate");
  if (!tracked(fd)) return t(fd, len);
  pthread_mutex_lock(&g_mu);
  const int rc = t(fd, len);
  const int e = errno;
  if (rc == 0) record("TRUN", fd, 0, 0, len, {});
  pthread_mutex_unlock(&g_mu);
  errno = e;
  return rc;
}
int ftruncate64(int fd, off_t len) { return ftruncate(fd, len); }
int fsync(int fd) {
  static auto f = real<int (*)(int)>("fsync");
  return fd_op("SYNC", fd, f);
}
int fdatasync(int fd) {
  static auto f = real<int (*)(int)>("fdatasync");
  return fd_op("SYNC", fd, f);
}
int close(int fd) {
  static auto f = real<int (*)(int)>("close");
  return fd_op("CLOS", fd, f);
}
void sync(void) {
  static auto f = real<void (*)(void)>("sync");
  f();
  if (g_log < 0) return;
  pthread_mutex_lock(&g_mu);
  record("GSYN", -1, 0, 0, 0, {});
  pthread_mutex_unlock(&g_mu);
}
int syncfs(int fd) {
  static auto f = real<int (*)(int)>("syncfs");
  const int rc = f(fd);
  if (rc == 0 && g_log >= 0) {
    pthread_mutex_lock(&g_mu);
    record("GSYN", -1, 0, 0, 0, {});
    pthread_mutex_unlock(&g_mu);
  }
  return rc;
}

int rename(const char* a, const char* b) {
  static auto f = real<int (*)(const char*, const char*)>("rename");
  return path_op("RENM", absolute(AT_FDCWD, a), absolute(AT_FDCWD, b), [&] { return f(a, b); });
}
int renameat(int da, const char* a, int db, const char* b) {
  static auto f = real<int (*)(int, const char*, int, const char*)>("renameat");
  return path_op("RENM", absolute(da, a), absolute(db, b), [&] { return f(da, a, db, b); });
}
int renameat2(int da, const char* a, int db, const char* b, unsigned fl) {
  static auto f = real<int (*)(int, const char*, int, const char*, unsigned)>("renameat2");
  return path_op("RENM", absolute(da, a), absolute(db, b), [&] { return f(da, a, db, b, fl); });
}
int unlink(const char* p) {
  static auto f = real<int (*)(const char*)>("unlink");
  return path_op("UNLK", absolute(AT_FDCWD, p), {}, [&] { return f(p); });
}
int rmdir(const char* p) {
  static auto f = real<int (*)(const char*)>("rmdir");
  return path_op("RMDR", absolute(AT_FDCWD, p), {}, [&] { return f(p); });
}
int unlinkat(int d, const char* p, int fl) {
  static auto f = real<int (*)(int, const char*, int)>("unlinkat");
  return path_op((fl & AT_REMOVEDIR) ? "RMDR" : "UNLK", absolute(d, p), {}, [&] { return f(d, p, fl); });
}
// glibc's remove() calls unlink / rmdir internally (not through these wrappers); the replayer
// removes the entry either way.
int remove(const char* p) {
  static auto f = real<int (*)(const char*)>("remove");
  return path_op("UNLK", absolute(AT_FDCWD, p), {}, [&] { return f(p); });
}
int mkdir(const char* p, mode_t m) {
  static auto f = real<int (*)(const char*, mode_t)>("mkdir");
  return path_op("MKDR", absolute(AT_FDCWD, p), {}, [&] { return f(p, m); });
}
int mkdirat(int d, const char* p, mode_t m) {
  static auto f = real<int (*)(int, const char*, mode_t)>("mkdirat");
  return path_op("MKDR", absolute(d, p), {}, [&] { return f(d, p, m); });
}

}  // extern "C"
