// The absolute paths of this build's programs, in one file (as tests/conformance/paths.cpp),
// so that the compiler cache serves every other file to a build in another folder.
#include "fixture.hpp"

namespace capi_test {

const char* cli_path() {
    return SQLOCK_CLI_PATH;
}

const char* c_contender_path() {
    return SQLOCK_C_CONTENDER_PATH;
}

const char* cpp_contender_path() {
    return SQLOCK_CONTENDER_PATH;
}

} // namespace capi_test
