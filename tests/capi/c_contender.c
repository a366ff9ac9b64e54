/* Test helper, written in C99 against the C API only: takes lock NAME ITERATIONS times and
 * proves nobody else was inside, with the same protocol as tests/support/contender.cpp (so C,
 * C++ and `sqlock run` callers can contend on one name):
 *   sqlock_c_contender URL NAME TTL_MS ITERATIONS LOG STRATEGY
 * While holding the lock it creates LOG.inside with O_EXCL (failing if another holder is in its
 * critical section), appends "TOKEN PID" to LOG, and removes the marker before unlocking.
 * Exit codes: 0 ok, 3 overlap seen, 4 unlock reported a failure, 2 usage, 1 other error. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sqlock/sqlock.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int strategy_of(const char* name) {
    if (strcmp(name, "select_for_update") == 0)
        return SQLOCK_SELECT_FOR_UPDATE;
    if (strcmp(name, "optimistic_version") == 0)
        return SQLOCK_OPTIMISTIC_VERSION;
    return SQLOCK_UNIQUE_KEY;
}

static int report(const char* what, sqlock_error* err) {
    fprintf(stderr, "c_contender: %s: %s (%s)\n", what, sqlock_error_message(err),
            sqlock_code_name(sqlock_error_code(err)));
    sqlock_error_free(err);
    return 1;
}

/* The critical section: the marker proves exclusion, the log line records the grant. */
static int inside(const char* log, const char* marker, int64_t token) {
    char line[64];
    struct timespec pause = {0, 0};
    int fd = open(marker, O_CREAT | O_EXCL | O_WRONLY, 0644);
    if (fd < 0) {
        fprintf(stderr, "OVERLAP: %s exists (errno %d)\n", marker, errno);
        return 3;
    }
    close(fd);
    snprintf(line, sizeof line, "%" PRId64 " %ld\n", token, (long)getpid());
    fd = open(log, O_CREAT | O_APPEND | O_WRONLY, 0644);
    if (fd < 0 || write(fd, line, strlen(line)) != (ssize_t)strlen(line))
        return 1;
    close(fd);
    pause.tv_nsec = (200 + rand() % 800) * 1000L;
    nanosleep(&pause, NULL);
    unlink(marker);
    return 0;
}

int main(int argc, char** argv) {
    sqlock_db* db = NULL;
    sqlock_mutex* m = NULL;
    sqlock_error* err = NULL;
    sqlock_lock_options o;
    char marker[4096];
    int i, iterations, status = 0;

    if (argc != 7) {
        fprintf(stderr, "usage: sqlock_c_contender URL NAME TTL_MS ITERATIONS LOG STRATEGY\n");
        return 2;
    }
    srand((unsigned)getpid());
    snprintf(marker, sizeof marker, "%s.inside", argv[5]);
    iterations = atoi(argv[4]);
    sqlock_lock_options_init(&o);
    o.ttl_ms = atoll(argv[3]);
    o.strategy = strategy_of(argv[6]);
    if (sqlock_db_open(&db, argv[1], NULL, &err) != SQLOCK_OK)
        return report("open", err);
    if (sqlock_mutex_open(&m, db, argv[2], &o, &err) != SQLOCK_OK)
        return report("mutex", err);
    for (i = 0; i < iterations && status == 0; ++i) {
        int64_t token = 0;
        if (sqlock_mutex_lock(m, SQLOCK_WAIT_FOREVER, NULL, &token, &err) != SQLOCK_OK)
            return report("lock", err);
        status = inside(argv[5], marker, token);
        if (sqlock_mutex_unlock(m, &err) != SQLOCK_OK) {
            report("unlock", err);
            err = NULL;
            status = status ? status : 4;
        }
    }
    sqlock_mutex_close(m);
    sqlock_db_close(db);
    return status;
}
