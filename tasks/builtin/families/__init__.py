"""Task families of the built-in suite, one module each; tasks are dealt to them round-robin."""

from __future__ import annotations

from tasks.builtin.families import (
    catalog_quote,
    kb_answer,
    order_trace,
    refund,
    stock_reserve,
    store_credit,
    ticket_queue,
)
from tasks.builtin.plan import Family

FAMILIES: tuple[Family, ...] = (
    kb_answer.FAMILY,
    order_trace.FAMILY,
    store_credit.FAMILY,
    stock_reserve.FAMILY,
    refund.FAMILY,
    catalog_quote.FAMILY,
    ticket_queue.FAMILY,
)
