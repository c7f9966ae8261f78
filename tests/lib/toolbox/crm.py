"""crm: a small customer and ticketing API, the toolbox of the hint tests.

Records are dataclasses, the tickets are also available as a pandas frame,
and help() describes every function, the way an agent host's toolbox would.
The data is fixed, so every run gives the same answers.  pandas is imported
only by tickets_frame(), so that a call that does not use it does not pay.
"""

from dataclasses import dataclass, field

__all__ = ["CrmError", "Customer", "Ticket", "CATALOG_VERSION", "fetch_user", "lookup",
           "find_customers", "open_ticket", "list_tickets", "tickets_of", "tickets_frame",
           "help"]

CATALOG_VERSION = "2024.1"


class CrmError(Exception):
    """A failure the CRM reports on purpose; dolsot exits with 3."""

    exit_code = 3


@dataclass
class Customer:
    id: int
    name: str
    email: str
    region: str
    tags: list = field(default_factory=list)


@dataclass
class Ticket:
    id: int
    customer_id: int
    title: str
    priority: int
    status: str = "open"


_CUSTOMERS = {
    1: Customer(1, "Ada Lovelace", "ada@example.com", "emea", ["vip"]),
    2: Customer(2, "Grace Hopper", "grace@example.com", "amer"),
    3: Customer(3, "Katherine Johnson", "kj@example.com", "amer", ["beta"]),
}
_TICKETS = [
    Ticket(100, 1, "cannot log in", 1),
    Ticket(101, 2, "invoice is wrong", 2, "closed"),
    Ticket(102, 3, "export to csv", 3),
]


def fetch_user(user_id: int) -> Customer:
    """The customer with this id; CrmError when there is none."""
    try:
        return _CUSTOMERS[user_id]
    except KeyError:
        raise CrmError(f"no customer with id {user_id}") from None


def lookup(email: str) -> Customer:
    """The customer with this email address (case does not matter)."""
    for c in _CUSTOMERS.values():
        if c.email == email.lower():
            return c
    raise CrmError(f"no customer with email {email}")


def find_customers(region: str | None = None, tag: str | None = None) -> list[Customer]:
    """Customers, optionally only those of one region or with one tag."""
    return [c for c in _CUSTOMERS.values()
            if (region is None or c.region == region) and (tag is None or tag in c.tags)]


def open_ticket(customer: Customer, title: str, priority: int = 2) -> Ticket:
    """Open a ticket for a customer; priority 1 (urgent) to 3 (low)."""
    if not 1 <= priority <= 3:
        raise CrmError(f"priority must be 1, 2 or 3, not {priority}")
    ticket = Ticket(200 + len(_TICKETS), customer.id, title.strip(), priority)
    _TICKETS.append(ticket)
    return ticket


def list_tickets(status: str = "open") -> list[Ticket]:
    """The tickets with this status: 'open' or 'closed'."""
    return [t for t in _TICKETS if t.status == status]


def tickets_of(email: str) -> list[Ticket]:
    """The tickets of the customer with this email address."""
    wanted = email.lower()
    ids = {c.id for c in _CUSTOMERS.values() if c.email == wanted}
    return [t for t in _TICKETS if t.customer_id in ids]


def tickets_frame():
    """Every ticket as a pandas DataFrame, one row per ticket."""
    import pandas as pd
    return pd.DataFrame([vars(t) for t in _TICKETS])


def _db_handle():
    return None


def help(topic: str | None = None) -> str:
    """This text, or the documentation of one function."""
    if topic is None:
        return "crm: " + ", ".join(n for n in __all__ if n != "help")
    obj = globals().get(topic)
    return (obj.__doc__ or "") if topic in __all__ and obj is not None else f"no topic {topic}"
