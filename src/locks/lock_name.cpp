// What a lock name may be, for every lock type.
#include "locks/lock_name.hpp"

#include "sqlock/error.hpp"
#include "sqlock/mutex.hpp"

#include <string>

namespace sqlock::detail {

namespace {

bool valid_utf8(std::string_view s) {
    std::size_t i = 0;
    while (i < s.size()) {
        const auto c = static_cast<unsigned char>(s[i]);
        std::size_t extra = 0;
        if (c < 0x80)
            extra = 0;
        else if ((c & 0xE0) == 0xC0 && c >= 0xC2)
            extra = 1;
        else if ((c & 0xF0) == 0xE0)
            extra = 2;
        else if ((c & 0xF8) == 0xF0 && c <= 0xF4)
            extra = 3;
        else
            return false;
        if (i + extra >= s.size())
            return false; // truncated sequence
        for (std::size_t k = 1; k <= extra; ++k)
            if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80)
                return false;
        i += extra + 1;
    }
    return true;
}

} // namespace

void validate_lock_name(std::string_view name) {
    if (name.empty())
        throw error(errc::invalid_argument, "lock name must not be empty");
    if (name.size() > max_name_length)
        throw error(errc::invalid_argument, "lock name is " + std::to_string(name.size()) +
                                                " bytes; the limit is " +
                                                std::to_string(max_name_length) + " (\"" +
                                                std::string(name.substr(0, 40)) + "...\")");
    if (name.find('\0') != std::string_view::npos)
        throw error(errc::invalid_argument, "lock name must not contain NUL bytes");
    if (!valid_utf8(name))
        throw error(errc::invalid_argument, "lock name must be valid UTF-8");
    // The unit separator joins a semaphore's or shared_mutex's name to the role of each of its
    // locks ("NAME<0x1f>permit 2", locks/permits.hpp): reserved.
    if (name.find('\x1f') != std::string_view::npos)
        throw error(errc::invalid_argument,
                    "lock name must not contain the unit separator (byte 0x1f): sqlock reserves "
                    "it for the locks a semaphore or shared_mutex is made of");
}

} // namespace sqlock::detail
