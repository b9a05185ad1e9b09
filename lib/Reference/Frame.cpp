//===- Frame.cpp - values of a running function, shared kernel helpers ---===//
#include "Frame.h"

#include <cstring>

#include "FloatFormats.h"

#include "mlir/IR/Location.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>

namespace ls2c::reference::detail {

using namespace mlir;

std::string describeLocation(Location loc) {
  if (auto file = dyn_cast<FileLineColLoc>(loc))
    return (file.getFilename().str() + ":" + std::to_string(file.getLine()) +
            ":" + std::to_string(file.getColumn()));
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  if (auto call = dyn_cast<CallSiteLoc>(loc))
    return describeLocation(call.getCallee());
  if (auto fused = dyn_cast<FusedLoc>(loc)) {
    std::string s;
    for (Location part : fused.getLocations()) {
      if (isa<UnknownLoc>(part))
        continue;
      s += (s.empty() ? "" : ", ") + describeLocation(part);
    }
    return s.empty() ? "unknown location" : s;
  }
  if (isa<UnknownLoc>(loc))
    return "unknown location";
  std::string s;
  llvm::raw_string_ostream os(s);
  os << loc;
  return os.str();
}

void fail(Operation *op, const llvm::Twine &message) {
  throw InterpreterError(describeLocation(op->getLoc()) + ": '" +
                         op->getName().getStringRef().str() + "' op " +
                         message.str());
}

ElementType elementTypeOf(Operation *op, Type type) {
  if (std::optional<ElementType> e = elementTypeFromMLIR(type))
    return *e;
  std::string s;
  llvm::raw_string_ostream os(s);
  os << type;
  fail(op, "has an element type the reference backend does not know: " +
               os.str());
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::vector<int64_t> stridesOf(const std::vector<int64_t> &shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;)
    strides[i - 1] = strides[i] * shape[i];
  return strides;
}

int64_t product(const std::vector<int64_t> &shape, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i)
    p *= shape[i];
  return p;
}

int64_t wrapI32(int64_t value) {
  auto low = static_cast<uint32_t>(static_cast<uint64_t>(value));
  return low >= 0x80000000u ? static_cast<int64_t>(low) - (int64_t{1} << 32)
                            : static_cast<int64_t>(low);
}

std::vector<int64_t> stridedOffsets(const std::vector<int64_t> &shape,
                                    const std::vector<int64_t> &strides) {
  int64_t count = product(shape, 0, shape.size());
  std::vector<int64_t> offsets(static_cast<size_t>(count));
  std::vector<int64_t> coord(shape.size(), 0);
  int64_t offset = 0;
  for (int64_t e = 0; e < count; ++e) {
    offsets[e] = offset;
    // Advance the odometer: the last dim fastest.
    for (size_t d = shape.size(); d-- > 0;) {
      offset += strides[d];
      if (++coord[d] < shape[d])
        break;
      offset -= strides[d] * shape[d];
      coord[d] = 0;
    }
  }
  return offsets;
}

HostTensor takeElements(const HostTensor &src, std::vector<int64_t> shape,
                        const std::vector<int64_t> &offsets) {
  HostTensor result = HostTensor::zeros(src.type, std::move(shape));
  if (isFloat(src.type))
    for (size_t e = 0; e < offsets.size(); ++e)
      result.floats[e] = src.floats[offsets[e]];
  else
    for (size_t e = 0; e < offsets.size(); ++e)
      result.ints[e] = src.ints[offsets[e]];
  return result;
}

static void expectScalar(Operation *op, const HostTensor &tensor,
                         const char *name) {
  if (tensor.rank() != 0 || tensor.numElements() != 1)
    fail(op, std::string(name) + " must be a rank-0 tensor, got " +
                 tensor.describe());
}

int64_t scalarInt(Operation *op, const HostTensor &tensor, const char *name) {
  expectScalar(op, tensor, name);
  if (isFloat(tensor.type))
    fail(op, std::string(name) + " must be an integer, got " +
                 tensor.describe());
  return tensor.ints[0];
}

double scalarFloat(Operation *op, const HostTensor &tensor, const char *name) {
  expectScalar(op, tensor, name);
  if (!isFloat(tensor.type))
    fail(op, std::string(name) + " must be a float, got " + tensor.describe());
  return tensor.floats[0];
}

void expectShape(Operation *op, const HostTensor &tensor,
                 const std::vector<int64_t> &shape, const char *what) {
  if (tensor.shape != shape)
    fail(op, std::string(what) + " has shape " + shapeString(tensor.shape) +
                 " at run time; expected " + shapeString(shape));
}

namespace {

int64_t storageBytes(ElementType t) {
  switch (t) {
  case ElementType::F16:
  case ElementType::BF16:
    return 2;
  case ElementType::I64:
    return 8;
  case ElementType::I1:
    return 1;
  default:
    return 4;
  }
}

} // namespace

void Frame::enableArena(int64_t bytes) {
  arena.assign(static_cast<size_t>(bytes), 0xFF);
}

void Frame::storeInArena(Operation *op, Value value, int64_t offset) {
  auto it = tensors.find(value);
  if (it == tensors.end())
    return;
  const HostTensor &t = it->second;
  int64_t width = storageBytes(t.type);
  int64_t n = t.numElements();
  if (offset < 0 || offset + n * width > static_cast<int64_t>(arena.size()))
    fail(op, "result of " + t.describe() + " at arena offset " +
                 std::to_string(offset) + " does not fit in the " +
                 std::to_string(arena.size()) + "-byte arena");
  uint8_t *p = arena.data() + offset;
  for (int64_t i = 0; i < n; ++i, p += width) {
    switch (t.type) {
    case ElementType::F32: {
      float f = static_cast<float>(t.floats[i]);
      std::memcpy(p, &f, 4);
      break;
    }
    case ElementType::F16: {
      uint16_t h = toF16Bits(t.floats[i]);
      std::memcpy(p, &h, 2);
      break;
    }
    case ElementType::BF16: {
      uint16_t h = toBF16Bits(t.floats[i]);
      std::memcpy(p, &h, 2);
      break;
    }
    case ElementType::I32: {
      int32_t v = static_cast<int32_t>(t.ints[i]);
      std::memcpy(p, &v, 4);
      break;
    }
    case ElementType::I64:
      std::memcpy(p, &t.ints[i], 8);
      break;
    case ElementType::I1:
      *p = static_cast<uint8_t>(t.ints[i]);
      break;
    }
  }
  slots[value] = {offset, t.type, t.shape};
  tensors.erase(it);
}

const HostTensor &Frame::get(Operation *user, Value value) const {
  if (auto slot = slots.find(value); slot != slots.end()) {
    // Decoded afresh at every read: the arena's bytes are the value.
    const ArenaSlot &s = slot->second;
    HostTensor t = HostTensor::zeros(s.type, s.shape);
    int64_t width = storageBytes(s.type);
    const uint8_t *p = arena.data() + s.offset;
    for (int64_t i = 0, n = t.numElements(); i < n; ++i, p += width) {
      switch (s.type) {
      case ElementType::F32: {
        float f;
        std::memcpy(&f, p, 4);
        t.floats[i] = f;
        break;
      }
      case ElementType::F16: {
        uint16_t h;
        std::memcpy(&h, p, 2);
        t.floats[i] = fromF16Bits(h);
        break;
      }
      case ElementType::BF16: {
        uint16_t h;
        std::memcpy(&h, p, 2);
        t.floats[i] = fromBF16Bits(h);
        break;
      }
      case ElementType::I32: {
        int32_t v;
        std::memcpy(&v, p, 4);
        t.ints[i] = v;
        break;
      }
      case ElementType::I64:
        std::memcpy(&t.ints[i], p, 8);
        break;
      case ElementType::I1:
        t.ints[i] = *p;
        break;
      }
    }
    decoded.push_back(std::move(t));
    return decoded.back();
  }
  auto it = tensors.find(value);
  if (it == tensors.end())
    fail(user, "uses a value the interpreter has not computed (not a tensor, "
               "or defined outside the function)");
  return it->second;
}

int64_t Frame::getIndex(Operation *user, Value value) const {
  auto it = indices.find(value);
  if (it == indices.end())
    fail(user, "uses an index value the interpreter has not computed");
  return it->second;
}

void Frame::normalize(HostTensor &tensor) const {
  switch (tensor.type) {
  case ElementType::F32:
  case ElementType::F16:
  case ElementType::BF16:
    if (precision == Precision::F32)
      for (double &x : tensor.floats)
        x = roundTo(tensor.type, x);
    break;
  case ElementType::I32:
    for (int64_t &x : tensor.ints)
      x = wrapI32(x);
    break;
  case ElementType::I1:
    for (int64_t &x : tensor.ints)
      x = x != 0;
    break;
  case ElementType::I64:
    break;
  }
}

void Frame::bind(Operation *op, Value result, HostTensor tensor) {
  auto type = cast<RankedTensorType>(result.getType());
  ElementType expected = elementTypeOf(op, type.getElementType());
  if (tensor.type != expected)
    fail(op, std::string("computed ") + toString(tensor.type) +
                 " where the result type has " + toString(expected) +
                 " (a reference backend bug)");
  bool matches = tensor.rank() == type.getRank();
  for (int64_t d = 0; matches && d < type.getRank(); ++d)
    matches = type.isDynamicDim(d) || type.getDimSize(d) == tensor.shape[d];
  if (!matches) {
    std::string s;
    llvm::raw_string_ostream os(s);
    os << type;
    auto opResult = dyn_cast<OpResult>(result);
    std::string which =
        opResult ? "result #" + std::to_string(opResult.getResultNumber())
                 : std::string("value");
    fail(op, which + " has shape " + shapeString(tensor.shape) +
                 " at run time, which does not fit its type " + os.str());
  }
  normalize(tensor);
  tensors[result] = std::move(tensor);
}

void Frame::bindIndex(Value result, int64_t value) { indices[result] = value; }

std::vector<int64_t> Frame::shapeWithSizes(Operation *op, RankedTensorType type,
                                           ValueRange sizes) const {
  std::vector<int64_t> shape;
  size_t next = 0;
  for (int64_t d : type.getShape()) {
    if (!ShapedType::isDynamic(d)) {
      shape.push_back(d);
      continue;
    }
    if (next >= sizes.size())
      fail(op, "has fewer index operands than dynamic result dims");
    int64_t size = getIndex(op, sizes[next++]);
    if (size < 0)
      fail(op, "dynamic size operand " + std::to_string(next - 1) + " is " +
                   std::to_string(size) + "; sizes must be >= 0");
    shape.push_back(size);
  }
  return shape;
}

} // namespace ls2c::reference::detail

namespace ls2c::reference {

std::optional<ElementType> elementTypeFromMLIR(mlir::Type type) {
  if (type.isF32())
    return ElementType::F32;
  if (type.isF16())
    return ElementType::F16;
  if (type.isBF16())
    return ElementType::BF16;
  if (type.isInteger(32))
    return ElementType::I32;
  if (type.isInteger(64))
    return ElementType::I64;
  if (type.isInteger(1))
    return ElementType::I1;
  return std::nullopt;
}

} // namespace ls2c::reference
