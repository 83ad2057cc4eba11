// libFuzzer target: safetensors files (src/model/safetensors.cpp, SafetensorsFile). The bytes are
// the file; every tensor that loads is looked up, and float tensors are converted to fp32
// (read_f32 reads exactly the validated span, so ASan catches any read outside the mapping).
#include <string>
#include <vector>

#include "core/error.h"
#include "fuzz_util.h"
#include "model/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path =
      olmo::fuzz::write_scratch("model.safetensors", olmo::fuzz::as_view(data, size));
  try {
    olmo::model::SafetensorsFile f(path);
    std::vector<float> buf;
    for (const auto& [name, t] : f.tensors()) {
      const auto& v = f.get(name);
      if (v.nbytes != t.nbytes) __builtin_trap();
      using olmo::model::DType;
      const bool is_float = t.dtype == DType::F32 || t.dtype == DType::F16 ||
                            t.dtype == DType::BF16 || t.dtype == DType::F64;
      if (!is_float || t.numel() > (size_t(1) << 22)) continue;
      buf.assign(t.numel(), 0.0f);
      f.read_f32(name, buf.data());
    }
  } catch (const olmo::Error& e) {
    OLMO_FUZZ_NOTE(e);
  }
  return 0;
}
