"""Route health for `status`: counts, the last error and success, percentiles, bounded rows in real shapes."""

from __future__ import annotations

from datetime import UTC, datetime

from longhaul_daemon.models import route_health
from longhaul_daemon.models.route_health import OTHER_ROUTES, RouteHealthBook
from longhaul_daemon.protocol import RouteHealth

NOON = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


def test_route_health_counts_calls_keeps_the_last_error_and_takes_nearest_rank_percentiles() -> None:
    book = RouteHealthBook()
    for ms in range(10, 0, -1):  # 10 … 1, out of order on purpose
        book.record("anthropic/claude", duration_ms=ms * 100, now=NOON)
    book.record("anthropic/claude", duration_ms=50, error_class="RateLimited")
    book.record("openai/gpt", duration_ms=5, error_class="Timeout")
    claude, gpt = book.snapshot()
    assert claude == RouteHealth(
        route="anthropic/claude",
        lastErrorClass="RateLimited",
        lastSuccess="2026-12-02T12:00:00+00:00",
        p50Ms=500,
        p90Ms=900,
        calls=11,
    )
    assert gpt == RouteHealth(route="openai/gpt", lastErrorClass="Timeout", calls=1)


def test_route_health_shows_which_way_the_last_call_went() -> None:
    book = RouteHealthBook()
    book.record("anthropic/claude", duration_ms=5, via="daemon", via_why="anthropic-key")
    book.record(
        "anthropic/claude", duration_ms=9, error_class="FatalError", via="daemon", via_why="anthropic-key"
    )
    book.record("anthropic/claude", duration_ms=7, via="pi", via_why="refused-401")
    book.record("openai/gpt", duration_ms=3)
    rows = {row.route: row for row in book.snapshot()}
    assert (rows["anthropic/claude"].via, rows["anthropic/claude"].viaWhy) == ("pi", "refused-401")
    assert (rows["openai/gpt"].via, rows["openai/gpt"].viaWhy) == (None, None)


def test_route_health_is_empty_until_a_model_is_called() -> None:
    assert RouteHealthBook().snapshot() == []


def test_route_health_percentiles_cover_only_the_recent_window() -> None:
    book = RouteHealthBook()
    for _ in range(route_health.LATENCY_WINDOW):
        book.record("r", duration_ms=10_000)
    for _ in range(route_health.LATENCY_WINDOW):
        book.record("r", duration_ms=20)
    (route,) = book.snapshot()
    assert (route.p50Ms, route.p90Ms, route.calls) == (20, 20, 2 * route_health.LATENCY_WINDOW)


def test_routes_are_bounded_to_the_newest_and_the_rest_are_counted_as_other() -> None:
    """Issue 12 item 8: a client names any model id; 45 invented ids must not make 45 rows."""
    book = RouteHealthBook(max_routes=3)
    for n in range(45):
        book.record(f"fuzz/model-{n}", duration_ms=1)
    book.record("fuzz/model-0", duration_ms=1, error_class="Timeout")  # called again: among the newest
    rows = book.snapshot()
    assert [r.route for r in rows] == ["fuzz/model-0", "fuzz/model-43", "fuzz/model-44", OTHER_ROUTES]
    assert rows[-1].calls == 43 and sum(r.calls for r in rows) == 46


def test_route_names_are_kept_in_their_real_shape() -> None:
    book = RouteHealthBook()
    book.record("p/\u202emodel\x1b[2J", duration_ms=1, error_class="Bad\nClass")
    (row,) = book.snapshot()
    assert row.route.startswith("#") and row.route.isascii() and "\x1b" not in row.route
    assert row.lastErrorClass == "invalid (9 chars)"
