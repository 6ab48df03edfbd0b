// Checks of the DLPack arrays that reach the Python binding (arrays.hpp).
#include "arrays.hpp"

#include <utility>

#include <fmt/format.h>

namespace metrale::python {

namespace {

namespace dl = nb::dlpack;

// The exception types of the Python package, set once by metrale/__init__.py.
nb::object& error_type() {
  static nb::object* type = new nb::object();  // leaked on purpose: lives as long as the module
  return *type;
}
nb::object& invalid_argument_type() {
  static nb::object* type = new nb::object();
  return *type;
}

constexpr int kDeviceCpu = 1;   // DLPack kDLCPU
constexpr int kDeviceCuda = 2;  // DLPack kDLCUDA

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::bf16: return "bfloat16 (or its bits as uint16)";
    case Kind::e4m3: return "float8_e4m3fn (or its bytes as uint8)";
    case Kind::u8: return "uint8";
    case Kind::f32: return "float32";
    case Kind::i32: return "int32";
    case Kind::u64: return "uint64";
  }
  return "?";
}

bool dtype_matches(dl::dtype t, Kind kind) {
  const auto code = static_cast<dl::dtype_code>(t.code);
  const bool integer = code == dl::dtype_code::Int || code == dl::dtype_code::UInt;
  if (t.lanes != 1) return false;
  switch (kind) {
    case Kind::bf16: return t.bits == 16 && (code == dl::dtype_code::Bfloat || integer);
    case Kind::e4m3: return t.bits == 8 && (code == dl::dtype_code::Float8_E4M3FN || integer);
    case Kind::u8: return t.bits == 8 && integer;
    case Kind::f32: return t.bits == 32 && code == dl::dtype_code::Float;
    case Kind::i32: return t.bits == 32 && code == dl::dtype_code::Int;
    case Kind::u64: return t.bits == 64 && integer;
  }
  return false;
}

// NumPy's and torch's names for the DLPack type codes they export: int, uint, float, bfloat and
// complex with their bits, bool; other codes (the float8 variants among them) by number.
std::string dtype_text(dl::dtype t) {
  static constexpr const char* kNames[] = {"int", "uint", "float", nullptr, "bfloat", "complex"};
  constexpr int kBool = 6;  // DLPack kDLBool (8 bits in NumPy and torch)
  const int code = static_cast<int>(t.code);
  if (code == kBool) return "bool";
  const char* name = code >= 0 && code < kBool ? kNames[code] : nullptr;
  std::string text = name ? fmt::format("{}{}", name, t.bits)
                          : fmt::format("dlpack code {} with {} bits", code, t.bits);
  return t.lanes == 1 ? text : fmt::format("{} x {} lanes", text, t.lanes);
}

std::string shape_text(const Array& a) {
  std::string text = "[";
  for (size_t i = 0; i < a.ndim(); ++i) text += fmt::format("{}{}", i ? ", " : "", a.shape(i));
  return text + "]";
}

bool is_c_contiguous(const Array& a) {
  for (size_t i = 0; i < a.ndim(); ++i) {
    if (a.shape(i) == 0) return true;  // no elements: exporters give such arrays any strides
  }
  std::int64_t expected = 1;
  for (size_t i = a.ndim(); i-- > 0;) {
    // A dimension of extent 1 may carry any stride.
    if (a.shape(i) != 1 && a.stride(i) != expected) return false;
    expected *= static_cast<std::int64_t>(a.shape(i));
  }
  return true;
}

const char* device_name(int device_type) {
  return device_type == kDeviceCpu ? "cpu" : device_type == kDeviceCuda ? "cuda" : "other";
}

// torch's own out= arguments refuse a tensor that requires grad while grad mode is on: the values
// written would bypass autograd. The same rule here (torch is loaded whenever such a tensor
// exists).
bool requires_grad_now(nb::handle object) {
  if (!nb::hasattr(object, "requires_grad") || !nb::cast<bool>(object.attr("requires_grad")))
    return false;
  return nb::cast<bool>(nb::module_::import_("torch").attr("is_grad_enabled")());
}

}  // namespace

void raise(Status status, const std::string& message) {
  nb::object& type = status == Status::invalid_argument ? invalid_argument_type() : error_type();
  if (!type.is_valid()) throw std::runtime_error(message);
  PyErr_SetString(type.ptr(), message.c_str());
  throw nb::python_error();
}

void raise_if_failed(const Result& result) {
  if (!result.ok()) raise(result.status, result.message);
}

void set_error_types(nb::object error, nb::object invalid_argument) {
  error_type() = std::move(error);
  invalid_argument_type() = std::move(invalid_argument);
}

Array writable(std::string_view who, std::string_view name, nb::handle object) {
  if (requires_grad_now(object))
    raise(Status::invalid_argument,
          fmt::format("{}: {} requires grad, and metrale's kernels are not differentiable: pass "
                      "a tensor that does not require grad, or call under torch.no_grad()",
                      who, name));
  // A writable ndarray's import refuses an export flagged read-only; the read-only import then
  // tells a read-only array from something that is not an array at all.
  nb::ndarray<> out;
  if (nb::try_cast(object, out, /*convert=*/false)) return Array(out);
  Array read_only;
  if (nb::try_cast(object, read_only, /*convert=*/false))
    raise(Status::invalid_argument,
          fmt::format("{}: {} is read-only (a checkpoint's memory map, or writeable=False); "
                      "pass a writable array",
                      who, name));
  raise(Status::invalid_argument,
        fmt::format("{}: {} is a {}, not an array", who, name, nb::inst_name(object).c_str()));
}

const void* check_array(std::string_view who, std::string_view name, const Array& a, Kind kind,
                        std::initializer_list<std::int64_t> shape, Place& place) {
  const auto invalid = [&](const std::string& what) {
    raise(Status::invalid_argument, fmt::format("{}: {} {}", who, name, what));
  };
  if (!dtype_matches(a.dtype(), kind))
    invalid(fmt::format("has dtype {}, expected {}", dtype_text(a.dtype()), kind_name(kind)));
  if (a.ndim() != shape.size())
    invalid(fmt::format("has shape {}, expected {} dimensions", shape_text(a), shape.size()));
  size_t i = 0;
  for (std::int64_t want : shape) {
    if (want >= 0 && static_cast<std::int64_t>(a.shape(i)) != want)
      invalid(fmt::format("has shape {}: dimension {} is {}, expected {}", shape_text(a), i,
                          a.shape(i), want));
    ++i;
  }
  if (!is_c_contiguous(a)) invalid(fmt::format("of shape {} is not C-contiguous", shape_text(a)));
  if (a.device_type() != kDeviceCpu && a.device_type() != kDeviceCuda)
    invalid(fmt::format("lives on DLPack device type {}; only cpu and cuda arrays are taken",
                        a.device_type()));
  if (place.device_type == 0) {
    place = {a.device_type(), a.device_id()};
  } else if (place.device_type != a.device_type() || place.device_id != a.device_id()) {
    invalid(fmt::format("is on {}:{} but the arguments before it are on {}:{}",
                        device_name(a.device_type()), a.device_id(), device_name(place.device_type),
                        place.device_id));
  }
  return a.data();
}

Backend backend_of(std::string_view who, const Place& place) {
  if (place.device_type == kDeviceCuda) return Backend::automatic;
  if (place.device_type == kDeviceCpu) return Backend::cpu;
  raise(Status::invalid_argument,
        fmt::format("{}: no array argument to take the device from", who));
}

}  // namespace metrale::python
