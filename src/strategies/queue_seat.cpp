#include "strategies/queue_seat.hpp"

#include "core/database_impl.hpp"

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

std::chrono::milliseconds queue_step(const database_impl& db, std::chrono::milliseconds wait) {
    auto step = (wait == server_wait::forever || wait > queue_step_limit) ? queue_step_limit : wait;
    if (const auto io = db.options().io_timeout; io.count() > 0) // within statement_timeout
        step = std::clamp(io / 2, std::chrono::milliseconds(1), step);
    return step;
}

bool open_seat(database_impl& db, const lock_request& req, attempt_state& state) {
    if (state.seat)
        return true;
    try {
        state.seat = std::make_shared<queue_seat>(db.shared_from_this(), std::string(req.name));
        return true;
    } catch (const error& e) {
        if (e.code() != errc::connection && e.code() != errc::timeout)
            throw;
        state.no_queue = true;
        return false;
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
