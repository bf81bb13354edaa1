"""Errors the core raises; the API maps them to HTTP statuses."""


# Error codes clients match on (error bodies carry them from 1.23).
ILLEGAL_DUPLICATE_QUERYPARAM = 'placement.query.duplicate_key'
QUERYPARAM_BAD_VALUE = 'placement.query.bad_value'
QUERYPARAM_MISSING_VALUE = 'placement.query.missing_value'
# Not upstream's: the database connection broke during COMMIT.
COMMIT_OUTCOME_UNKNOWN = 'placement.commit_outcome_unknown'
# Not upstream's: a request ran out of time, or would answer too much.
DEADLINE_EXCEEDED = 'placement.deadline_exceeded'
TOO_MANY_CANDIDATES = 'placement.query.too_many_candidates'


class PlacementError(Exception):
    """Base of the core's errors; the message is client-facing, and
    ``code`` the error code a client may match on (None: the default).
    """

    def __init__(self, message: str = '', code: str | None = None) -> None:
        super().__init__(message)
        self.code = code


class BadInput(PlacementError):
    """The request itself is malformed: a query string or body that does
    not parse or validate (400).
    """


class NotFound(PlacementError):
    pass


class Duplicate(PlacementError):
    pass


class InUse(PlacementError):
    pass


class Invalid(PlacementError):
    pass


# Upstream's words for a write that lost a race with another one, as
# they name what changed.
_CHANGED = ('Another thread concurrently updated the %s. Please retry '
            'your update')
DATA_CHANGED = _CHANGED % 'data'
PROVIDER_CHANGED = _CHANGED % 'resource provider data'


class ConcurrentUpdate(PlacementError):
    """A generation check failed: someone else changed the object."""


class CommitOutcomeUnknown(PlacementError):
    """The connection to the database broke while a write was being
    committed: the write may or may not be stored, so it is not retried
    (a retry could apply it twice). The client reads what it wrote again,
    with its generation, before deciding to write again (503)."""

    def __init__(self) -> None:
        super().__init__(
            'The database connection was lost while the change was being '
            'committed: it may or may not have been stored. Read the '
            'consumer or resource provider again (with its generation) '
            'before retrying.', code=COMMIT_OUTCOME_UNKNOWN)


class DeadlineExceeded(PlacementError):
    """The request's work went on past its deadline ([placement_database]
    transaction_timeout) and was stopped, in Python or by the database
    server, so that no request holds a worker without bound (503)."""

    def __init__(self) -> None:
        super().__init__(
            'The request was stopped: it took longer than its deadline '
            '([placement_database] transaction_timeout). Ask for less (a '
            'limit, fewer groups) or retry later.', code=DEADLINE_EXCEEDED)


class TooManyCandidates(BadInput):
    """An allocation candidates answer would hold more candidates than
    one answer may ([placement] max_returned_allocation_candidates) (400).
    """

    def __init__(self, most: int) -> None:
        super().__init__(
            'The answer would hold more than %(most)d allocation '
            'candidates, the most one answer holds ([placement] '
            'max_returned_allocation_candidates). Ask with limit=%(most)d '
            'or less.' % {'most': most}, code=TOO_MANY_CANDIDATES)
