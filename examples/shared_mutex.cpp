// The README's reader-writer example, compiled and run in CI so it cannot rot: readers share the
// lock, a writer has it alone, and the writer's token is above the readers'.
//   example_shared_mutex [URL]   (default: sqlite:example-shared-mutex.db)
#include <iostream>
#include <mutex>
#include <shared_mutex>
#include <sqlock/sqlock.hpp>

using namespace std::chrono_literals;

int main(int argc, char** argv) {
    try {
        sqlock::database db =
            sqlock::connect(argc > 1 ? argv[1] : "sqlite:example-shared-mutex.db");
        db.migrate();
        sqlock::shared_mutex other_reader(db, "catalog", {.ttl = 30s});
        std::shared_lock beside(other_reader); // another reader, inside all along
        std::int64_t read_token = 0;
        std::int64_t write_token = 0;

        // README-BEGIN shared_mutex
        sqlock::shared_mutex catalog(db, "catalog", {.ttl = 30s, .renew = true});
        {
            std::shared_lock reading(catalog); // beside other readers
            // catalog.token() fences what this reader does
            read_token = catalog.token();
        }
        beside.unlock(); // (the writer below waits for every reader to leave)
        {
            std::unique_lock writing(catalog); // alone; readers that come later wait for it
            // catalog.token() is above every earlier grant's, in either mode
            write_token = catalog.token();
        }
        // README-END shared_mutex

        std::cout << "read with token " << read_token << " beside another reader, then wrote "
                  << "with token " << write_token
                  << (write_token > read_token ? " (above the reader's)" : " (NOT above)") << "\n";
        return write_token > read_token ? 0 : 1;
    } catch (const sqlock::error& e) {
        std::cerr << "sqlock error (" << sqlock::to_string(e.code()) << "): " << e.what() << "\n";
        return 1;
    }
}
