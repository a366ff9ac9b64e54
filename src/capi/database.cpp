// The C API's database handle and the version functions.
#include "capi/errors.hpp"
#include "capi/handles.hpp"
#include "sqlock/version.hpp"

#include <cstdlib>
#include <cstring>

using sqlock::capi::guarded;
using sqlock::capi::require;

extern "C" {

int sqlock_c_api_version(void) {
    return SQLOCK_C_API_VERSION;
}

const char* sqlock_version_string(void) {
    return SQLOCK_VERSION_STRING;
}

int sqlock_db_open(sqlock_db** out, const char* url, const sqlock_db_options* options,
                   sqlock_error** err) {
    return guarded(err, [&] {
        require(out, "out");
        require(url, "url");
        const auto o = sqlock::capi::read_options(options, sqlock::capi::default_db_options(),
                                                  "sqlock_db_options");
        *out = new sqlock_db{sqlock::connect(url, sqlock::capi::to_connect_options(o))};
        return SQLOCK_OK;
    });
}

void sqlock_db_close(sqlock_db* db) {
    delete db;
}

int sqlock_db_migrate(sqlock_db* db, sqlock_error** err) {
    return guarded(err, [&] {
        require(db, "db");
        db->db.migrate();
        return SQLOCK_OK;
    });
}

const char* sqlock_db_backend(const sqlock_db* db) {
    // to_string() views a string literal: NUL-terminated.
    return db ? sqlock::to_string(db->db.backend()).data() : "";
}

int sqlock_db_reap(sqlock_db* db, int64_t* deleted, sqlock_error** err) {
    return guarded(err, [&] {
        require(db, "db");
        const auto n = db->db.reap();
        if (deleted)
            *deleted = static_cast<int64_t>(n);
        return SQLOCK_OK;
    });
}

int sqlock_db_fencing_condition(sqlock_db* db, const char* name_placeholder,
                                const char* token_placeholder, char** out, sqlock_error** err) {
    return guarded(err, [&] {
        require(db, "db");
        require(name_placeholder, "name_placeholder");
        require(token_placeholder, "token_placeholder");
        require(out, "out");
        const auto text = db->db.fencing_condition(name_placeholder, token_placeholder);
        // malloc, so that sqlock_free() (free) is right for it in every language.
        auto* copy = static_cast<char*>(std::malloc(text.size() + 1));
        if (!copy)
            throw std::bad_alloc();
        std::memcpy(copy, text.c_str(), text.size() + 1);
        *out = copy;
        return SQLOCK_OK;
    });
}

} // extern "C"
