// libFuzzer target: OLMo-format token files and their document indices (src/corpus/token_file.cpp
// TokenFile / read_doc_index, src/data/fsl_dataset.cpp FslDataset). The first byte picks:
//   0: the bytes are a .npy token file: TokenFile + check_ids, then an FslDataset (seq_len 4,
//      vocab 1000, validating and not) reading every instance;
//   1: the bytes are a raw .csv.gz document index (the gzip reader is fuzzed);
//   2, 3: the bytes are CSV text gzip-compressed by the harness (the CSV parser is reached);
//      3 also checks the spans against 64 tokens.
#include <string>
#include <vector>

#include "core/error.h"
#include "corpus/token_file.h"
#include "data/fsl_dataset.h"
#include "fuzz_util.h"

namespace c = olmo::corpus;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const int mode = data[0] & 3;
  const std::string body(olmo::fuzz::as_view(data + 1, size - 1));
  try {
    if (mode == 0) {
      const std::string path = olmo::fuzz::write_scratch("part-00000.npy", body);
      c::TokenFile f(path);
      try {
        f.check_ids(1000);
      } catch (const olmo::Error& e) {
        OLMO_FUZZ_NOTE(e);
      }
      for (bool validate : {true, false}) {
        try {
          olmo::data::FslOptions opt;
          opt.eos_id = 0;
          opt.pad_id = 1;
          opt.validate = validate;
          olmo::data::FslDataset ds({path}, 4, 1000, opt);
          std::vector<int32_t> out(4);
          for (int64_t i = 0; i < ds.size(); ++i) {
            try {
              ds.read(i, out.data());
            } catch (const olmo::Error& e) {
              OLMO_FUZZ_NOTE(e);
            }
          }
        } catch (const olmo::Error& e) {
          OLMO_FUZZ_NOTE(e);
        }
      }
    } else {
      const std::string gz = mode == 1 ? body : c::gzip_compress(body, 1);
      const std::string path = olmo::fuzz::write_scratch("part-00000.csv.gz", gz);
      (void)c::read_doc_index(path, mode == 3 ? 64 : 0);
    }
  } catch (const olmo::Error& e) {
    OLMO_FUZZ_NOTE(e);
  }
  return 0;
}
