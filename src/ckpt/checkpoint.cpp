// Checkpoint dtypes and the test fault hook (format: checkpoint.h).
#include "ckpt/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>

#include "ckpt/checkpoint_detail.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/hash.h"

namespace fs = std::filesystem;

namespace olmo::ckpt {

using namespace detail;

const char* dtype_name(DType d) {
  switch (d) {
    case DType::f32: return "f32";
    case DType::f64: return "f64";
    case DType::i64: return "i64";
    case DType::i32: return "i32";
    case DType::u64: return "u64";
    case DType::u32: return "u32";
    case DType::u8: return "u8";
  }
  return "?";
}

size_t dtype_size(DType d) {
  switch (d) {
    case DType::f64: case DType::i64: case DType::u64: return 8;
    case DType::f32: case DType::i32: case DType::u32: return 4;
    case DType::u8: return 1;
  }
  return 0;
}

DType dtype_from_name(const std::string& s) {
  for (DType d : {DType::f32, DType::f64, DType::i64, DType::i32, DType::u64, DType::u32, DType::u8})
    if (s == dtype_name(d)) return d;
  throw Error(cat("unknown dtype '", s, "'"));
}

void set_write_fault_hook(std::function<bool(const std::string&, size_t)> hook) { fault_hook() = std::move(hook); }

}  // namespace olmo::ckpt
