#define DOCTEST_CONFIG_IMPLEMENT
#include "fixture.hpp"

#include <doctest/doctest.h>
#include <iostream>

int main(int argc, char** argv) {
    try {
        const auto& t = capi_test::under_test();
        std::cout << "C API suite on " << t.backend << ", " << t.strategy_name << "\n";
        capi_test::db(); // connect and migrate up front: a dead server fails fast and clearly
    } catch (const std::exception& e) {
        std::cerr << "cannot run the C API suite: " << e.what() << "\n";
        return 1;
    }
    doctest::Context context(argc, argv);
    return context.run();
}
