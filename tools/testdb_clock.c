/*
 * testdb_clock.so: steps a server's wall clock for the torture suite's clock nemesis.
 *
 * LD_PRELOADed into PostgreSQL by tools/testdb.sh when TESTDB_FAKETIME_FILE is set: every
 * gettimeofday(), time() and clock_gettime(CLOCK_REALTIME*) returns the real time plus the
 * offset in seconds written in that file ("+60", "-60", "+0"). The file is replaced atomically
 * (rename) and re-read on every call, so a write steps the clock of every process at once.
 * CLOCK_MONOTONIC is left alone.
 *
 * Why not libfaketime: its file-offset mode is not safe in signal handlers or across threads.
 * A clock read that interrupts another one (PostgreSQL reads the clock in its SIGALRM timeout
 * handler) gets the real time, not the offset one, about once in a few hundred reads: the
 * clock flickers by the whole offset instead of stepping once. PostgreSQL then fires
 * idle_in_transaction_session_timeout up to the offset early, which is not what a server whose
 * clock stepped does. Everything here is async-signal-safe (open/pread/close, no stdio, no
 * locks) and keeps errno.
 *
 * Only for single-clock-reader servers that need nothing else faked: PostgreSQL's timeouts are
 * relative (setitimer, epoll) and its deadlines use CLOCK_MONOTONIC. MariaDB waits on absolute
 * CLOCK_REALTIME deadlines (pthread_cond_timedwait), which libfaketime also shifts, so MariaDB
 * stays on libfaketime.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static char offset_path[4096];
static long last_offset; /* last value read; used when the file cannot be read */

__attribute__((constructor)) static void testdb_clock_init(void) {
    const char *p = getenv("TESTDB_CLOCK_FILE");
    size_t i = 0;
    if (p == NULL) return;
    for (; p[i] != '\0' && i + 1 < sizeof offset_path; ++i) offset_path[i] = p[i];
    offset_path[i] = '\0';
}

/* Offset in seconds: "+N", "-N" or "N", anything after the digits ignored. */
static long current_offset(void) {
    char buf[32];
    long value = 0;
    int negative = 0, digits = 0, saved = errno;
    ssize_t n = -1;
    if (offset_path[0] != '\0') {
        int fd = (int)syscall(SYS_openat, AT_FDCWD, offset_path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            n = (ssize_t)syscall(SYS_pread64, fd, buf, sizeof buf - 1, (off_t)0);
            syscall(SYS_close, fd);
        }
    }
    if (n > 0) {
        ssize_t i = 0;
        if (buf[0] == '+' || buf[0] == '-') negative = buf[i++] == '-';
        for (; i < n && buf[i] >= '0' && buf[i] <= '9'; ++i, ++digits) value = value * 10 + (buf[i] - '0');
        if (digits > 0) __atomic_store_n(&last_offset, negative ? -value : value, __ATOMIC_RELAXED);
    }
    errno = saved;
    return __atomic_load_n(&last_offset, __ATOMIC_RELAXED);
}

static int real_clock(clockid_t clock, struct timespec *ts) {
    return (int)syscall(SYS_clock_gettime, clock, ts);
}

static int is_wall_clock(clockid_t clock) {
    return clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE || clock == CLOCK_TAI;
}

int clock_gettime(clockid_t clock, struct timespec *ts) {
    int rc = real_clock(clock, ts);
    if (rc == 0 && is_wall_clock(clock)) /* rc != 0 for a bad ts */ ts->tv_sec += current_offset();
    return rc;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
    struct timespec ts;
    (void)tz; /* obsolete; glibc ignores it too */
    if (real_clock(CLOCK_REALTIME, &ts) != 0) return -1;
    tv->tv_sec = ts.tv_sec + current_offset();
    tv->tv_usec = ts.tv_nsec / 1000;
    return 0;
}

time_t time(time_t *out) {
    struct timespec ts;
    time_t now;
    real_clock(CLOCK_REALTIME, &ts);
    now = ts.tv_sec + current_offset();
    if (out != NULL) *out = now;
    return now;
}
