// FusedTensorFingerprint (see fused_fingerprint.h).
#include "ckpt/fused_fingerprint.h"

#include <algorithm>

#include "ckpt/fingerprint.h"

namespace olmo::ckpt {

// One flat buffer as the fingerprint visit sees it: base[0] is element lo; this rank
// fingerprints [r0, r1).
struct FusedTensorFingerprint::Part {
  std::string prefix;
  const float* base;
  size_t lo, r0, r1;
  std::unique_ptr<std::atomic<uint64_t>[]> sums;  // per layout tensor
  std::atomic<size_t> added{0};
};

namespace {
// A fingerprint-mode visit that records the flat buffers and hashes nothing.
class Recorder final : public StateVisitor {
 public:
  using Fn = std::function<void(const std::string&, const float*, size_t, size_t, size_t)>;
  Recorder(size_t fp_lo, size_t fp_hi, Fn f) : fp_lo_(fp_lo), fp_hi_(fp_hi), f_(std::move(f)) {}
  Mode mode() const override { return Mode::fingerprint; }
  void begin_section(const std::string&) override {}
  void end_section() override {}
  bool has_section(const std::string&) const override { return true; }
  void json(const std::string&, nlohmann::json&, FieldKind, const FieldFp&) override {}
  void whole(nlohmann::json&, const FieldFp&) override {}
  void flat(const std::string& prefix, float* base, size_t lo, size_t hi) override {
    f_(prefix, base, lo, lo, hi);
  }
  void flat_replicated(const std::string& prefix, float* base) override {
    f_(prefix, base, 0, fp_lo_, fp_hi_);
  }

 private:
  size_t fp_lo_, fp_hi_;
  Fn f_;
};
}  // namespace

FusedTensorFingerprint::FusedTensorFingerprint(const StateFn& visit, const FlatLayout& layout,
                                               size_t fp_lo, size_t fp_hi)
    : layout_(layout), order_(layout.size()) {
  for (size_t i = 0; i < order_.size(); ++i) order_[i] = i;
  std::sort(order_.begin(), order_.end(),
            [&](size_t x, size_t y) { return layout_[x].offset < layout_[y].offset; });
  Recorder rec(fp_lo, fp_hi, [&](const std::string& prefix, const float* base, size_t lo,
                                 size_t r0, size_t r1) {
    auto p = std::make_unique<Part>();
    p->prefix = prefix, p->base = base, p->lo = lo, p->r0 = r0, p->r1 = std::max(r0, r1);
    p->sums = std::make_unique<std::atomic<uint64_t>[]>(layout_.size());
    for (size_t t = 0; t < layout_.size(); ++t) p->sums[t] = 0;
    parts_.push_back(std::move(p));
  });
  visit(rec);
}

FusedTensorFingerprint::~FusedTensorFingerprint() = default;

void FusedTensorFingerprint::add(size_t a, size_t b) {
  for (const auto& p : parts_) {
    const size_t x0 = std::max(a, p->r0), x1 = std::min(b, p->r1);
    if (x0 >= x1) continue;
    p->added.fetch_add(x1 - x0, std::memory_order_relaxed);
    // the first tensor (by offset) that ends after x0, then every one that starts before x1
    auto it = std::partition_point(order_.begin(), order_.end(), [&](size_t t) {
      return layout_[t].offset + layout_[t].numel <= x0;
    });
    for (; it != order_.end() && layout_[*it].offset < x1; ++it) {
      const FlatTensor& t = layout_[*it];
      const size_t o0 = std::max(x0, t.offset), o1 = std::min(x1, t.offset + t.numel);
      if (o0 >= o1) continue;
      p->sums[*it].fetch_add(
          fingerprint_partial(p->base + (o0 - p->lo), o1 - o0, o0 - t.offset, false),
          std::memory_order_relaxed);
    }
  }
}

bool FusedTensorFingerprint::partial(const std::string& prefix, const float* base, size_t r0,
                                     size_t r1, size_t ti, uint64_t& out) const {
  for (const auto& p : parts_)
    if (p->prefix == prefix && p->base == base && p->r0 == r0 && p->r1 == std::max(r0, r1)) {
      if (p->added.load(std::memory_order_relaxed) != p->r1 - p->r0) return false;
      out = p->sums[ti].load(std::memory_order_relaxed);
      return true;
    }
  return false;
}

}  // namespace olmo::ckpt
