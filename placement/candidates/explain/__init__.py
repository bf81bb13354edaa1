"""Why an allocation-candidates request found nothing, or no more than it
did: the "No valid host" explainer behind GET /x-explain/... and
``placement-manage candidates explain``.

``finding`` finds the causes, with the candidate engine's own data and
rules, as plain data (``causes``); ``rendering`` words them as the text
and the dict the operator reads.
"""
import sqlalchemy as sa

from placement import candidates
from placement.candidates import request as model
from placement.candidates.explain import finding
from placement.candidates.explain import rendering
from placement.candidates.explain.rendering import Explanation
from placement.candidates.explain.rendering import display_ratio  # noqa: F401


def explain(conn: sa.Connection, request: model.Request,
            settings: candidates.Settings) -> Explanation:
    """The Explanation of ``request`` (a candidates.request.Request)
    under ``settings`` (candidates.Settings).

    Raises exception.Invalid exactly where ``candidates.find`` does (an
    unknown resource class or trait the endpoint reports).
    """
    with candidates.gc_paused():
        return rendering.explanation(
            finding.find(finding.load(conn, request, settings)))
