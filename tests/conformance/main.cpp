#define DOCTEST_CONFIG_IMPLEMENT
#include "backend_fixture.hpp"

#include <doctest/doctest.h>
#include <iostream>

int main(int argc, char** argv) {
    try {
        const auto& b = test::backend();
        std::cout << "conformance suite on " << sqlock::to_string(b.kind) << "\n";
        test::db(); // connect and migrate up front: a dead server fails fast and clearly
    } catch (const std::exception& e) {
        std::cerr << "cannot run the conformance suite: " << e.what() << "\n";
        return 1;
    }
    doctest::Context context(argc, argv);
    return context.run();
}
