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


class ConcurrentUpdate(PlacementError):
    """A generation check failed: someone else changed the object."""
