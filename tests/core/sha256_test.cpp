// SHA-256 (core/sha256.h) against the FIPS 180-2 / NIST example digests, one-shot and streamed.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "core/sha256.h"

using namespace olmo;

TEST(Sha256, NistExamples) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  // Streaming in uneven pieces gives the one-shot digest.
  std::string m(1000000, 'a');
  Sha256 s;
  for (size_t i = 0, step = 1; i < m.size(); i += step, step = step * 7 % 131 + 1)
    s.update(m.data() + i, std::min(step, m.size() - i));
  EXPECT_EQ(s.hex_digest(), sha256_hex(m));
}
