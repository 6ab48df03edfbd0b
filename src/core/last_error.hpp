// The thread-local message behind metrale_last_error(): each thread sees the message of its own
// last failed C ABI call ("" after a success), so concurrent callers never read each other's.
#pragma once

#include <string_view>

namespace metrale::core {

void set_last_error(std::string_view message);
void clear_last_error();
// Valid until the next set/clear on the calling thread.
const char* last_error();

}  // namespace metrale::core
