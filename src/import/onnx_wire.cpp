#include "onnx_wire.hpp"

#include <cstdint>

namespace capcalc::onnx_import {

namespace {

// The messages of onnx.proto that can hold a tensor, directly or further down; every other
// message (value infos, type protos, string maps) is copied as it is.
enum class Message {
  kOther,
  kModel,
  kGraph,
  kNode,
  kAttribute,
  kTensor,
  kSparse,
  kFunction,
  kTrainingInfo
};

// Which message a length-delimited field holds (field numbers from onnx.proto).
Message child_of(Message parent, std::uint64_t field) {
  switch (parent) {
    case Message::kModel:  // graph = 7, training_info = 20, functions = 25.
      if (field == 7) return Message::kGraph;
      if (field == 20) return Message::kTrainingInfo;
      if (field == 25) return Message::kFunction;
      break;
    case Message::kGraph:  // node = 1, initializer = 5, sparse_initializer = 15.
      if (field == 1) return Message::kNode;
      if (field == 5) return Message::kTensor;
      if (field == 15) return Message::kSparse;
      break;
    case Message::kNode:  // attribute = 5.
      if (field == 5) return Message::kAttribute;
      break;
    case Message::kAttribute:  // t = 5, g = 6, tensors = 10, graphs = 11, sparse_tensor(s) 22, 23.
      if (field == 5 || field == 10) return Message::kTensor;
      if (field == 6 || field == 11) return Message::kGraph;
      if (field == 22 || field == 23) return Message::kSparse;
      break;
    case Message::kSparse:  // values = 1, indices = 2.
      if (field == 1 || field == 2) return Message::kTensor;
      break;
    case Message::kFunction:  // node = 7.
      if (field == 7) return Message::kNode;
      break;
    case Message::kTrainingInfo:  // initialization = 1, algorithm = 2.
      if (field == 1 || field == 2) return Message::kGraph;
      break;
    default:
      break;
  }
  return Message::kOther;
}

// TensorProto's value fields: float_data 4, int32_data 5, int64_data 7, raw_data 9,
// double_data 10, uint64_data 11 (string_data, 6, holds strings that are never weights).
bool is_tensor_data(std::uint64_t field) {
  return field == 4 || field == 5 || field == 7 || field == 9 || field == 10 || field == 11;
}

constexpr std::uint64_t kDataLocationField = 14;  // TensorProto.data_location.
constexpr std::uint64_t kExternal = 1;            // TensorProto.DataLocation.EXTERNAL.

void put_varint(std::string& out, std::uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

class Reader {
 public:
  explicit Reader(std::string_view bytes) : bytes_(bytes) {}

  bool done() const { return pos_ == bytes_.size(); }
  std::size_t pos() const { return pos_; }

  bool varint(std::uint64_t& value) {
    value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ == bytes_.size()) return false;
      const auto byte = static_cast<std::uint8_t>(bytes_[pos_++]);
      value |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return true;
    }
    return false;  // More than ten bytes: not a varint.
  }

  bool skip(std::uint64_t n) {
    if (n > bytes_.size() - pos_) return false;
    pos_ += static_cast<std::size_t>(n);
    return true;
  }

 private:
  std::string_view bytes_;
  std::size_t pos_ = 0;
};

// Copies one message of kind `kind` from `in` to `out`, leaving out large tensor payloads.
bool copy_message(Message kind, std::string_view in, std::string& out, int depth, int max_depth) {
  Reader reader(in);
  bool stripped = false;
  // A tensor's values written one field per element (unpacked): gathered until they pass the
  // size limit, so that a tensor written so is dropped as a whole too.
  std::string unpacked;
  bool dropping_unpacked = false;
  while (!reader.done()) {
    const std::size_t start = reader.pos();
    std::uint64_t key = 0;
    if (!reader.varint(key)) return false;
    const std::uint64_t field = key >> 3;
    const auto wire = static_cast<int>(key & 7);
    if (field == 0) return false;
    std::string_view payload;
    switch (wire) {
      case 0: {  // Varint.
        std::uint64_t ignored = 0;
        if (!reader.varint(ignored)) return false;
        break;
      }
      case 1:  // 64-bit.
        if (!reader.skip(8)) return false;
        break;
      case 5:  // 32-bit.
        if (!reader.skip(4)) return false;
        break;
      case 2: {  // Length-delimited.
        std::uint64_t length = 0;
        if (!reader.varint(length)) return false;
        const std::size_t at = reader.pos();
        if (!reader.skip(length)) return false;
        payload = in.substr(at, static_cast<std::size_t>(length));
        break;
      }
      default:  // Groups (3, 4) are not in onnx.proto; 6 and 7 do not exist.
        return false;
    }
    const std::string_view whole = in.substr(start, reader.pos() - start);
    if (kind == Message::kTensor && is_tensor_data(field)) {
      if (wire == 2) {
        if (payload.size() > kMaxKeptTensorBytes) {
          stripped = true;  // Skipped unread: its pages of a mapped file stay on disk.
        } else {
          out.append(whole);
        }
      } else if (!dropping_unpacked) {
        unpacked.append(whole);
        if (unpacked.size() > kMaxKeptTensorBytes) {
          dropping_unpacked = true;
          stripped = true;
          std::string().swap(unpacked);
        }
      }
      continue;
    }
    const Message child = wire == 2 ? child_of(kind, field) : Message::kOther;
    if (child == Message::kOther) {
      out.append(whole);
      continue;
    }
    if (depth >= max_depth) return false;
    std::string copy;
    if (!copy_message(child, payload, copy, depth + 1, max_depth)) return false;
    put_varint(out, key);
    put_varint(out, copy.size());
    out.append(copy);
  }
  if (kind == Message::kTensor) {
    out.append(unpacked);
    if (stripped) {  // After any data_location in the input: the last value of a field wins.
      put_varint(out, kDataLocationField << 3);
      put_varint(out, kExternal);
    }
  }
  return true;
}

}  // namespace

std::optional<std::string> strip_tensor_data(std::string_view bytes, int max_depth) {
  std::string out;
  if (!copy_message(Message::kModel, bytes, out, 1, max_depth)) return std::nullopt;
  return out;
}

}  // namespace capcalc::onnx_import
