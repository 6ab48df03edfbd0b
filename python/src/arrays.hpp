// Checks of the DLPack arrays that reach the Python binding: dtype, shape, contiguity and device,
// each failure a metrale.InvalidArgumentError (a ValueError) naming the function, the argument and
// its value. The library validates everything else (K % 16, scale_2, offsets) itself.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include "metrale/metrale.hpp"

namespace metrale::python {

namespace nb = nanobind;

// Inputs accept read-only arrays (checkpoints are memory-mapped read-only); outputs arrive as
// Python objects and go through writable(), which refuses a read-only array by name.
using Array = nb::ndarray<nb::ro>;

// The element kinds the library takes; raw integer views of the same width are accepted too
// (bf16 as uint16/int16, e4m3 as uint8/int8), since NumPy and CuPy cannot export bf16 or e4m3.
enum class Kind { bf16, e4m3, u8, f32, i32, u64 };

// Where the arrays of one call live: the CPU, or one CUDA device.
struct Place {
  int device_type = 0;  // 0: not yet seen
  int device_id = 0;
};
inline constexpr Place kHost{1, 0};  // DLPack kDLCPU, device 0

// Raises metrale.Error (or its ValueError subclass for invalid arguments) with `message`.
[[noreturn]] void raise(Status status, const std::string& message);

// Raises when `result` failed, with the library's message.
void raise_if_failed(const Result& result);

// The Python classes raise() uses: metrale.Error and metrale.InvalidArgumentError.
void set_error_types(nb::object error, nb::object invalid_argument);

// The output array `object` (argument `name` of `who`) as an Array, refused when it is read-only:
// writing into a read-only memory map faults, and a NumPy array with writeable=False is a promise
// not to change it. Only a DLPack export that flags it (versioned DLPack, the buffer protocol)
// tells; NumPy's does.
Array writable(std::string_view who, std::string_view name, nb::handle object);

// Checks `a` is `kind`, C-contiguous, of `shape` (a -1 entry matches anything), and on the same
// device as every array checked before with this `place`. Returns the data pointer.
const void* check_array(std::string_view who, std::string_view name, const Array& a, Kind kind,
                        std::initializer_list<std::int64_t> shape, Place& place);

// The backend the arrays' device selects: host arrays -> CPU, CUDA arrays -> our own kernels.
Backend backend_of(std::string_view who, const Place& place);

}  // namespace metrale::python
