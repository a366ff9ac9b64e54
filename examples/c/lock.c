/* The C API in one page (include/sqlock/sqlock.h): connect, take a lock, fence a write with the
 * grant's token, release.
 *   example_c_lock [URL [STORE]]   (default: sqlite:c-example.db and c-example.store)
 * Build: cc lock.c $(pkg-config --cflags --libs sqlock-c) */
#include <inttypes.h>
#include <sqlock/sqlock.h>
#include <stdio.h>

/* The resource the lock protects: a file that keeps the highest token that wrote to it and
 * refuses a writer with a lower one, as a storage service does with a fencing token. So a
 * holder that was paused past its lease, and lost the lock meanwhile, cannot overwrite the work
 * of the next holder. Returns 1 when written, 0 when refused, -1 on an I/O error. */
static int fenced_write(const char* store, int64_t token, const char* data) {
    int64_t highest = 0;
    FILE* f = fopen(store, "r");
    if (f) {
        if (fscanf(f, "%" SCNd64, &highest) != 1)
            highest = 0;
        fclose(f);
    }
    if (token <= highest)
        return 0;
    f = fopen(store, "w");
    if (!f)
        return -1;
    fprintf(f, "%" PRId64 " %s\n", token, data);
    return fclose(f) == 0 ? 1 : -1;
}

int main(int argc, char** argv) {
    const char* url = argc > 1 ? argv[1] : "sqlite:c-example.db";
    const char* store = argc > 2 ? argv[2] : "c-example.store";
    sqlock_db* db = NULL;
    sqlock_mutex* lock = NULL;
    sqlock_error* err = NULL;
    sqlock_lock_options options;
    int64_t token = 0;
    int rc, status = 1;

    /* The library must speak this header's API: same major version, at least its minor. */
    if (sqlock_c_api_version() / 1000 != SQLOCK_C_API_VERSION_MAJOR ||
        sqlock_c_api_version() < SQLOCK_C_API_VERSION) {
        fprintf(stderr, "libsqlock-c %d is too old for this program\n", sqlock_c_api_version());
        return 1;
    }
    if (sqlock_db_open(&db, url, NULL, &err) != SQLOCK_OK ||
        sqlock_db_migrate(db, &err) != SQLOCK_OK)
        goto fail;

    sqlock_lock_options_init(&options);
    options.strategy = SQLOCK_UNIQUE_KEY;
    options.ttl_ms = 30000;
    options.renew = 1; /* keep the lease alive while held */
    if (sqlock_mutex_open(&lock, db, "reports:nightly", &options, &err) != SQLOCK_OK)
        goto fail;

    rc = sqlock_mutex_lock(lock, 5000, NULL, &token, &err); /* wait at most 5 s */
    if (rc == SQLOCK_NOT_GRANTED) {
        printf("someone else holds reports:nightly\n");
        status = 0;
        goto done;
    }
    if (rc != SQLOCK_OK)
        goto fail;
    printf("locked reports:nightly with token %" PRId64 "\n", token);
    printf("write with token %" PRId64 ": %s\n", token,
           fenced_write(store, token, "report") == 1 ? "accepted" : "refused");
    /* What a stale holder (paused past its lease) would send: an older token. */
    printf("write with the older token %" PRId64 ": %s\n", token - 1,
           fenced_write(store, token - 1, "stale report") == 1 ? "accepted" : "refused");
    if (sqlock_mutex_unlock(lock, &err) != SQLOCK_OK)
        goto fail;
    printf("released\n");
    status = 0;
    goto done;

fail:
    fprintf(stderr, "sqlock (%s): %s\n", sqlock_code_name(sqlock_error_code(err)),
            sqlock_error_message(err));
done:
    sqlock_error_free(err);
    sqlock_mutex_close(lock);
    sqlock_db_close(db);
    return status;
}
