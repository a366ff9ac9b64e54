#include "strategies/queue_seat.hpp"

#include "base/rows.hpp"
#include "database/lock_context.hpp"

#include <algorithm>

namespace sqlock::detail {

void queue_seat::vacate() noexcept {
    if (!m_session)
        return;
    if (where == place::inside && m_session->usable()) {
        try {
            m_session->execute(statement::uk_queue_leave, {std::string_view(m_name)});
            where = place::outside;
        } catch (...) {
            where = place::unknown;
        }
    }
    if (where == place::outside)
        m_db->unpin_seat(m_name, std::move(m_session));
    m_session.reset(); // closes it
}

session* seat_session(const attempt_state& state) noexcept {
    return state.seat && state.seat->usable() ? &state.seat->get() : nullptr;
}

session* seat_session(const grant& held) noexcept {
    return held.seat && held.seat->usable() ? &held.seat->get() : nullptr;
}

std::chrono::milliseconds queue_step(const lock_context& db, std::chrono::milliseconds wait) {
    auto step = (wait == server_wait::forever || wait > queue_step_limit) ? queue_step_limit : wait;
    if (const auto io = db.options().io_timeout; io.count() > 0) // within statement_timeout
        step = std::clamp(io / 2, std::chrono::milliseconds(1), step);
    return step;
}

bool open_seat(lock_context& db, const lock_request& req, attempt_state& state) {
    if (state.seat)
        return true;
    try {
        state.seat = std::make_shared<queue_seat>(db.shared_context(), std::string(req.name));
        return true;
    } catch (const error& e) {
        if (e.code() != errc::connection && e.code() != errc::timeout)
            throw;
        state.no_queue = true;
        return false;
    }
}

std::array<batch_item, 3> queue_entry_items(std::string_view name, std::chrono::milliseconds step) {
    const auto step_ms = static_cast<std::int64_t>(step.count());
    return {{
        {statement::uk_queue_wait, {step_ms}},
        {statement::uk_queue_enter, {name, step_ms}},
        {statement::uk_queue_wait, {std::int64_t{0}}},
    }};
}

bool not_our_turn_error(const error& e) noexcept {
    return e.sqlstate() == "55P03";
}

bool took_turn(const result& entered, attempt_state& state) {
    const auto entry = decode_first<uk_queue_enter_row>(entered);
    if (!entry || !entry->turn) {
        note_not_our_turn(state);
        return false;
    }
    if (state.seat)
        state.seat->where = queue_seat::place::inside;
    if (entry->waited)
        state.contended = true; // we waited for our turn
    return true;
}

bool enter_queue(lock_context& db, const lock_request& req, std::chrono::milliseconds wait,
                 attempt_state& state) {
    const auto items = queue_entry_items(req.name, queue_step(db, wait));
    if (!open_seat(db, req, state))
        return false;
    auto& seat = *state.seat;
    seat.where = queue_seat::place::unknown; // until the outcome is known
    std::vector<result> results;
    try {
        results = seat.get().execute_batch(items);
    } catch (const error& e) {
        if (not_our_turn_error(e)) {
            note_timed_out_turn(req.name, state);
            return false;
        }
        state.seat.reset(); // closes the session, and any lock it got
        db.rethrow_with_context(e);
    }
    return took_turn(results.at(queue_enter_item), state);
}

void note_timed_out_turn(std::string_view name, attempt_state& state) noexcept {
    note_not_our_turn(state);
    if (!state.seat || !state.seat->usable())
        return;
    try {
        state.seat->get().execute(statement::uk_queue_leave_unsure, {name});
    } catch (...) {
        state.seat->where = queue_seat::place::unknown; // vacate() closes the session
    }
}

void note_not_our_turn(attempt_state& state) noexcept {
    if (state.seat)
        state.seat->where = queue_seat::place::outside;
    state.queue_first = false;
    state.bypass_queue = true;
    state.waited = true;
}

} // namespace sqlock::detail
