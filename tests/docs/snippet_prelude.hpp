// What the C++ fragments of the README and the site take as given, when tests/docs/check_readme.sh
// compiles them: a fragment that is not a piece of examples/*.cpp becomes the body of a function
//     void fragment_N(sqlock::database& db) { { FRAGMENT } }
// after this file (a fragment's leading #include and using lines go before that function), and
// all of them are compiled and linked against the build's libsqlock in one program that never
// calls them. Only the stand-ins for the application's own code are here: everything of sqlock
// that a fragment names must come from its public headers.
#pragma once

#include <chrono>
#include <cstdint>
#include <iostream>
#include <mutex>
#include <shared_mutex>
#include <sqlock/sqlock.hpp>
#include <string_view>
#include <thread>
#include <vector>

using namespace std::chrono_literals;

// guides/renewal.md: the application's logger, and its work, done chunk by chunk with a token.
struct work_item {};
inline std::vector<work_item> work;
inline void log_warning(std::string_view /*lock*/, std::string_view /*reason*/,
                        std::string_view /*message*/) {}
inline void process(const work_item& /*chunk*/, std::int64_t /*fencing_token*/) {}
