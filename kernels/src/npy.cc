#include "prefixd/kernels/npy.h"

#include <cctype>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

#include "prefixd/common/error.h"

namespace prefixd::kernels {
namespace {

constexpr char kMagic[] = "\x93NUMPY";

// The value text after 'key': in the header dict, up to the matching end (for shape tuples) or
// the next comma.
std::string DictValue(const std::string& header, const std::string& key, const std::string& name) {
  const std::string quoted[] = {"'" + key + "'", "\"" + key + "\""};
  size_t at = std::string::npos;
  for (const std::string& q : quoted)
    if ((at = header.find(q)) != std::string::npos) {
      at += q.size();
      break;
    }
  PREFIXD_CHECK_ARG(at != std::string::npos, name << ": .npy header has no '" << key << "': " << header);
  at = header.find(':', at);
  PREFIXD_CHECK_ARG(at != std::string::npos, name << ": .npy header: no ':' after '" << key << "'");
  ++at;
  while (at < header.size() && std::isspace(static_cast<unsigned char>(header[at]))) ++at;
  size_t end;
  if (at < header.size() && header[at] == '(') {
    end = header.find(')', at);
    PREFIXD_CHECK_ARG(end != std::string::npos, name << ": .npy header: unterminated shape tuple");
    ++end;
  } else {
    end = header.find_first_of(",}", at);
    PREFIXD_CHECK_ARG(end != std::string::npos, name << ": .npy header: unterminated value of '" << key << "'");
  }
  std::string v = header.substr(at, end - at);
  while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back()))) v.pop_back();
  return v;
}

std::vector<int64_t> ParseShape(const std::string& text, const std::string& name) {
  PREFIXD_CHECK_ARG(text.size() >= 2 && text.front() == '(' && text.back() == ')',
                    name << ": .npy shape '" << text << "' is not a tuple");
  std::vector<int64_t> shape;
  std::stringstream in(text.substr(1, text.size() - 2));
  std::string item;
  while (std::getline(in, item, ',')) {
    const size_t b = item.find_first_not_of(" \t"), e = item.find_last_not_of(" \tL");
    if (b == std::string::npos) continue;  // trailing comma of a 1-tuple
    const std::string digits = item.substr(b, e - b + 1);
    PREFIXD_CHECK_ARG(!digits.empty() && digits.size() <= 15 &&
                          digits.find_first_not_of("0123456789") == std::string::npos,
                      name << ": .npy shape '" << text << "' has a bad dimension '" << item << "'");
    shape.push_back(std::stoll(digits));
  }
  return shape;
}

std::string Unquote(const std::string& v, const std::string& name) {
  PREFIXD_CHECK_ARG(v.size() >= 2 && (v.front() == '\'' || v.front() == '"') && v.back() == v.front(),
                    name << ": .npy descr " << v << " is not a string");
  return v.substr(1, v.size() - 2);
}

}  // namespace

int64_t NpyArray::num_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

NpyArray ParseNpy(const uint8_t* bytes, size_t size, const std::string& name) {
  PREFIXD_CHECK_ARG(size >= 10 && std::memcmp(bytes, kMagic, 6) == 0, name << ": not a .npy file (bad magic)");
  const int major = bytes[6];
  PREFIXD_CHECK_ARG(major >= 1 && major <= 3, name << ": unsupported .npy version " << major << "." << int(bytes[7]));
  size_t header_len, offset;
  if (major == 1) {
    header_len = size_t(bytes[8]) | size_t(bytes[9]) << 8;
    offset = 10;
  } else {
    PREFIXD_CHECK_ARG(size >= 12, name << ": truncated .npy header");
    header_len = size_t(bytes[8]) | size_t(bytes[9]) << 8 | size_t(bytes[10]) << 16 | size_t(bytes[11]) << 24;
    offset = 12;
  }
  PREFIXD_CHECK_ARG(offset + header_len <= size,
                    name << ": .npy header of " << header_len << " bytes runs past the end of the file (" << size
                         << " bytes)");
  const std::string header(reinterpret_cast<const char*>(bytes + offset), header_len);
  NpyArray a;
  a.descr = Unquote(DictValue(header, "descr", name), name);
  const std::string fortran = DictValue(header, "fortran_order", name);
  PREFIXD_CHECK_ARG(fortran == "False" || fortran == "True", name << ": .npy fortran_order is '" << fortran << "'");
  a.fortran_order = fortran == "True";
  a.shape = ParseShape(DictValue(header, "shape", name), name);
  PREFIXD_CHECK_ARG(a.descr.size() >= 3 && (a.descr[0] == '<' || a.descr[0] == '|' || a.descr[0] == '>' ||
                                            a.descr[0] == '='),
                    name << ": .npy descr '" << a.descr << "' is not a simple type");
  const std::string digits = a.descr.substr(2);
  PREFIXD_CHECK_ARG(!digits.empty() && digits.size() <= 3 && digits.find_first_not_of("0123456789") == std::string::npos,
                    name << ": .npy descr '" << a.descr << "' is not a simple type");
  a.item_size = std::stoi(digits);
  PREFIXD_CHECK_ARG(a.descr[0] != '>' || a.item_size == 1,
                    name << ": big-endian .npy data ('" << a.descr << "') is not supported");
  const size_t data_offset = offset + header_len;
  int64_t expected = int64_t(a.item_size);
  for (int64_t d : a.shape) {
    PREFIXD_CHECK_ARG(d >= 0 && (d == 0 || expected <= (int64_t(1) << 50) / d),
                      name << ": .npy shape is too large");
    expected *= d;
  }
  PREFIXD_CHECK_ARG(int64_t(size - data_offset) == expected,
                    name << ": .npy data is " << size - data_offset << " bytes but its header ('" << a.descr
                         << "', shape " << DictValue(header, "shape", name) << ") says " << expected);
  a.data.assign(bytes + data_offset, bytes + size);
  return a;
}

NpyArray LoadNpy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) PREFIXD_THROW(ErrorKind::kNotFound, "cannot open .npy file '" << path << "'");
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return ParseNpy(bytes.data(), bytes.size(), path);
}

std::vector<uint8_t> EncodeNpy(const std::string& descr, const std::vector<int64_t>& shape, const void* data) {
  std::ostringstream h;
  h << "{'descr': '" << descr << "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < shape.size(); ++i) h << shape[i] << (shape.size() == 1 || i + 1 < shape.size() ? ", " : "");
  h << "), }";
  std::string header = h.str();
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  PREFIXD_CHECK_ARG(header.size() < 65536, "EncodeNpy: header too long");
  std::vector<uint8_t> out(kMagic, kMagic + 6);
  out.push_back(1);
  out.push_back(0);
  out.push_back(uint8_t(header.size() & 0xff));
  out.push_back(uint8_t(header.size() >> 8));
  out.insert(out.end(), header.begin(), header.end());
  int64_t bytes = std::stoi(descr.substr(2));
  for (int64_t d : shape) bytes *= d;
  const auto* p = static_cast<const uint8_t*>(data);
  out.insert(out.end(), p, p + bytes);
  return out;
}

void SaveNpy(const std::string& path, const std::string& descr, const std::vector<int64_t>& shape, const void* data) {
  const std::vector<uint8_t> bytes = EncodeNpy(descr, shape, data);
  std::ofstream out(path, std::ios::binary);
  PREFIXD_CHECK_ARG(out.good(), "cannot write .npy file '" << path << "'");
  out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

std::vector<uint16_t> NpyToKv(const NpyArray& a, const std::string& name, int64_t tokens, int kv_heads, int head_dim,
                              DType dtype) {
  PREFIXD_CHECK_ARG(!a.fortran_order, name << ": Fortran-order .npy arrays are not supported (save with C order)");
  PREFIXD_CHECK_ARG(a.shape.size() == 3 && (tokens < 0 || a.shape[0] == tokens) && a.shape[1] == kv_heads &&
                        a.shape[2] == head_dim,
                    name << ": K/V tensor has shape (" << [&] {
                      std::string s;
                      for (size_t i = 0; i < a.shape.size(); ++i) s += (i ? ", " : "") + std::to_string(a.shape[i]);
                      return s;
                    }() << "), expected (" << (tokens < 0 ? std::string("tokens") : std::to_string(tokens)) << ", "
                         << kv_heads << ", " << head_dim << ")");
  const int64_t n = a.num_elements();
  std::vector<uint16_t> out(static_cast<size_t>(n));
  const std::string type = a.descr.substr(1);
  if (type == "f2" && dtype == DType::kFloat16) {
    std::memcpy(out.data(), a.data.data(), size_t(n) * 2);
  } else if (type == "u2" || type == "i2" || type == "V2") {
    std::memcpy(out.data(), a.data.data(), size_t(n) * 2);  // raw bits of the pool's dtype
  } else if (type == "f2") {  // fp16 into a bf16 pool
    for (int64_t i = 0; i < n; ++i) {
      uint16_t h;
      std::memcpy(&h, a.data.data() + 2 * i, 2);
      out[i] = FromFloat(dtype, HalfToFloat(h));
    }
  } else if (type == "f4") {
    for (int64_t i = 0; i < n; ++i) {
      float f;
      std::memcpy(&f, a.data.data() + 4 * i, 4);
      out[i] = FromFloat(dtype, f);
    }
  } else {
    PREFIXD_THROW(ErrorKind::kInvalidArgument, name << ": .npy dtype '" << a.descr << "' is not a K/V type (expected "
                                                    << "<f2, <f4, or 2-byte raw " << DTypeName(dtype) << " bits)");
  }
  return out;
}

void CopyKvToPool(Backend& backend, const KvPoolView& kv, int layer, int64_t slot_begin, int64_t n, const uint16_t* k,
                  const uint16_t* v) {
  const KvPoolShape& s = kv.shape;
  PREFIXD_CHECK_ARG(layer >= 0 && layer < s.num_layers, "CopyKvToPool: layer " << layer << " of " << s.num_layers);
  PREFIXD_CHECK_ARG(n >= 0 && slot_begin >= 0 && slot_begin + n <= int64_t(s.num_pages) * s.page_size,
                    "CopyKvToPool: slots [" << slot_begin << ", " << slot_begin + n << ") are outside the pool's "
                                            << int64_t(s.num_pages) * s.page_size << " slots");
  const size_t bytes = size_t(n * s.TokenStride()) * DTypeBytes(s.dtype);
  const int64_t off = s.Offset(layer, slot_begin, 0);
  backend.CopyToDevice(static_cast<uint16_t*>(kv.k) + off, k, bytes);
  backend.CopyToDevice(static_cast<uint16_t*>(kv.v) + off, v, bytes);
}

}  // namespace prefixd::kernels
