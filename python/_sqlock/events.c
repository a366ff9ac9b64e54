/* The lost and at-risk callbacks of a handle, recorded in C. They run on sqlock's renewal
 * and watchdog threads, where no Python code may run (a thread that takes the GIL while the
 * interpreter finalizes is stopped dead: pybind11 #1360): they copy the event into a ring
 * under a pthread mutex and return. Python drains the ring when it asks. */
#include "common.h"

#include <stdlib.h>
#include <string.h>

#define RING 64
#define TEXT 512

typedef struct event {
    int lost; /* 1: a lost event; 0: at risk (or safe again) */
    char name[256];
    int64_t token;
    int value; /* lost: the reason; at risk: 1 at risk, 0 safe again */
    int64_t remaining_ms;
    char message[TEXT];
} event;

struct recorder {
    pthread_mutex_t mutex;
    event ring[RING];
    size_t first, count; /* the oldest event's slot; how many are queued */
    int lost, at_risk;
};

recorder* recorder_new(void) {
    recorder* r = calloc(1, sizeof *r);
    if (r)
        pthread_mutex_init(&r->mutex, NULL);
    return r;
}

void recorder_free(recorder* r) {
    if (!r)
        return;
    pthread_mutex_destroy(&r->mutex);
    free(r);
}

static void copy_text(char* to, size_t size, const char* from) {
    if (!from)
        from = "";
    strncpy(to, from, size - 1);
    to[size - 1] = '\0';
}

/* Queues @p e (the oldest is dropped when the ring is full). Called with the mutex held. */
static void push(recorder* r, const event* e) {
    if (r->count == RING) {
        r->first = (r->first + 1) % RING;
        r->count--;
    }
    r->ring[(r->first + r->count) % RING] = *e;
    r->count++;
}

void recorder_on_lost(const sqlock_lost_event* ev, void* user) {
    recorder* r = user;
    event e = {.lost = 1, .token = ev->token, .value = ev->reason};
    copy_text(e.name, sizeof e.name, ev->name);
    copy_text(e.message, sizeof e.message, ev->message);
    pthread_mutex_lock(&r->mutex);
    push(r, &e);
    r->lost = 1;
    pthread_mutex_unlock(&r->mutex);
}

void recorder_on_at_risk(const sqlock_at_risk_event* ev, void* user) {
    recorder* r = user;
    event e = {.lost = 0,
               .token = ev->token,
               .value = ev->at_risk,
               .remaining_ms = ev->lease_remaining_ms};
    copy_text(e.name, sizeof e.name, ev->name);
    copy_text(e.message, sizeof e.message, ev->message);
    pthread_mutex_lock(&r->mutex);
    push(r, &e);
    r->at_risk = ev->at_risk;
    pthread_mutex_unlock(&r->mutex);
}

static PyObject* event_tuple(const event* e) {
    if (e->lost)
        return Py_BuildValue("(ssLis)", "lost", e->name, (long long)e->token, e->value, e->message);
    return Py_BuildValue("(ssLiLs)", "at_risk", e->name, (long long)e->token, e->value,
                         (long long)e->remaining_ms, e->message);
}

PyObject* recorder_drain(recorder* r) {
    event copy[RING];
    size_t n, i;
    pthread_mutex_lock(&r->mutex);
    n = r->count;
    for (i = 0; i < n; i++)
        copy[i] = r->ring[(r->first + i) % RING];
    r->first = r->count = 0;
    pthread_mutex_unlock(&r->mutex);
    PyObject* list = PyList_New((Py_ssize_t)n);
    for (i = 0; list && i < n; i++) {
        PyObject* item = event_tuple(&copy[i]);
        if (!item) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, item);
    }
    return list;
}

int recorder_lost(recorder* r) {
    pthread_mutex_lock(&r->mutex);
    const int lost = r->lost;
    pthread_mutex_unlock(&r->mutex);
    return lost;
}

int recorder_at_risk(recorder* r) {
    pthread_mutex_lock(&r->mutex);
    const int at_risk = r->at_risk;
    pthread_mutex_unlock(&r->mutex);
    return at_risk;
}

void recorder_reset(recorder* r) {
    pthread_mutex_lock(&r->mutex);
    r->lost = r->at_risk = 0;
    pthread_mutex_unlock(&r->mutex);
}
