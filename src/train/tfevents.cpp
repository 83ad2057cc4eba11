// TensorBoard event-file writer (see tfevents.h).
#include "train/tfevents.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "core/crc32c.h"
#include "core/error.h"
#include "core/file_io.h"

namespace fs = std::filesystem;

namespace olmo::train {

namespace {

// --- protobuf wire format: key = field << 3 | wire type (0 varint, 1 fixed64, 2 bytes, 5 fixed32)
void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(char(uint8_t(v) | 0x80));
    v >>= 7;
  }
  out.push_back(char(v));
}
void put_key(std::string& out, int field, int wire) { put_varint(out, uint64_t(field) << 3 | unsigned(wire)); }
template <class T>
void put_fixed(std::string& out, int field, T v) {  // double (wire 1) or float (wire 5), LE
  put_key(out, field, sizeof(T) == 8 ? 1 : 5);
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out.append(b, sizeof(T));
}
void put_bytes(std::string& out, int field, std::string_view s) {
  put_key(out, field, 2);
  put_varint(out, s.size());
  out.append(s);
}
// Event header: wall_time (1), step (2; int64 as a two's-complement varint).
std::string event_head(double wall_time, int64_t step) {
  std::string e;
  put_fixed(e, 1, wall_time);
  put_key(e, 2, 0);
  put_varint(e, uint64_t(step));
  return e;
}

bool get_varint(std::string_view s, size_t& i, uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64 && i < s.size(); shift += 7) {
    const uint8_t b = uint8_t(s[i++]);
    v |= uint64_t(b & 0x7F) << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

void put_le(std::string& out, uint64_t v, int bytes) {
  for (int k = 0; k < bytes; ++k) out.push_back(char(uint8_t(v >> (8 * k))));
}
uint64_t get_le(std::string_view s, size_t at, int bytes) {
  uint64_t v = 0;
  for (int k = 0; k < bytes; ++k) v |= uint64_t(uint8_t(s[at + size_t(k)])) << (8 * k);
  return v;
}

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

constexpr std::string_view kPrefix = "events.out.tfevents.";

// The timestamp in an event file's name (events.out.tfevents.<ts>.<...>), -1 if none.
int64_t name_stamp(const std::string& name) {
  if (name.rfind(kPrefix, 0) != 0) return -1;
  size_t i = kPrefix.size(), j = i;
  while (j < name.size() && std::isdigit(uint8_t(name[j]))) ++j;
  return j > i ? std::stoll(name.substr(i, j - i)) : -1;
}

}  // namespace

std::string tb_file_version_event(double wall_time) {
  std::string e = event_head(wall_time, 0);
  put_bytes(e, 3, "brain.Event:2");
  return e;
}

std::string tb_scalars_event(double wall_time, int64_t step, const std::vector<TbScalar>& values) {
  std::string summary;
  for (const auto& v : values) {
    std::string value;
    put_bytes(value, 1, v.tag);
    put_fixed(value, 2, v.value);
    put_bytes(summary, 1, value);
  }
  std::string e = event_head(wall_time, step);
  put_bytes(e, 5, summary);
  return e;
}

std::string tb_session_start_event(double wall_time, int64_t step) {
  std::string log;
  put_key(log, 1, 0);
  put_varint(log, 1);  // SessionLog.START
  std::string e = event_head(wall_time, step);
  put_bytes(e, 7, log);
  return e;
}

std::string tfrecord_frame(std::string_view data) {
  std::string out;
  put_le(out, data.size(), 8);
  put_le(out, crc32c_mask(crc32c(out.data(), 8)), 4);
  out.append(data);
  put_le(out, crc32c_mask(crc32c(data.data(), data.size())), 4);
  return out;
}

std::vector<std::string> tfrecord_split(std::string_view bytes, size_t* valid_bytes) {
  std::vector<std::string> out;
  size_t at = 0;
  while (bytes.size() - at >= 12) {
    const uint64_t n = get_le(bytes, at, 8);
    if (crc32c_unmask(uint32_t(get_le(bytes, at + 8, 4))) != crc32c(bytes.data() + at, 8)) break;
    if (n > bytes.size() - at - 16) break;  // incomplete
    std::string_view data = bytes.substr(at + 12, size_t(n));
    if (crc32c_unmask(uint32_t(get_le(bytes, at + 12 + n, 4))) != crc32c(data.data(), data.size()))
      break;
    out.emplace_back(data);
    at += 16 + size_t(n);
  }
  if (valid_bytes) *valid_bytes = at;
  return out;
}

TbEventHead tb_event_head(std::string_view e) {
  TbEventHead h;
  size_t i = 0;
  uint64_t key = 0, v = 0;
  while (i < e.size() && get_varint(e, i, key)) {
    const int field = int(key >> 3), wire = int(key & 7);
    if (wire == 0) {
      if (!get_varint(e, i, v)) break;
      if (field == 2) h.step = int64_t(v);
    } else if (wire == 1 || wire == 5) {
      i += wire == 1 ? 8 : 4;
    } else if (wire == 2) {
      if (!get_varint(e, i, v) || v > e.size() - std::min(i, e.size())) break;
      if (field == 3) h.file_version = true;
      i += size_t(v);
    } else {
      break;  // groups: not in Event
    }
  }
  return h;
}

TfEventsWriter::TfEventsWriter(std::string dir) : dir_(std::move(dir)) {}

TfEventsWriter::~TfEventsWriter() {
  if (f_) std::fclose(f_);
}

bool TfEventsWriter::truncate_after(int64_t step) {
  if (dir_.empty()) return false;
  restart_step_ = step + 1;
  if (!fs::is_directory(dir_)) return false;
  bool remain = false;
  for (const auto& de : fs::directory_iterator(dir_)) {
    const std::string p = de.path().string();
    if (p == path_ || name_stamp(de.path().filename().string()) < 0) continue;
    const std::string bytes = read_file(p);
    size_t valid = 0;
    std::string kept;
    bool any = false;
    for (const auto& rec : tfrecord_split(bytes, &valid)) {
      const TbEventHead h = tb_event_head(rec);
      if (h.file_version || h.step <= step) {
        kept += tfrecord_frame(rec);
        any |= !h.file_version;
      }
    }
    if (!any)
      fs::remove(p);
    else if (kept.size() != bytes.size())
      write_file_atomic(p, kept);
    remain |= any;
  }
  return remain;
}

void TfEventsWriter::open() {
  fs::create_directories(dir_);
  // A name later (in sort order) than every existing file's: TensorBoard reads them by name.
  int64_t stamp = int64_t(unix_now());
  for (const auto& de : fs::directory_iterator(dir_))
    stamp = std::max(stamp, name_stamp(de.path().filename().string()) + 1);
  char host[256] = "localhost";
  gethostname(host, sizeof host - 1);
  char name[400];
  std::snprintf(name, sizeof name, "events.out.tfevents.%010lld.%s.%d", (long long)stamp, host,
                int(getpid()));
  path_ = (fs::path(dir_) / name).string();
  f_ = std::fopen(path_.c_str(), "wb");
  OLMO_CHECK(f_, "cannot create TensorBoard event file ", path_, ": ", std::strerror(errno));
  const double now = unix_now();
  append(tb_file_version_event(now));
  if (restart_step_ >= 0) append(tb_session_start_event(now, restart_step_));
}

void TfEventsWriter::append(const std::string& event) {
  const std::string rec = tfrecord_frame(event);
  OLMO_CHECK(std::fwrite(rec.data(), 1, rec.size(), f_) == rec.size() && std::fflush(f_) == 0,
             "cannot write TensorBoard event file ", path_, ": ", std::strerror(errno));
}

void TfEventsWriter::write_scalars(double wall_time, int64_t step,
                                   const std::vector<TbScalar>& values) {
  if (dir_.empty() || values.empty()) return;
  if (!f_) open();
  append(tb_scalars_event(wall_time, step, values));
}

}  // namespace olmo::train
