// Uses only the installed public headers: no libpqxx / Connector / sqlite3 types leak.
#include <iostream>
#include <mutex>
#include <sqlock/sqlock.hpp>

int main(int argc, char** argv) {
    if (argc != 2)
        return 2;
    auto db = sqlock::connect(argv[1]);
    db.migrate();
    sqlock::mutex m(db, "install-smoke");
    std::unique_lock lock(m);
    std::cout << "token " << m.token() << " from sqlock " << SQLOCK_VERSION_STRING << "\n";
    return m.token() > 0 ? 0 : 1;
}
