"""Errors the data layer raises; the API maps them to HTTP statuses."""


class PlacementError(Exception):
    """Base of data-layer errors; the message is client-facing."""


class NotFound(PlacementError):
    pass


class Duplicate(PlacementError):
    pass


class InUse(PlacementError):
    pass


class Invalid(PlacementError):
    pass


# Upstream's words for a write that lost a race with another one.
DATA_CHANGED = ('Another thread concurrently updated the data. Please retry '
                'your update')


class ConcurrentUpdate(PlacementError):
    """A generation check failed: someone else changed the object."""
