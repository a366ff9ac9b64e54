/* The four kinds of lock handle behind one Python type: how each is opened, waited for,
 * released, checked and closed through libsqlock-c. A leader election is a lock too:
 * campaign is its acquire, resign its release. */
#include "common.h"

#include <string.h>

/* ---------------------------------------------------------------- opening */

static void lock_options(sqlock_lock_options* o, const lock_settings* s, recorder* events) {
    sqlock_lock_options_init(o);
    o->strategy = s->strategy;
    if (s->ttl_ms > 0)
        o->ttl_ms = s->ttl_ms;
    if (s->retry_min_ms > 0)
        o->retry_min_ms = s->retry_min_ms;
    if (s->retry_max_ms > 0)
        o->retry_max_ms = s->retry_max_ms;
    o->renew = s->renew;
    o->on_lost = recorder_on_lost;
    o->on_at_risk = recorder_on_at_risk;
    o->callback_user = events;
}

static int open_leader(void** out, sqlock_db* db, const lock_settings* s, recorder* events,
                       sqlock_error** err) {
    sqlock_leader_options o;
    sqlock_leader_options_init(&o);
    if (s->ttl_ms > 0)
        o.ttl_ms = s->ttl_ms;
    if (s->retry_min_ms > 0)
        o.retry_min_ms = s->retry_min_ms;
    if (s->retry_max_ms > 0)
        o.retry_max_ms = s->retry_max_ms;
    o.on_lost = recorder_on_lost;
    o.on_at_risk = recorder_on_at_risk;
    o.callback_user = events;
    return sqlock_leader_open((sqlock_leader**)out, db, s->name, &o, err);
}

int open_kind(int kind, void** out, sqlock_db* db, const lock_settings* s, recorder* events,
              sqlock_error** err) {
    sqlock_lock_options o;
    lock_options(&o, s, events);
    switch (kind) {
    case KIND_MUTEX:
        return sqlock_mutex_open((sqlock_mutex**)out, db, s->name, &o, err);
    case KIND_SEMAPHORE:
        return sqlock_semaphore_open((sqlock_semaphore**)out, db, s->name, s->count, &o, err);
    case KIND_SHARED_MUTEX:
        return sqlock_shared_mutex_open((sqlock_shared_mutex**)out, db, s->name, s->count, &o, err);
    case KIND_LEADER:
        return open_leader(out, db, s, events, err);
    default:
        return SQLOCK_E_INVALID_ARGUMENT;
    }
}

/* ---------------------------------------------------------------- mutex */

static int mutex_acquire(void* h, int shared, int64_t timeout_ms, sqlock_cancel* cancel,
                         int64_t* token, sqlock_error** err) {
    (void)shared;
    return sqlock_mutex_lock(h, timeout_ms, cancel, token, err);
}
static int mutex_release(void* h, int shared, sqlock_error** err) {
    (void)shared;
    return sqlock_mutex_unlock(h, err);
}
static int mutex_owns(void* h, int shared) {
    (void)shared;
    return sqlock_mutex_owns(h);
}
static int mutex_start(void* h, int shared, int64_t timeout_ms, sqlock_acquire_fn done, void* user,
                       sqlock_acquire** out, sqlock_error** err) {
    (void)shared;
    return sqlock_mutex_lock_start(h, timeout_ms, done, user, out, err);
}
static void mutex_close(void* h) {
    sqlock_mutex_close(h);
}

/* ---------------------------------------------------------------- semaphore */

static int semaphore_acquire(void* h, int shared, int64_t timeout_ms, sqlock_cancel* cancel,
                             int64_t* token, sqlock_error** err) {
    (void)shared;
    return sqlock_semaphore_acquire(h, timeout_ms, cancel, token, err);
}
static int semaphore_release(void* h, int shared, sqlock_error** err) {
    (void)shared;
    return sqlock_semaphore_release(h, err);
}
static int semaphore_owns(void* h, int shared) {
    (void)shared;
    return sqlock_semaphore_owns(h);
}
static int semaphore_start(void* h, int shared, int64_t timeout_ms, sqlock_acquire_fn done,
                           void* user, sqlock_acquire** out, sqlock_error** err) {
    (void)shared;
    return sqlock_semaphore_acquire_start(h, timeout_ms, done, user, out, err);
}
static void semaphore_close(void* h) {
    sqlock_semaphore_close(h);
}

/* ---------------------------------------------------------------- shared mutex */

static int shared_acquire(void* h, int shared, int64_t timeout_ms, sqlock_cancel* cancel,
                          int64_t* token, sqlock_error** err) {
    return shared ? sqlock_shared_mutex_lock_shared(h, timeout_ms, cancel, token, err)
                  : sqlock_shared_mutex_lock(h, timeout_ms, cancel, token, err);
}
static int shared_release(void* h, int shared, sqlock_error** err) {
    return shared ? sqlock_shared_mutex_unlock_shared(h, err) : sqlock_shared_mutex_unlock(h, err);
}
static int shared_owns(void* h, int shared) {
    return shared ? sqlock_shared_mutex_owns_shared(h) : sqlock_shared_mutex_owns(h);
}
static int shared_start(void* h, int shared, int64_t timeout_ms, sqlock_acquire_fn done, void* user,
                        sqlock_acquire** out, sqlock_error** err) {
    return shared ? sqlock_shared_mutex_lock_shared_start(h, timeout_ms, done, user, out, err)
                  : sqlock_shared_mutex_lock_start(h, timeout_ms, done, user, out, err);
}
static void shared_close(void* h) {
    sqlock_shared_mutex_close(h);
}

/* ---------------------------------------------------------------- leader */

static int leader_acquire(void* h, int shared, int64_t timeout_ms, sqlock_cancel* cancel,
                          int64_t* token, sqlock_error** err) {
    (void)shared;
    return sqlock_leader_campaign(h, timeout_ms, cancel, token, err);
}
static int leader_release(void* h, int shared, sqlock_error** err) {
    (void)shared;
    return sqlock_leader_resign(h, err);
}
static int leader_owns(void* h, int shared) {
    (void)shared;
    return sqlock_leader_is_leader(h);
}
static int leader_start(void* h, int shared, int64_t timeout_ms, sqlock_acquire_fn done, void* user,
                        sqlock_acquire** out, sqlock_error** err) {
    (void)shared;
    return sqlock_leader_campaign_start(h, timeout_ms, done, user, out, err);
}
static void leader_close(void* h) {
    sqlock_leader_close(h);
}

static const lock_ops kinds[] = {
    {"mutex", mutex_acquire, mutex_release, mutex_owns, mutex_start, mutex_close},
    {"semaphore", semaphore_acquire, semaphore_release, semaphore_owns, semaphore_start,
     semaphore_close},
    {"shared_mutex", shared_acquire, shared_release, shared_owns, shared_start, shared_close},
    {"leader", leader_acquire, leader_release, leader_owns, leader_start, leader_close},
};

const lock_ops* ops_of(int kind) {
    return kind >= 0 && kind < (int)(sizeof kinds / sizeof kinds[0]) ? &kinds[kind] : NULL;
}

/* ---------------------------------------------------------------- details */

PyObject* mutex_details(void* h) {
    int64_t token = 0;
    const int has = sqlock_mutex_token(h, &token, NULL) == SQLOCK_OK;
    PyObject* t = has ? PyLong_FromLongLong(token) : Py_NewRef(Py_None);
    if (!t)
        return NULL;
    return Py_BuildValue("(NiL)", t, sqlock_mutex_lost_reason(h),
                         (long long)sqlock_mutex_hold_count(h));
}

PyObject* semaphore_permit(void* h) {
    int64_t permit = 0;
    sqlock_error* err = NULL;
    const int rc = sqlock_semaphore_permit(h, &permit, &err);
    if (rc != SQLOCK_OK)
        return raise_sqlock(rc, err);
    return PyLong_FromLongLong(permit);
}

PyObject* leader_details(void* h) {
    return Py_BuildValue("(iL)", sqlock_leader_is_leader(h), (long long)sqlock_leader_term(h));
}

PyObject* leader_current(void* h) {
    sqlock_leader_info info;
    sqlock_error* err = NULL;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    int rc;
    Py_BEGIN_ALLOW_THREADS rc = sqlock_leader_current(h, &info, &err);
    Py_END_ALLOW_THREADS if (rc != SQLOCK_OK) return raise_sqlock(rc, err);
    if (!info.has_leader)
        Py_RETURN_NONE;
    return Py_BuildValue("{s:L,s:L,s:L,s:L,s:s,s:s}", "term", (long long)info.term, "pid",
                         (long long)info.pid, "remaining_ms", (long long)info.remaining_ms,
                         "leading_for_ms", (long long)info.leading_for_ms, "id", info.id, "host",
                         info.host);
}
