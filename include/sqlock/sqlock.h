/* sqlock — distributed locks in the SQL database you already have. */
/**
 * @file
 * sqlock.h: the C API of sqlock (library libsqlock-c, pkg-config sqlock-c, CMake
 * sqlock::sqlock_c), for C programs and for bindings from other languages (Python's cffi or
 * ctypes, Rust, Go, ...). Pure C: it compiles as C99 and as C++, and no C++ type or exception
 * crosses it. It wraps the C++ core (sqlock.hpp), so locks taken here and by C++ programs or
 * `sqlock run` on the same database and name exclude each other and share one sequence of
 * fencing tokens.
 *
 * @par Conventions (every function)
 * - Results: functions return an @c int that is one of ::sqlock_code: ::SQLOCK_OK (0), a
 *   positive outcome that is not a failure (::SQLOCK_NOT_GRANTED), or a negative error code.
 *   Out-parameters (the new handle of an `*_open` comes first, a token last but one) are
 *   written only on ::SQLOCK_OK.
 * - Errors: the last parameter, `sqlock_error **err`, receives the details of a failure as an
 *   error object owned by the caller (free it with sqlock_error_free()); *err is set to NULL
 *   when the call does not fail. @p err may be NULL when the code is enough. The previous value
 *   of *err is overwritten, never freed. Why an object rather than thread-local state (as
 *   libgit2's git_error_last()) or a per-handle message (as sqlite3_errmsg()): the details
 *   must be readable on any thread (a binding may hand a failure to another thread, a
 *   loss is reported from sqlock's own thread), and a per-handle slot is overwritten by the
 *   next call of another thread. librdkafka moved to owned error objects for the same reasons
 *   (rd_kafka_error_t). Accessors, not a struct, so that errors can gain fields without an ABI
 *   change.
 * - NULL: a NULL handle, name or required out-parameter is ::SQLOCK_E_INVALID_ARGUMENT (never a
 *   crash); the close/free functions accept NULL and do nothing.
 * - Handles are opaque. Each `*_open` returns a new handle the caller closes with the
 *   matching `*_close`; a lock handle keeps its database's connection pool alive, so the
 *   database handle may be closed first.
 * - Strings passed in are UTF-8, NUL-terminated, and copied before the call returns. Strings
 *   handed out are owned by the library: as stated per function (static, valid while an object
 *   lives, or allocated: freed with sqlock_free()).
 * - Durations are milliseconds in @c int64_t; tokens and terms are @c int64_t (always
 *   positive).
 * - Exceptions: every entry point catches everything; an unexpected C++ exception becomes
 *   ::SQLOCK_E_INTERNAL, std::bad_alloc ::SQLOCK_E_NO_MEMORY.
 *
 * @par Option structs
 * Every option struct starts with `size_t struct_size`. Fill one with its `*_init` function
 * (sets struct_size to the size this header knows and every field to its default), then
 * change the fields you need; a NULL options pointer means all defaults. Fields are only ever
 * added at the end, and a field added later treats 0 as "the default". The library reads the
 * first struct_size bytes: a program built with an older header (a smaller struct_size) gets
 * the defaults of the fields added since; one built with a newer header (a larger
 * struct_size) on an older library is accepted when every byte the library does not know is
 * zero, and refused with ::SQLOCK_E_INVALID_ARGUMENT otherwise (an option it would ignore).
 * Structs the library fills for the caller (sqlock_leader_info, sqlock_job_result) work the
 * other way round: the caller sets struct_size, the library writes no further. Event structs
 * handed to callbacks carry the struct_size the library filled: read a field past what your
 * header knows only when struct_size covers it.
 *
 * @par Threads
 * sqlock handles may be used from any thread unless a function says otherwise. A grant
 * (lock, permit, leadership won by a campaign) belongs to the handle *and the thread* that
 * took it, as in the C++ API: release it on that thread; another thread locking the same
 * handle waits like any other contender. A handle must not be closed while another thread is
 * inside a call on it.
 *
 * @par Waiting and cancelling
 * Waiting calls take `int64_t timeout_ms`: ::SQLOCK_WAIT_FOREVER (-1) blocks until granted,
 * 0 makes one attempt and never waits, a positive value waits at most that long (then
 * ::SQLOCK_NOT_GRANTED). They also take an optional ::sqlock_cancel: another thread (or a
 * signal handler) calls sqlock_cancel_request() and the wait returns ::SQLOCK_E_CANCELED. A
 * cancelled wait never leaves anything held: a grant that arrives after the cancel was
 * requested is given back before the call returns. A wait with a cancel token is one wait,
 * as one without (since 1.2): it keeps its place in the server's and in this process's lines
 * until granted or cancelled. It notices the request within ::SQLOCK_CANCEL_CHECK_MS while it
 * waits locally, and within ::SQLOCK_CANCEL_SERVER_MS while it waits in the server (a row
 * lock, a queue step; a statement in flight is not interrupted). A request stores a flag and
 * writes a byte to a pipe (async-signal-safe); a watcher thread of the library, started with
 * the first token, turns it into a stop request of the waits.
 *
 * @par Callbacks
 * The lost and at-risk callbacks of a lock run on sqlock's background threads (the lease
 * keeper's renewal and watchdog threads, shared by all locks of the process; never the thread
 * that took the lock), one call at a time per handle. They must return
 * quickly, must not block, and must not call sqlock functions on the handle they report on
 * (sqlock_cancel_request() is fine): set a flag, write to a pipe, request a cancel. A
 * callback never runs after the `*_close` of its handle has returned (close waits for one
 * that is running), so @c user needs to stay valid only until then; hence a callback must
 * never close its own handle.
 *
 * @par Versions and ABI
 * The ABI major version is the library's SONAME (libsqlock-c.so.1): it changes only with an
 * incompatible change. Minor versions add functions and option or event fields. A program
 * built with this header runs against any library with the same major version and an equal
 * or greater minor version; check at startup with
 * @code{.c}
 *   int v = sqlock_c_api_version();
 *   if (v / 1000 != SQLOCK_C_API_VERSION_MAJOR || v < SQLOCK_C_API_VERSION) abort();
 * @endcode
 */
#ifndef SQLOCK_H
#define SQLOCK_H

#include <stddef.h>
#include <stdint.h>

/** Marks the functions the library exports (the others stay hidden). */
#if defined(__GNUC__) || defined(__clang__)
#define SQLOCK_API __attribute__((visibility("default")))
#else
#define SQLOCK_API
#endif

/** ABI major version: the number in the library's SONAME (libsqlock-c.so.1). */
#define SQLOCK_C_API_VERSION_MAJOR 1
/** API minor version: raised when functions or fields are added. */
#define SQLOCK_C_API_VERSION_MINOR 2
/** The version this header describes: major * 1000 + minor (1002 for 1.2). */
#define SQLOCK_C_API_VERSION (SQLOCK_C_API_VERSION_MAJOR * 1000 + SQLOCK_C_API_VERSION_MINOR)

/** timeout_ms of a wait that blocks until granted (or cancelled). */
#define SQLOCK_WAIT_FOREVER INT64_C(-1)
/** The longest a wait with a ::sqlock_cancel takes to notice a cancel request while it waits
 *  locally, in ms. */
#define SQLOCK_CANCEL_CHECK_MS 200
/** The same while it waits in the server (since 1.2). */
#define SQLOCK_CANCEL_SERVER_MS 1000

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------- */
/** @name Versions */
/** @{ */

/** The C API version of the loaded library (major * 1000 + minor), to compare with
 *  ::SQLOCK_C_API_VERSION. Thread-safe. */
SQLOCK_API int sqlock_c_api_version(void);
/** The version of the sqlock release behind the library ("0.2.0"): a static string. */
SQLOCK_API const char* sqlock_version_string(void);
/** @} */

/* ---------------------------------------------------------------------------------------- */
/** @name Result codes and errors */
/** @{ */

/** What a call returns. Negative values are failures; each maps one category of the C++
 *  sqlock::errc, plus the few the C boundary adds. */
typedef enum sqlock_code {
    SQLOCK_OK = 0, /**< done; for a wait: granted */
    /** Not a failure: a wait ended without a grant (its timeout passed, or the one attempt of
     *  timeout 0 found it taken). *err is NULL. */
    SQLOCK_NOT_GRANTED = 1,
    SQLOCK_E_INVALID_ARGUMENT = -1, /**< bad input: NULL, a name, a TTL, a URL, an option */
    SQLOCK_E_CONNECTION = -2,       /**< the database cannot be reached or dropped us */
    SQLOCK_E_TIMEOUT = -3,          /**< a statement, connect or server-side deadline passed */
    SQLOCK_E_CONFLICT = -4,         /**< deadlock or serialization failure: retry */
    SQLOCK_E_LOCK_LOST = -5,        /**< the lock is no longer held by this owner */
    SQLOCK_E_SCHEMA_MISSING = -6,   /**< the lock tables are missing: run sqlock migrate */
    SQLOCK_E_SCHEMA_MISMATCH = -7,  /**< the lock tables are of a version this library lacks */
    SQLOCK_E_UNSUPPORTED = -8,      /**< the backend or strategy cannot do this */
    SQLOCK_E_TOPOLOGY = -9,         /**< the database's replication cannot keep this safe */
    SQLOCK_E_BACKEND = -10,         /**< another database error: see the SQLSTATE/native code */
    SQLOCK_E_CANCELED = -11,        /**< the wait was cancelled (sqlock_cancel_request()) */
    SQLOCK_E_NO_MEMORY = -12,       /**< out of memory */
    SQLOCK_E_INTERNAL = -99         /**< an unexpected failure inside sqlock (a bug: report it) */
} sqlock_code;

/** A short stable name of a code ("ok", "not_granted", "invalid_argument", "connection",
 *  "timeout", "conflict", "lock_lost", "schema_missing", "schema_mismatch", "unsupported",
 *  "topology", "backend", "canceled", "no_memory", "internal"; "unknown" otherwise). Static
 *  string. Thread-safe. */
SQLOCK_API const char* sqlock_code_name(int code);

/** The details of a failure (see the conventions above). Owned by the caller. */
typedef struct sqlock_error sqlock_error;

/** The error's code (a negative ::sqlock_code); ::SQLOCK_E_INVALID_ARGUMENT for NULL. */
SQLOCK_API int sqlock_error_code(const sqlock_error* error);
/** What went wrong: names the lock or database and what to do next; never contains a
 *  password. Valid until the error is freed; "" for NULL. */
SQLOCK_API const char* sqlock_error_message(const sqlock_error* error);
/** The five-character SQLSTATE the database reported, or "" (SQLite has none; also for
 *  NULL). Valid until the error is freed. */
SQLOCK_API const char* sqlock_error_sqlstate(const sqlock_error* error);
/** The database's native error code (MariaDB errno, SQLite extended result code), or 0. */
SQLOCK_API int sqlock_error_native_code(const sqlock_error* error);
/** "postgresql", "mysql", "sqlite", or "" when no database was involved. Valid until the
 *  error is freed. */
SQLOCK_API const char* sqlock_error_backend(const sqlock_error* error);
/** 1 when trying again later may succeed (connection trouble, conflicts, timeouts), else 0. */
SQLOCK_API int sqlock_error_retryable(const sqlock_error* error);
/** 1 when the server refused a connection for lack of free slots (temporary), else 0. */
SQLOCK_API int sqlock_error_server_full(const sqlock_error* error);
/** Frees an error. NULL: nothing. Thread-safe for distinct errors. */
SQLOCK_API void sqlock_error_free(sqlock_error* error);

/** Frees a string the library allocated (sqlock_db_fencing_condition()). NULL: nothing. */
SQLOCK_API void sqlock_free(void* memory);
/** @} */

/* ---------------------------------------------------------------------------------------- */
/** @name Cancelling a wait */
/** @{ */

/** A cancel token: one thread waits with it, another requests the cancel. It may serve many
 *  waits, one after another or at once (a request cancels them all). */
typedef struct sqlock_cancel sqlock_cancel;

/** A new cancel token, not requested, in *out (free it with sqlock_cancel_free()). The first
 *  one starts the library's watcher thread (see "Waiting and cancelling"). Errors: NULL out,
 *  no memory, no pipe or thread (::SQLOCK_E_INTERNAL). Thread-safe. */
SQLOCK_API int sqlock_cancel_new(sqlock_cancel** out, sqlock_error** err);
/** Requests the cancel: every wait using the token returns ::SQLOCK_E_CANCELED (a wait that
 *  begins later too, until sqlock_cancel_reset()). Any thread; also async-signal-safe (it
 *  stores one atomic flag and writes one byte to the library's watcher pipe). NULL: nothing. */
SQLOCK_API void sqlock_cancel_request(sqlock_cancel* cancel);
/** 1 when a cancel was requested and not reset, else 0 (also for NULL). Any thread. */
SQLOCK_API int sqlock_cancel_requested(const sqlock_cancel* cancel);
/** Clears a request, so the token can serve new waits. Any thread. NULL: nothing. */
SQLOCK_API void sqlock_cancel_reset(sqlock_cancel* cancel);
/** Frees the token. No wait may still use it. NULL: nothing. */
SQLOCK_API void sqlock_cancel_free(sqlock_cancel* cancel);
/** @} */

/* ---------------------------------------------------------------------------------------- */
/** @name Database */
/** @{ */

/** A connection pool to one lock database. Thread-safe: any number of threads may use one,
 *  and the locks made from it. */
typedef struct sqlock_db sqlock_db;

/** Options of sqlock_db_open() (the C++ sqlock::connect_options). */
typedef struct sqlock_db_options {
    size_t struct_size;         /**< sizeof(sqlock_db_options), set by sqlock_db_options_init() */
    const char* table_prefix;   /**< prefix of sqlock's tables; NULL: "sqlock_" */
    int64_t connect_timeout_ms; /**< bound on one connect; default 5000 */
    int64_t io_timeout_ms;      /**< bound on one reply (0: none); default 30000 */
    int64_t pool_size;          /**< most connections kept open; default 8 */
    int check_schema;           /**< refuse tables newer than this library; default 1 */
    /** Refuse (instead of warn about) asynchronous replicas; default 0. */
    int require_synchronous_replication;
    const char* password_file; /**< file holding the password (chmod 600); NULL: none */
} sqlock_db_options;

/** Fills @p options with struct_size and the defaults above. NULL: nothing. */
SQLOCK_API void sqlock_db_options_init(sqlock_db_options* options);

/** Opens a lock database: "postgresql://user:pw@host:port/db", "mysql://..." ("mariadb://"),
 *  "sqlite:///abs/path.db". Makes the first connection at once (wrong password, unreachable
 *  server: ::SQLOCK_E_CONNECTION). @p options may be NULL. On ::SQLOCK_OK, *out is a new handle
 *  to close with sqlock_db_close(). Thread-safe. */
SQLOCK_API int sqlock_db_open(sqlock_db** out, const char* url, const sqlock_db_options* options,
                              sqlock_error** err);
/** Closes the handle. Locks made from it keep the pool until they are closed. NULL:
 *  nothing. */
SQLOCK_API void sqlock_db_close(sqlock_db* db);
/** Creates or upgrades the lock tables (idempotent; several processes may run it at once). */
SQLOCK_API int sqlock_db_migrate(sqlock_db* db, sqlock_error** err);
/** "postgresql", "mysql" or "sqlite" (static string); "" for NULL. */
SQLOCK_API const char* sqlock_db_backend(const sqlock_db* db);
/** Deletes expired lock rows; their number in *deleted (may be NULL). */
SQLOCK_API int sqlock_db_reap(sqlock_db* db, int64_t* deleted, sqlock_error** err);
/** A SQL condition true only while lock NAME is held with token TOKEN, for a write in the
 *  caller's own transaction on this database: name_placeholder and token_placeholder are the
 *  caller's placeholder texts ("$1", "?"), bound by the caller to the name and token. On
 *  ::SQLOCK_OK *out is a new string to free with sqlock_free(). */
SQLOCK_API int sqlock_db_fencing_condition(sqlock_db* db, const char* name_placeholder,
                                           const char* token_placeholder, char** out,
                                           sqlock_error** err);
/** @} */

/* ---------------------------------------------------------------------------------------- */
/** @name Status: who holds what (since 1.1) */
/** @{ */

/** A snapshot of lock rows, read by sqlock_db_status() (what `sqlock status` shows). Owned by
 *  the caller: free it with sqlock_status_free(). Read-only, so any number of threads may
 *  read one at once. */
typedef struct sqlock_status sqlock_status;

/** One lock row of a ::sqlock_status (the C++ sqlock::lock_info). Times are the database's
 *  clock. Strings are never NULL ("" when absent) and stay valid until the snapshot is
 *  freed. The caller sets struct_size; the library writes no further. */
typedef struct sqlock_lock_info {
    size_t struct_size;    /**< set by the caller to sizeof(sqlock_lock_info) */
    const char* name;      /**< the name the application gave (a semaphore's own name) */
    const char* primitive; /**< "mutex", "semaphore" or "shared_mutex" */
    /** "" for a mutex; a semaphore's "permit K" or "permit queue"; a shared mutex's
     *  "reader K", "reader queue" or "writer" (one primitive may have several rows). */
    const char* role;
    const char* strategy; /**< "unique_key", "select_for_update" or "optimistic_version" */
    /** 1: held right now (a live lease, or a locked select_for_update row); 0: free; -1:
     *  unknown (select_for_update on a MariaDB server that hides row-lock holders). */
    int held;
    /** The holder's owner id "host:pid:nonce/handle", or "" when the row has none. A
     *  select_for_update holder is named as the server knows it: "host:pid" on SQLite,
     *  "connection N" on MariaDB (host is "" there, pid is known). A lease
     *  whose time ran out without a release keeps its last holder here (held is 0). */
    const char* owner;
    const char* host; /**< the holder's host name, or "" */
    int64_t pid;      /**< the holder's process id, or 0 */
    /** Lease strategies: the fencing token of the current grant while held, else of the last
     *  one; 0 for select_for_update rows (their tokens are not stored in the row). */
    int64_t token;
    int64_t hold_count; /**< the holder's re-entrant hold count (1 when free) */
    /** 1 when the row is a lease with an owner: expires_in_ms and expires_at mean something. */
    int has_lease;
    /** Lease time remaining (expires_at minus the database's now); negative once expired. */
    int64_t expires_in_ms;
    int64_t held_for_ms;     /**< how long the current holder has held it; 0 when not held */
    const char* acquired_at; /**< UTC "YYYY-MM-DD HH:MM:SS.ffffff", or "" */
    const char* expires_at;  /**< UTC, same format, or "" */
    /** 1: the server does not show who waits for this lock (waiter_count is 0 regardless). */
    int waiters_hidden;
    /** Callers the database shows waiting for this lock; read them with
     *  sqlock_status_waiter(). */
    int64_t waiter_count;
} sqlock_lock_info;

/** A caller waiting for a lock (the C++ sqlock::lock_waiter). As ::sqlock_lock_info: the
 *  caller sets struct_size, strings live as long as the snapshot. */
typedef struct sqlock_waiter_info {
    size_t struct_size;    /**< set by the caller to sizeof(sqlock_waiter_info) */
    const char* who;       /**< the waiting session, as the server names it */
    int64_t waited_for_ms; /**< how long it has waited so far; -1 where the backend cannot tell */
    int64_t position;      /**< its place in line (1: next) where the server keeps one, else 0 */
} sqlock_waiter_info;

/** Reads the lock table (one query, plus the server's view of waiters) into a new snapshot
 *  in *out, ordered by name; @p name (may be NULL: every row) keeps only the rows of the
 *  primitive of that name (a semaphore's permits and queue, a shared mutex's readers,
 *  writer and queue). Thread-safe. */
SQLOCK_API int sqlock_db_status(sqlock_db* db, const char* name, sqlock_status** out,
                                sqlock_error** err);
/** The number of rows in the snapshot (0 for NULL). */
SQLOCK_API size_t sqlock_status_count(const sqlock_status* status);
/** Row @p index (0 to count - 1) into *info, whose struct_size the caller sets. An index out
 *  of range is ::SQLOCK_E_INVALID_ARGUMENT. */
SQLOCK_API int sqlock_status_lock(const sqlock_status* status, size_t index, sqlock_lock_info* info,
                                  sqlock_error** err);
/** Waiter @p waiter (0: first in line; to waiter_count - 1) of row @p index into *info. */
SQLOCK_API int sqlock_status_waiter(const sqlock_status* status, size_t index, size_t waiter,
                                    sqlock_waiter_info* info, sqlock_error** err);
/** Frees a snapshot (its strings go with it). NULL: nothing. */
SQLOCK_API void sqlock_status_free(sqlock_status* status);
/** @} */

/* ---------------------------------------------------------------------------------------- */
/** @name Options and signals shared by the locks */
/** @{ */

/** How a lock is kept in the database (docs: guides/strategies.md). */
typedef enum sqlock_strategy {
    SQLOCK_UNIQUE_KEY = 0,        /**< a lease row under a primary key */
    SQLOCK_SELECT_FOR_UPDATE = 1, /**< a row lock of an open transaction */
    SQLOCK_OPTIMISTIC_VERSION = 2 /**< compare-and-set on a version column */
} sqlock_strategy;

/** Why a held lock stopped being certainly ours. */
typedef enum sqlock_loss_reason {
    SQLOCK_LOSS_NONE = 0,   /**< not lost */
    SQLOCK_LOSS_LOST = 1,   /**< gone, or its lease ran out: another owner may hold it */
    SQLOCK_LOSS_UNKNOWN = 2 /**< the database could not be reached before the lease's end */
} sqlock_loss_reason;

/** What a lost callback is told. Valid during the call only. */
typedef struct sqlock_lost_event {
    size_t struct_size;  /**< sizeof the struct the library filled */
    const char* name;    /**< the lock's name (a semaphore's or shared mutex's own name) */
    int64_t token;       /**< the fencing token of the grant that was lost */
    int reason;          /**< ::SQLOCK_LOSS_LOST or ::SQLOCK_LOSS_UNKNOWN */
    const char* message; /**< what happened, for logs */
} sqlock_lost_event;

/** What an at-risk callback is told. Valid during the call only. */
typedef struct sqlock_at_risk_event {
    size_t struct_size; /**< sizeof the struct the library filled */
    const char* name;   /**< the lock's name */
    int64_t token;      /**< the fencing token of the grant */
    /** 1: renewals are failing (or half the TTL passed without one): the lease ends in
     *  lease_remaining_ms unless one gets through. 0: a renewal got through again. */
    int at_risk;
    /** Time left, when the event was made, until the lease's local end (when it is reported
     *  lost unless renewed); may be negative. Stop work that cannot check in time before. */
    int64_t lease_remaining_ms;
    const char* message; /**< the last renewal's error, or "" */
} sqlock_at_risk_event;

/** Called once when a held grant is lost, on a sqlock background thread (see Callbacks). */
typedef void (*sqlock_lost_fn)(const sqlock_lost_event* event, void* user);
/** Called when a held lease becomes at risk, and again when it is safe (see Callbacks). */
typedef void (*sqlock_at_risk_fn)(const sqlock_at_risk_event* event, void* user);

/** Options of a mutex, semaphore or shared mutex (the C++ sqlock::mutex_options). */
typedef struct sqlock_lock_options {
    size_t struct_size;     /**< sizeof(sqlock_lock_options), set by sqlock_lock_options_init() */
    int strategy;           /**< a ::sqlock_strategy; default ::SQLOCK_UNIQUE_KEY */
    int64_t ttl_ms;         /**< lease length on the database clock; default 30000 */
    int64_t retry_min_ms;   /**< backoff while waiting: first pause; default 2 */
    int64_t retry_max_ms;   /**< backoff while waiting: longest base pause; default 200 */
    int renew;              /**< 1: renew the lease every ttl/3 while held; default 0 */
    sqlock_lost_fn on_lost; /**< NULL: none */
    sqlock_at_risk_fn on_at_risk; /**< NULL: none */
    void* callback_user;          /**< passed to both callbacks as @c user */
} sqlock_lock_options;

/** Fills @p options with struct_size and the defaults above. NULL: nothing. */
SQLOCK_API void sqlock_lock_options_init(sqlock_lock_options* options);
/** @} */

/* ---------------------------------------------------------------------------------------- */
/** @name Mutex */
/** @{ */

/** A distributed mutex (the C++ sqlock::mutex): re-entrant per thread, with a fencing token
 *  per grant, strictly greater than every earlier grant's of the same name. */
typedef struct sqlock_mutex sqlock_mutex;

/** A mutex named @p name (1 to 255 bytes of UTF-8) in @p db. Validates name and options
 *  (::SQLOCK_E_INVALID_ARGUMENT) and the strategy against the backend
 *  (::SQLOCK_E_UNSUPPORTED); does not contact the database. @p options may be NULL. On
 *  ::SQLOCK_OK *out is a new handle to close with sqlock_mutex_close(). Thread-safe. */
SQLOCK_API int sqlock_mutex_open(sqlock_mutex** out, sqlock_db* db, const char* name,
                                 const sqlock_lock_options* options, sqlock_error** err);
/** Closes the handle; a lock its threads still hold is released first. No other thread may
 *  be inside a call on it. NULL: nothing. */
SQLOCK_API void sqlock_mutex_close(sqlock_mutex* mutex);
/** Takes the lock for the calling thread (again, when it holds it: the hold count goes up).
 *  See "Waiting and cancelling" for @p timeout_ms and @p cancel (may be NULL). On
 *  ::SQLOCK_OK the grant's fencing token is in *token (may be NULL). Returns
 *  ::SQLOCK_NOT_GRANTED when the wait ended without a grant, ::SQLOCK_E_CANCELED, or a
 *  failure (::SQLOCK_E_LOCK_LOST for a re-entry of a grant that was lost). */
SQLOCK_API int sqlock_mutex_lock(sqlock_mutex* mutex, int64_t timeout_ms, sqlock_cancel* cancel,
                                 int64_t* token, sqlock_error** err);
/** Releases one hold of the calling thread. ::SQLOCK_E_LOCK_LOST when the grant turned out
 *  lost (the critical section may have overlapped another holder's);
 *  ::SQLOCK_E_INVALID_ARGUMENT when the calling thread holds nothing. Either way nothing is
 *  held afterwards (a release the database did not confirm expires at the TTL). */
SQLOCK_API int sqlock_mutex_unlock(sqlock_mutex* mutex, sqlock_error** err);
/** The fencing token of the calling thread's grant; ::SQLOCK_E_LOCK_LOST when it holds
 *  none. */
SQLOCK_API int sqlock_mutex_token(const sqlock_mutex* mutex, int64_t* token, sqlock_error** err);
/** 1 while the calling thread holds the lock and the grant is certainly valid, else 0. */
SQLOCK_API int sqlock_mutex_owns(const sqlock_mutex* mutex);
/** Why the calling thread's grant was lost (a ::sqlock_loss_reason; NONE when fine or not
 *  held). */
SQLOCK_API int sqlock_mutex_lost_reason(const sqlock_mutex* mutex);
/** The calling thread's re-entrant hold count (0 when not held or NULL). */
SQLOCK_API int64_t sqlock_mutex_hold_count(const sqlock_mutex* mutex);
/** @} */

/* ---------------------------------------------------------------------------------------- */
/** @name Semaphore */
/** @{ */

/** At most N holders of a name at once (the C++ sqlock::semaphore); each permit is a lease
 *  with its own fencing token. A thread holds at most one permit of a handle (acquiring
 *  again re-enters it). */
typedef struct sqlock_semaphore sqlock_semaphore;

/** A semaphore of @p permits (1 to 1000) named @p name (at most 239 bytes). Otherwise as
 *  sqlock_mutex_open(). */
SQLOCK_API int sqlock_semaphore_open(sqlock_semaphore** out, sqlock_db* db, const char* name,
                                     int64_t permits, const sqlock_lock_options* options,
                                     sqlock_error** err);
/** Closes the handle, releasing the permits its threads hold. NULL: nothing. */
SQLOCK_API void sqlock_semaphore_close(sqlock_semaphore* semaphore);
/** Takes a permit for the calling thread, as sqlock_mutex_lock(); *token is the permit's
 *  fencing token. */
SQLOCK_API int sqlock_semaphore_acquire(sqlock_semaphore* semaphore, int64_t timeout_ms,
                                        sqlock_cancel* cancel, int64_t* token, sqlock_error** err);
/** Releases one hold of the calling thread's permit, as sqlock_mutex_unlock(). */
SQLOCK_API int sqlock_semaphore_release(sqlock_semaphore* semaphore, sqlock_error** err);
/** Which permit (0 to permits - 1) the calling thread holds; ::SQLOCK_E_LOCK_LOST when
 *  none. */
SQLOCK_API int sqlock_semaphore_permit(const sqlock_semaphore* semaphore, int64_t* permit,
                                       sqlock_error** err);
/** 1 while the calling thread holds a permit that is certainly valid, else 0. */
SQLOCK_API int sqlock_semaphore_owns(const sqlock_semaphore* semaphore);
/** @} */

/* ---------------------------------------------------------------------------------------- */
/** @name Shared mutex */
/** @{ */

/** Many readers or one writer (the C++ sqlock::shared_mutex); writers are not starved. */
typedef struct sqlock_shared_mutex sqlock_shared_mutex;

/** A reader-writer lock admitting @p max_readers readers at once (1 to 1000; 0: 16), named
 *  as a semaphore. Otherwise as sqlock_mutex_open(). */
SQLOCK_API int sqlock_shared_mutex_open(sqlock_shared_mutex** out, sqlock_db* db, const char* name,
                                        int64_t max_readers, const sqlock_lock_options* options,
                                        sqlock_error** err);
/** Closes the handle, releasing what its threads hold. NULL: nothing. */
SQLOCK_API void sqlock_shared_mutex_close(sqlock_shared_mutex* mutex);
/** Exclusive (writer), as sqlock_mutex_lock(). Holding it shared on this thread:
 *  ::SQLOCK_E_INVALID_ARGUMENT (no upgrade). */
SQLOCK_API int sqlock_shared_mutex_lock(sqlock_shared_mutex* mutex, int64_t timeout_ms,
                                        sqlock_cancel* cancel, int64_t* token, sqlock_error** err);
/** Releases one exclusive hold of the calling thread, as sqlock_mutex_unlock(). On a thread
 *  that holds it shared only, it releases nothing (and returns ::SQLOCK_OK): use
 *  sqlock_shared_mutex_unlock_shared(). */
SQLOCK_API int sqlock_shared_mutex_unlock(sqlock_shared_mutex* mutex, sqlock_error** err);
/** Shared (reader), as sqlock_mutex_lock(); *token is the reader permit's token. */
SQLOCK_API int sqlock_shared_mutex_lock_shared(sqlock_shared_mutex* mutex, int64_t timeout_ms,
                                               sqlock_cancel* cancel, int64_t* token,
                                               sqlock_error** err);
/** Releases one shared hold of the calling thread, as sqlock_mutex_unlock() (on a thread
 *  that holds it exclusively only: nothing, as above). */
SQLOCK_API int sqlock_shared_mutex_unlock_shared(sqlock_shared_mutex* mutex, sqlock_error** err);
/** 1 while the calling thread holds it exclusively and certainly validly, else 0. */
SQLOCK_API int sqlock_shared_mutex_owns(const sqlock_shared_mutex* mutex);
/** 1 while the calling thread holds it shared and certainly validly, else 0. */
SQLOCK_API int sqlock_shared_mutex_owns_shared(const sqlock_shared_mutex* mutex);
/** @} */

/* ---------------------------------------------------------------------------------------- */
/** @name Leader election */
/** @{ */

/** One leader at a time among the processes that share a database (the C++
 *  sqlock::leader_election): renews its lease on its own while leading; the term fences what
 *  the leader does. */
typedef struct sqlock_leader sqlock_leader;

/** Options of sqlock_leader_open() (the C++ sqlock::leader_options). */
typedef struct sqlock_leader_options {
    size_t struct_size;   /**< sizeof(sqlock_leader_options), set by sqlock_leader_options_init() */
    int64_t ttl_ms;       /**< lease length; default 10000 */
    int64_t retry_min_ms; /**< campaign backoff: first pause; default 2 */
    int64_t retry_max_ms; /**< campaign backoff: longest base pause; default 200 */
    sqlock_lost_fn on_lost;       /**< leadership lost (not called for a resign); NULL: none */
    sqlock_at_risk_fn on_at_risk; /**< NULL: none */
    void* callback_user;          /**< passed to both callbacks as @c user */
} sqlock_leader_options;

/** Fills @p options with struct_size and the defaults above. NULL: nothing. */
SQLOCK_API void sqlock_leader_options_init(sqlock_leader_options* options);

/** The leader of an election as the database says (sqlock_leader_current()). Strings are
 *  NUL-terminated and truncated to fit. */
typedef struct sqlock_leader_info {
    size_t struct_size;     /**< set by the caller to sizeof(sqlock_leader_info) */
    int has_leader;         /**< 0: nobody leads now (the fields below are zero) */
    int64_t term;           /**< the leader's term (its fencing token) */
    int64_t pid;            /**< the leader's process id */
    int64_t remaining_ms;   /**< until its lease ends unless renewed (database clock) */
    int64_t leading_for_ms; /**< how long this term has lasted */
    char id[320];           /**< owner id: host:pid:nonce/handle */
    char host[256];         /**< the leader's host name */
} sqlock_leader_info;

/** An elector for election @p name; does not campaign yet. Otherwise as sqlock_mutex_open().
 *  Thread-safe. */
SQLOCK_API int sqlock_leader_open(sqlock_leader** out, sqlock_db* db, const char* name,
                                  const sqlock_leader_options* options, sqlock_error** err);
/** Resigns if leading, then closes the handle. NULL: nothing. */
SQLOCK_API void sqlock_leader_close(sqlock_leader* leader);
/** Campaigns until this elector leads (at once when it already does), as sqlock_mutex_lock():
 *  on ::SQLOCK_OK the term is in *term (may be NULL). Any thread. */
SQLOCK_API int sqlock_leader_campaign(sqlock_leader* leader, int64_t timeout_ms,
                                      sqlock_cancel* cancel, int64_t* term, sqlock_error** err);
/** Gives up leadership (stop the work it guarded first). No-op when not leading. Any thread;
 *  never fails but for NULL. */
SQLOCK_API int sqlock_leader_resign(sqlock_leader* leader, sqlock_error** err);
/** 1 while this elector leads, else 0. Any thread. */
SQLOCK_API int sqlock_leader_is_leader(const sqlock_leader* leader);
/** The term while leading, else 0. Any thread. */
SQLOCK_API int64_t sqlock_leader_term(const sqlock_leader* leader);
/** Reads who leads now from the database (one SELECT), into *info, whose struct_size the
 *  caller sets. */
SQLOCK_API int sqlock_leader_current(const sqlock_leader* leader, sqlock_leader_info* info,
                                     sqlock_error** err);
/** @} */

/* ---------------------------------------------------------------------------------------- */
/** @name Waiting without a thread (since 1.2)
 *  A `*_start` function begins an acquire and returns at once; the library reports how it
 *  ended through a completion callback. Waiters cost no thread of the caller's: this
 *  process's acquires of one lock queue behind one head (one worker thread and one
 *  connection per lock name, however many wait), on a pool of sqlock's threads that grows
 *  as lock names are waited on (at most ::SQLOCK_ASYNC_THREADS names at once; more wait their
 *  turn). Event loops (Python's asyncio, libuv, epoll) use it: the callback records the
 *  outcome and wakes the loop (a byte to a pipe or eventfd), and the loop takes the grant.
 *
 *  A grant taken this way is a ::sqlock_grant: it belongs to that object, not to a thread (any
 *  thread may read or release it) and never re-enters another grant; each is one holder among
 *  the lock's holders, with its own fencing token. The lock handle's lost and at-risk
 *  callbacks report on its grants too. Closing the lock handle cancels its acquires still
 *  waiting; grants it gave stay valid until released.
 *
 *  A library built without asynchronous locks (CMake SQLOCK_WITH_ASYNC=OFF: no Asio) has these
 *  functions, and every `*_start` returns ::SQLOCK_E_UNSUPPORTED (before any other check). */
/** @{ */

/** The most lock names whose heads wait at once (threads of the pool). */
#define SQLOCK_ASYNC_THREADS 64

/** One acquire in flight (or ended), started by a `*_start` function. */
typedef struct sqlock_acquire sqlock_acquire;
/** One grant taken by an acquire: owned by this object, not by a thread. */
typedef struct sqlock_grant sqlock_grant;

/** Told how an acquire ended, exactly once: @p code is ::SQLOCK_OK (granted: take the grant
 *  with sqlock_acquire_result()), ::SQLOCK_NOT_GRANTED (the timeout passed, or the one attempt
 *  of timeout 0 found it taken), ::SQLOCK_E_CANCELED, or a failure (details from
 *  sqlock_acquire_result()). Runs on a sqlock thread, or on the thread inside the `*_start`
 *  or sqlock_acquire_cancel() call that ended it (before that call returns). It is called
 *  even after sqlock_acquire_free(), so @c user must stay valid until it has run. As other
 *  callbacks (see Callbacks) it must return quickly and not block; it may call
 *  sqlock_acquire_result() and sqlock_acquire_free() on @p acquire, and the grant functions. */
typedef void (*sqlock_acquire_fn)(sqlock_acquire* acquire, int code, void* user);
/** Told how a grant's release ended: ::SQLOCK_OK, or ::SQLOCK_E_LOCK_LOST when the grant
 *  turned out lost (as sqlock_grant_release()). Runs on a sqlock thread. */
typedef void (*sqlock_release_fn)(int code, void* user);

/** Starts an acquire of @p mutex: waits up to @p timeout_ms (::SQLOCK_WAIT_FOREVER: until
 *  granted; 0: one attempt) in this process's line for the name, then @p done reports. On
 *  ::SQLOCK_OK *out is the acquire, to free with sqlock_acquire_free() (even after @p done).
 *  On a failure to start (a NULL argument, no memory) @p done is never called. Any thread. */
SQLOCK_API int sqlock_mutex_lock_start(sqlock_mutex* mutex, int64_t timeout_ms,
                                       sqlock_acquire_fn done, void* user, sqlock_acquire** out,
                                       sqlock_error** err);
/** Starts an acquire of one permit of @p semaphore, as sqlock_mutex_lock_start(). */
SQLOCK_API int sqlock_semaphore_acquire_start(sqlock_semaphore* semaphore, int64_t timeout_ms,
                                              sqlock_acquire_fn done, void* user,
                                              sqlock_acquire** out, sqlock_error** err);
/** Starts an exclusive (writer) acquire of @p mutex, as sqlock_mutex_lock_start(). */
SQLOCK_API int sqlock_shared_mutex_lock_start(sqlock_shared_mutex* mutex, int64_t timeout_ms,
                                              sqlock_acquire_fn done, void* user,
                                              sqlock_acquire** out, sqlock_error** err);
/** Starts a shared (reader) acquire of @p mutex, as sqlock_mutex_lock_start(). */
SQLOCK_API int sqlock_shared_mutex_lock_shared_start(sqlock_shared_mutex* mutex, int64_t timeout_ms,
                                                     sqlock_acquire_fn done, void* user,
                                                     sqlock_acquire** out, sqlock_error** err);
/** Starts a campaign of @p leader, as sqlock_mutex_lock_start(): the grant is a term (its
 *  token is the term; its release resigns), renewed while held. It is separate from the
 *  handle's own campaigns (sqlock_leader_is_leader() does not see it). */
SQLOCK_API int sqlock_leader_campaign_start(sqlock_leader* leader, int64_t timeout_ms,
                                            sqlock_acquire_fn done, void* user,
                                            sqlock_acquire** out, sqlock_error** err);
/** Cancels the acquire if it has not ended: it ends with ::SQLOCK_E_CANCELED, at once when it
 *  still waits in line (the callback runs before this returns), else as soon as the lock call
 *  in progress notices (see sqlock_cancel_request()). A grant that lands after the cancel is
 *  given back before the callback reports, so a cancelled acquire never leaves the lock held.
 *  An acquire that already ended is left as it is (a grant stays: release it). Any thread;
 *  not from a signal handler. NULL: nothing. */
SQLOCK_API void sqlock_acquire_cancel(sqlock_acquire* acquire);
/** How an ended acquire ended (the code its callback got). On ::SQLOCK_OK the grant moves to
 *  *grant (the first call only: later ones find none and return ::SQLOCK_E_INVALID_ARGUMENT);
 *  on a failure or a cancel, *err gets the details. Before the callback ran:
 *  ::SQLOCK_E_INVALID_ARGUMENT ("still in flight"). Any thread. */
SQLOCK_API int sqlock_acquire_result(sqlock_acquire* acquire, sqlock_grant** grant,
                                     sqlock_error** err);
/** Frees the acquire: cancels it if it has not ended, and a grant nobody took is released in
 *  the background. The callback still runs once if it has not (see ::sqlock_acquire_fn). May
 *  be called from the callback. NULL: nothing. */
SQLOCK_API void sqlock_acquire_free(sqlock_acquire* acquire);

/** The grant's fencing token (a term for a leader's). */
SQLOCK_API int sqlock_grant_token(const sqlock_grant* grant, int64_t* token, sqlock_error** err);
/** The permit (0 to permits - 1) a semaphore's grant holds; ::SQLOCK_E_INVALID_ARGUMENT for
 *  a grant of another primitive. */
SQLOCK_API int sqlock_grant_permit(const sqlock_grant* grant, int64_t* permit, sqlock_error** err);
/** 1 while the grant is certainly valid (not lost, its lease's local end not passed), else
 *  0 (also for NULL). Any thread. */
SQLOCK_API int sqlock_grant_owns(const sqlock_grant* grant);
/** Why the grant was lost (a ::sqlock_loss_reason; NONE while fine or for NULL). */
SQLOCK_API int sqlock_grant_lost_reason(const sqlock_grant* grant);
/** Releases the grant on the calling thread (one round trip) and frees it: ::SQLOCK_OK, or
 *  ::SQLOCK_E_LOCK_LOST when it turned out lost (the critical section may have overlapped
 *  another holder's); nothing is held afterwards either way. Any thread. */
SQLOCK_API int sqlock_grant_release(sqlock_grant* grant, sqlock_error** err);
/** Releases the grant on a sqlock thread and frees it; @p done (may be NULL) then reports,
 *  with @p user, as ::sqlock_release_fn says. Returns at once. NULL grant: nothing (and no
 *  call of @p done). */
SQLOCK_API void sqlock_grant_release_start(sqlock_grant* grant, sqlock_release_fn done, void* user);
/** @} */

/* ---------------------------------------------------------------------------------------- */
/** @name Scheduled jobs */
/** @{ */

/** A job every host of a fleet fires and that succeeds at most once per slot (the C++
 *  sqlock::job). One thread at a time per handle. */
typedef struct sqlock_job sqlock_job;

/** Options of sqlock_job_open() (the C++ sqlock::job_options). */
typedef struct sqlock_job_options {
    size_t struct_size; /**< sizeof(sqlock_job_options), set by sqlock_job_options_init() */
    int64_t period_ms;  /**< one success per slot of this length (1 s to 366 days) */
    const char* slot;   /**< a caller-named slot key instead (NULL: the period's slots) */
    /** How long a firing waits for a run in progress elsewhere: negative (the default): one
     *  period (forever without one); 0: one try. */
    int64_t wait_ms;
    /** The lock the job runs under (a lease strategy); NULL: the defaults. Renewal is always
     *  on. */
    const sqlock_lock_options* lock;
} sqlock_job_options;

/** Fills @p options with struct_size and the defaults above. NULL: nothing. */
SQLOCK_API void sqlock_job_options_init(sqlock_job_options* options);

/** How one firing of a job ended. */
typedef enum sqlock_job_outcome {
    SQLOCK_JOB_SUCCEEDED = 0,  /**< ran here and succeeded: the slot is done */
    SQLOCK_JOB_FAILED = 1,     /**< ran here and failed: another firing may take over */
    SQLOCK_JOB_LOST = 2,       /**< the lock was lost while the job ran */
    SQLOCK_JOB_ABANDONED = 3,  /**< (ledger only) the runner vanished */
    SQLOCK_JOB_SKIPPED = 4,    /**< the slot was already done: it did not run here */
    SQLOCK_JOB_NOT_GRANTED = 5 /**< another run held the lock past the wait: it did not run */
} sqlock_job_outcome;

/** What the job's function is handed while it runs. Valid during the call only. */
typedef struct sqlock_job_context {
    size_t struct_size; /**< sizeof the struct the library filled */
    int64_t token;      /**< the fencing token of this attempt */
    const char* slot;   /**< the slot key it runs for */
    void* internal;     /**< the library's; do not touch */
} sqlock_job_context;

/** The job: returns 0 for success, else a failure status (like a process's exit status).
 *  Runs on the thread that called sqlock_job_run(). */
typedef int (*sqlock_job_fn)(const sqlock_job_context* context, void* user);

/** 1 once the job's lock was lost: the function should stop its work (any thread). */
SQLOCK_API int sqlock_job_stop_requested(const sqlock_job_context* context);
/** Sets the message recorded with the attempt in the ledger (copied; at most 1000 bytes). */
SQLOCK_API void sqlock_job_set_message(const sqlock_job_context* context, const char* message);

/** The outcome of sqlock_job_run(). The caller sets struct_size; strings are truncated to
 *  fit. */
typedef struct sqlock_job_result {
    size_t struct_size;     /**< set by the caller to sizeof(sqlock_job_result) */
    int outcome;            /**< a ::sqlock_job_outcome */
    int64_t token;          /**< this firing's grant (0 when not granted) */
    int takeover;           /**< 1: ran a slot an earlier attempt had failed */
    int exit_status;        /**< ran: what the function returned */
    int64_t duration_ms;    /**< ran: the attempt's duration (database clock) */
    int64_t done_by_pid;    /**< skipped: the pid of the successful attempt */
    int64_t done_by_token;  /**< skipped: its token */
    char slot[256];         /**< the slot decided on ("" when not granted) */
    char done_by_host[256]; /**< skipped: the host of the successful attempt */
    char message[1024];     /**< lost: why; failed: the function's message */
} sqlock_job_result;

/** A job named @p name. Validates (::SQLOCK_E_INVALID_ARGUMENT; select_for_update:
 *  ::SQLOCK_E_UNSUPPORTED); does not contact the database. @p options must set a period or
 *  a slot. */
SQLOCK_API int sqlock_job_open(sqlock_job** out, sqlock_db* db, const char* name,
                               const sqlock_job_options* options, sqlock_error** err);
/** Closes the handle. NULL: nothing. */
SQLOCK_API void sqlock_job_close(sqlock_job* job);
/** Fires the job: runs @p fn (with @p user) unless the slot is done, and records the attempt.
 *  On ::SQLOCK_OK *result (may be NULL) says how it ended: a failed or skipped run is an
 *  outcome, not an error. Fails when the database cannot be used. One thread at a time. */
SQLOCK_API int sqlock_job_run(sqlock_job* job, sqlock_job_fn fn, void* user,
                              sqlock_job_result* result, sqlock_error** err);
/** The run ledger of a job: its recorded attempts, read by sqlock_db_job_history() (since
 *  1.1). Owned by the caller: free it with sqlock_job_history_free(). */
typedef struct sqlock_job_history sqlock_job_history;

/** One attempt in a job's ledger (the C++ sqlock::job_run_info). Times are ms since 1970 UTC
 *  on the database clock. Strings are never NULL and stay valid until the ledger is freed.
 *  The caller sets struct_size; the library writes no further. */
typedef struct sqlock_job_run_info {
    size_t struct_size; /**< set by the caller to sizeof(sqlock_job_run_info) */
    const char* name;   /**< the job name */
    /** The slot key it ran for: the UTC time of the slot's opening firing
     *  ("2026-11-22T03:00:00.000Z") under a period, else the caller-named key. */
    const char* slot;
    int64_t token;       /**< the attempt's fencing token (unique per job name) */
    const char* owner;   /**< the runner's owner id host:pid:nonce/handle */
    const char* host;    /**< the runner's host name */
    int64_t pid;         /**< the runner's process id */
    int64_t period_ms;   /**< the period it was fired with (0: a caller-named slot) */
    int64_t started_ms;  /**< when the attempt was recorded as started */
    int64_t ended_ms;    /**< when it ended; 0 while running */
    int64_t duration_ms; /**< how long it ran; -1 while running */
    /** "running", "succeeded", "failed", "lost" or "abandoned". */
    const char* outcome;
    int has_exit_status; /**< 1: exit_status is what the job returned */
    int exit_status;     /**< the job's status (0: success); see has_exit_status */
    int signal;          /**< the signal that killed a run (`sqlock run`), or 0 */
    /** The job's message, or what happened (lost, abandoned): printable ASCII, at most 1000
     *  bytes. */
    const char* message;
} sqlock_job_run_info;

/** Reads the newest @p limit (at least 1) attempts of job @p name from the ledger, newest
 *  first, into a new ledger in *out (no job of that name: an empty one). Needs no
 *  sqlock_job handle: any process may read any job's ledger. Thread-safe. */
SQLOCK_API int sqlock_db_job_history(sqlock_db* db, const char* name, size_t limit,
                                     sqlock_job_history** out, sqlock_error** err);
/** The number of attempts in the ledger (0 for NULL). */
SQLOCK_API size_t sqlock_job_history_count(const sqlock_job_history* history);
/** Attempt @p index (0: the newest) into *info, whose struct_size the caller sets. An index
 *  out of range is ::SQLOCK_E_INVALID_ARGUMENT. */
SQLOCK_API int sqlock_job_history_run(const sqlock_job_history* history, size_t index,
                                      sqlock_job_run_info* info, sqlock_error** err);
/** Frees a ledger (its strings go with it). NULL: nothing. */
SQLOCK_API void sqlock_job_history_free(sqlock_job_history* history);

/** Every job that ever fired in a database, read by sqlock_db_list_jobs() (since 1.2; what
 *  `sqlock jobs` lists). Owned by the caller: free it with sqlock_job_list_free(). */
typedef struct sqlock_job_list sqlock_job_list;

/** One job of a ::sqlock_job_list (the C++ sqlock::job_info). Times are ms since 1970 UTC on
 *  the database clock. Strings are never NULL and stay valid until the list is freed. The
 *  caller sets struct_size; the library writes no further. */
typedef struct sqlock_job_info {
    size_t struct_size;              /**< set by the caller to sizeof(sqlock_job_info) */
    const char* name;                /**< the job name */
    int64_t period_ms;               /**< the period of its latest firing (0: named slots) */
    int64_t first_fired_ms;          /**< when it first fired */
    int64_t last_fired_ms;           /**< when it last fired */
    const char* last_outcome;        /**< of the last ended attempt ("" when none ended) */
    int64_t last_started_ms;         /**< start of the last ended attempt (0: none yet) */
    int64_t last_duration_ms;        /**< its duration */
    int64_t last_success_started_ms; /**< start of the last success (0: never succeeded) */
    int64_t last_success_ended_ms;   /**< end of the last success (0: never succeeded) */
    int64_t succeeded;               /**< attempts that ended succeeded (only grows) */
    int64_t failed;                  /**< attempts that ended failed */
    int64_t lost;                    /**< attempts that ended lost */
    int64_t abandoned;               /**< attempts found abandoned by a later holder */
    int64_t skipped;                 /**< firings that found their slot done */
    int running;                     /**< 1: an attempt runs now (its runner's lease is live) */
    int64_t running_since_ms;        /**< its start (0 when none runs) */
    int64_t now_ms;                  /**< the database clock when the list was read */
    /** 1: a success started less than one period ago (0 without a period). */
    int slot_done;
    /** 1: no success within 1.5 periods (from the first firing if none; 0 without a
     *  period). */
    int overdue;
} sqlock_job_info;

/** Reads every job that ever fired in @p db, by name, into a new list in *out. Thread-safe. */
SQLOCK_API int sqlock_db_list_jobs(sqlock_db* db, sqlock_job_list** out, sqlock_error** err);
/** The number of jobs in the list (0 for NULL). */
SQLOCK_API size_t sqlock_job_list_count(const sqlock_job_list* list);
/** Job @p index (0 to count - 1) into *info, whose struct_size the caller sets. An index out
 *  of range is ::SQLOCK_E_INVALID_ARGUMENT. */
SQLOCK_API int sqlock_job_list_job(const sqlock_job_list* list, size_t index, sqlock_job_info* info,
                                   sqlock_error** err);
/** Frees a list (its strings go with it). NULL: nothing. */
SQLOCK_API void sqlock_job_list_free(sqlock_job_list* list);
/** @} */

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* SQLOCK_H */
