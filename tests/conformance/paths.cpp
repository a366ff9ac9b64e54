// The absolute paths of this build, in one file: its compile definitions name the build and
// source folders, so only this file misses the compiler cache when a clone lives elsewhere.
#include "backend_fixture.hpp"

namespace test {

const char* cli_path() {
    return SQLOCK_CLI_PATH;
}
const char* contender_path() {
    return SQLOCK_CONTENDER_PATH;
}
const char* elector_path() {
    return SQLOCK_ELECTOR_PATH;
}
const char* source_dir() {
    return SQLOCK_SOURCE_DIR;
}

} // namespace test
