// Batch ledger IO (see ledger.h).
#include "audit/ledger.h"

#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "core/file_io.h"
#include "core/hash.h"

namespace fs = std::filesystem;

namespace olmo::audit {

static constexpr uint32_t kMagic = 0x4345524cu;  // "LREC"
static constexpr size_t kHead = 56;
static constexpr uint32_t kRecipeMagic = 0x5043524cu;  // "LRCP"
static constexpr size_t kRecipeHead = 16;

std::string ledger_path(const std::string& run_dir) {
  return (fs::path(run_dir) / "audit" / "ledger.bin").string();
}

uint32_t row_hash(const void* tokens, int64_t T) {
  return uint32_t(hash64(tokens, size_t(T) * 4, 0x726f77ull));
}

namespace {
struct Parsed {
  bool recipe = false;  // a recipe-change record (rc), else a batch record (rec)
  LedgerRecord rec;
  RecipeChangeRecord rc;
  size_t end = 0;  // byte offset after the record
  int64_t step() const { return recipe ? rc.step : rec.step; }
};
// Parses the record at offset `at`; false if the file ends inside it. Throws on a bad magic.
bool parse(const std::string& buf, size_t at, const std::string& path, Parsed& p) {
  if (at + 8 > buf.size()) return false;
  const char* b = buf.data() + at;
  uint32_t magic, n;
  std::memcpy(&magic, b, 4);
  std::memcpy(&n, b + 4, 4);
  p.recipe = magic == kRecipeMagic;
  if (p.recipe) {
    if (at + kRecipeHead + size_t(n) > buf.size()) return false;
    std::memcpy(&p.rc.step, b + 8, 8);
    p.rc.json.assign(b + kRecipeHead, n);
    p.end = at + kRecipeHead + n;
    return true;
  }
  if (at + kHead > buf.size()) return false;
  OLMO_CHECK(magic == kMagic, path, ": not a batch ledger or corrupt at byte ", at,
             " (bad record magic)");
  if (at + kHead + size_t(n) * 8 > buf.size()) return false;
  LedgerRecord& r = p.rec;
  uint16_t world, rank;
  uint32_t chunk;
  std::memcpy(&r.step, b + 8, 8);
  std::memcpy(&r.epoch, b + 16, 8);
  std::memcpy(&r.batch, b + 24, 8);
  std::memcpy(&world, b + 32, 2);
  std::memcpy(&rank, b + 34, 2);
  std::memcpy(&chunk, b + 36, 4);
  std::memcpy(&r.content_hash, b + 40, 8);
  std::memcpy(&r.loader_hash, b + 48, 8);
  r.world = world;
  r.rank = rank;
  r.chunk = chunk;
  r.indices.resize(n);
  r.row_hashes.resize(n);
  std::memcpy(r.indices.data(), b + kHead, size_t(n) * 4);
  std::memcpy(r.row_hashes.data(), b + kHead + size_t(n) * 4, size_t(n) * 4);
  p.end = at + kHead + size_t(n) * 8;
  return true;
}
}  // namespace

Ledger read_ledger(const std::string& path) {
  OLMO_CHECK(file_exists(path), "batch ledger not found: ", path);
  std::string buf = read_file(path);
  Ledger L;
  size_t at = 0;
  while (at < buf.size()) {
    Parsed p;
    if (!parse(buf, at, path, p)) {
      L.torn_tail = true;
      break;
    }
    if (p.recipe)
      L.recipe_changes.push_back(std::move(p.rc));
    else
      L.records.push_back(std::move(p.rec));
    at = p.end;
  }
  return L;
}

LedgerWriter::LedgerWriter(const std::string& path, int64_t keep) : path_(path) {
  fs::create_directories(fs::path(path).parent_path());
  if (file_exists(path)) {
    std::string buf = read_file(path);
    size_t at = 0, good = 0;
    while (at < buf.size()) {
      Parsed p;
      if (!parse(buf, at, path, p) || p.step() > keep) break;
      good = at = p.end;
    }
    if (good != buf.size()) fs::resize_file(path, good);
  }
  f_ = std::fopen(path.c_str(), "ab");
  OLMO_CHECK(f_, "cannot open batch ledger ", path, " for writing");
}

LedgerWriter::~LedgerWriter() {
  if (f_) std::fclose(f_);
}

void LedgerWriter::append(const LedgerRecord& r) {
  OLMO_CHECK(r.indices.size() == r.row_hashes.size(), "ledger record: ", r.indices.size(),
             " indices but ", r.row_hashes.size(), " row hashes");
  std::string b(kHead, '\0');
  uint32_t magic = kMagic, n = uint32_t(r.indices.size());
  uint16_t world = uint16_t(r.world), rank = uint16_t(r.rank);
  uint32_t chunk = uint32_t(r.chunk);
  std::memcpy(&b[0], &magic, 4);
  std::memcpy(&b[4], &n, 4);
  std::memcpy(&b[8], &r.step, 8);
  std::memcpy(&b[16], &r.epoch, 8);
  std::memcpy(&b[24], &r.batch, 8);
  std::memcpy(&b[32], &world, 2);
  std::memcpy(&b[34], &rank, 2);
  std::memcpy(&b[36], &chunk, 4);
  std::memcpy(&b[40], &r.content_hash, 8);
  std::memcpy(&b[48], &r.loader_hash, 8);
  b.append(reinterpret_cast<const char*>(r.indices.data()), size_t(n) * 4);
  b.append(reinterpret_cast<const char*>(r.row_hashes.data()), size_t(n) * 4);
  OLMO_CHECK(std::fwrite(b.data(), 1, b.size(), f_) == b.size() && std::fflush(f_) == 0,
             "cannot write batch ledger ", path_, " (disk full?)");
}

void LedgerWriter::append(const RecipeChangeRecord& r) {
  std::string b(kRecipeHead, '\0');
  uint32_t magic = kRecipeMagic, n = uint32_t(r.json.size());
  std::memcpy(&b[0], &magic, 4);
  std::memcpy(&b[4], &n, 4);
  std::memcpy(&b[8], &r.step, 8);
  b += r.json;
  OLMO_CHECK(std::fwrite(b.data(), 1, b.size(), f_) == b.size() && std::fflush(f_) == 0,
             "cannot write batch ledger ", path_, " (disk full?)");
}

}  // namespace olmo::audit
