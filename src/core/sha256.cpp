// SHA-256 over OpenSSL's EVP digest interface (libcrypto); see core/sha256.h.
#include "core/sha256.h"

#include <openssl/evp.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "core/error.h"

namespace olmo {

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  OLMO_CHECK(ctx_ != nullptr && EVP_DigestInit_ex(static_cast<EVP_MD_CTX*>(ctx_), EVP_sha256(),
                                                  nullptr) == 1,
             "sha256: OpenSSL EVP_DigestInit_ex failed");
}

Sha256::~Sha256() { EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx_)); }

void Sha256::update(const void* data, size_t n) {
  OLMO_CHECK(EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(ctx_), data, n) == 1,
             "sha256: OpenSSL EVP_DigestUpdate failed");
}

std::string Sha256::hex_digest() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  OLMO_CHECK(EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(ctx_), md, &len) == 1 && len == 32,
             "sha256: OpenSSL EVP_DigestFinal_ex failed");
  static const char* hex = "0123456789abcdef";
  std::string out(64, '0');
  for (unsigned i = 0; i < 32; ++i) {
    out[2 * i] = hex[md[i] >> 4];
    out[2 * i + 1] = hex[md[i] & 15];
  }
  return out;
}

std::string sha256_hex(std::string_view data) {
  Sha256 s;
  s.update(data.data(), data.size());
  return s.hex_digest();
}

std::string sha256_file_hex(const std::string& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  OLMO_CHECK(f != nullptr, path, ": cannot open: ", std::strerror(errno));
  Sha256 s;
  std::string buf(1 << 20, '\0');
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), f.get())) > 0) s.update(buf.data(), n);
  OLMO_CHECK(!std::ferror(f.get()), path, ": read error: ", std::strerror(errno));
  return s.hex_digest();
}

}  // namespace olmo
