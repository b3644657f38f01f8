"""Retention metadata for every BFCL multi-turn function: one table, set at registration.

Read from what each function *does* in the simulator source, never from what it returns:

- `side_effect` (result class `write_receipt`): the call changes the world or the session, so
  repeating it would be wrong: file writes, messages, posts, orders, bookings, logins, car controls,
  and `cd` (it changes the working directory every later file call resolves against). Verified by
  a test: every function whose ground-truth calls change an instance's public state is in here.
- `dynamic_state`: reads of state the task itself changes and reads again: balances, order and
  ticket status, watch lists, car status, the directory listing, login status.
- `static`: reads whose answer does not depend on what the agent did: file contents, search hits,
  lookups, quotes of reference data, the pure math functions.

Functions missing from the table register as `unknown` (kept whole by the retention contract).
"""

from __future__ import annotations

from optimizer.world.retention import RetentionClass

_SIDE_EFFECT = """
    cd cp echo mkdir mv rm rmdir touch
    message_login send_message delete_message add_contact
    authenticate_twitter post_tweet retweet comment mention follow_user unfollow_user
    ticket_login logout create_ticket edit_ticket close_ticket resolve_ticket
    trading_login trading_logout place_order cancel_order fund_account withdraw_funds
    add_to_watchlist remove_stock_from_watchlist
    authenticate_travel book_flight cancel_booking purchase_insurance register_credit_card
    set_budget_limit contact_customer_support
    startEngine fillFuelTank lockDoors adjustClimateControl setHeadlights setCruiseControl
    activateParkingBrake pressBrakePedal releaseBrakePedal set_navigation
"""

_DYNAMIC_STATE = """
    ls pwd find du
    message_get_login_status view_messages_sent get_message_stats list_users
    posting_get_login_status get_user_stats list_all_following get_tweet_comments
    ticket_get_login_status get_ticket get_user_tickets
    trading_get_login_status get_account_info get_order_details get_order_history
    get_transaction_history get_watchlist get_stock_info get_current_time notify_price_change
    travel_get_login_status get_credit_card_balance get_all_credit_cards get_booking_history
    get_budget_fiscal_year retrieve_invoice
    displayCarStatus check_tire_pressure get_current_speed
    get_outside_temperature_from_google get_outside_temperature_from_weather_com
"""

_STATIC = """
    cat grep tail sort diff wc
    absolute_value add divide imperial_si_conversion logarithm max_value mean min_value multiply
    percentage power round_number si_unit_conversion square_root standard_deviation subtract
    sum_values
    get_user_id search_messages
    get_tweet get_user_tweets search_tweets
    get_available_stocks get_symbol_by_name filter_stocks_by_price
    list_all_airports get_nearest_airport_by_city get_flight_cost compute_exchange_rate
    verify_traveler_information
    estimate_distance estimate_drive_feasibility_by_mileage gallon_to_liter liter_to_gallon
    get_zipcode_based_on_city find_nearest_tire_shop display_log
"""


def _table() -> dict[str, tuple[RetentionClass, bool]]:
    table: dict[str, tuple[RetentionClass, bool]] = {}
    for names, entry in (
        (_SIDE_EFFECT, (RetentionClass.WRITE_RECEIPT, True)),
        (_DYNAMIC_STATE, (RetentionClass.DYNAMIC_STATE, False)),
        (_STATIC, (RetentionClass.STATIC, False)),
    ):
        table.update(dict.fromkeys(names.split(), entry))
    return table


RETENTION: dict[str, tuple[RetentionClass, bool]] = _table()


def retention_of(name: str) -> tuple[RetentionClass, bool]:
    """(retention class, side_effect) of a BFCL function; unlisted ones are `unknown`, no side effect."""
    return RETENTION.get(name, (RetentionClass.UNKNOWN, False))
