// Reader and writer for the safetensors format (our own implementation; rules as in the
// huggingface/safetensors spec):
//   bytes 0..8     u64 little-endian N = length of the JSON header
//   bytes 8..8+N   UTF-8 JSON object: name -> {"dtype", "shape": [...], "data_offsets": [b, e]},
//                  plus an optional "__metadata__": {str: str}. The writer pads the header with
//                  spaces so the data start is a multiple of 8.
//   rest           the data buffer; offsets are relative to its start, e - b = numel * dtype
//                  size, and the tensors tile the buffer exactly (no gap, no overlap, the last
//                  one ends at the file end). All values little-endian, row-major.
// dtypes: F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL.
// Every violation throws olmo::Error naming the file, the tensor (or header offset) and the rule.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/file_io.h"

namespace olmo::model {

enum class DType { F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL };
const char* dtype_name(DType);
size_t dtype_size(DType);
bool parse_dtype(const std::string& s, DType* out);

struct TensorView {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  const uint8_t* data = nullptr;  // inside the mapping (unaligned in general)
  size_t nbytes = 0;
  size_t numel() const;
};

// Memory-mapped, validated safetensors file. Tensor views stay valid while the object lives.
class SafetensorsFile {
 public:
  explicit SafetensorsFile(const std::string& path);
  const std::string& path() const { return file_.path(); }
  const std::map<std::string, TensorView>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  bool has(const std::string& name) const { return tensors_.count(name) > 0; }
  // Missing name -> olmo::Error "<file>: tensor '<name>' not found".
  const TensorView& get(const std::string& name) const;
  // Copy a float tensor (F32, F16, BF16 or F64) into out[numel] as fp32. Other dtypes throw.
  void read_f32(const std::string& name, float* out) const;

 private:
  MappedFile file_;
  std::map<std::string, TensorView> tensors_;
  std::map<std::string, std::string> metadata_;
};

// Collects tensors (pointers must stay valid until write()) and writes the file atomically
// (temp name + rename), streaming tensor data without building the whole file in memory.
class SafetensorsWriter {
 public:
  void add(const std::string& name, DType dtype, std::vector<int64_t> shape, const void* data);
  void set_metadata(const std::string& key, const std::string& value) { metadata_[key] = value; }
  // on_tensor(bytes): called after each tensor's data is written, with the tensor bytes of this
  // file written so far (a progress hook; the header is not counted).
  void write(const std::string& path,
             const std::function<void(uint64_t)>& on_tensor = nullptr) const;

 private:
  struct Entry {
    std::string name;
    DType dtype;
    std::vector<int64_t> shape;
    const void* data;
  };
  std::vector<Entry> entries_;
  std::map<std::string, std::string> metadata_;
};

// fp16 / bf16 bit patterns to fp32.
float half_to_float(uint16_t h);
float bf16_to_float(uint16_t b);

}  // namespace olmo::model
