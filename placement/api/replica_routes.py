"""Which requests may read from the replica ([placement_database]
slave_connection, when one is configured): those ``replica_routes``
declares (see placement.conf: their answers are advice, which a claim
checked on the primary confirms or refuses). Every other request reads
from the primary.
"""
import re

import werkzeug.routing

# Placeholders as the API reference writes them ({uuid}) and as Flask
# rules do (<uuid>), so that both spell one route the same way.
_PLACEHOLDER = re.compile(r'\{[^}]*\}|<[^>]*>')


def replica_rules(routes: list[str],
                  url_map: werkzeug.routing.Map) -> frozenset[str]:
    """The Flask rules (as url_map spells them) of ``routes``, entries of
    [placement_database] replica_routes such as ``GET /traits``;
    ValueError if one is not a request of the API (``url_map``) or not a
    GET."""
    by_template = {}
    for rule in url_map.iter_rules():
        if 'GET' in (rule.methods or ()):
            by_template[_template(rule.rule)] = rule.rule
    rules = set()
    for route in routes:
        method, _, path = route.strip().partition(' ')
        path = path.strip()
        if method.upper() != 'GET':
            raise ValueError(
                '[placement_database] replica_routes: %r: only GET '
                'requests can read from a replica' % route)
        try:
            rules.add(by_template[_template(path)])
        except KeyError:
            raise ValueError(
                '[placement_database] replica_routes: %r is not a request '
                'of the Placement API' % route) from None
    return frozenset(rules)


def _template(path):
    return _PLACEHOLDER.sub('{}', path.rstrip('/') or '/')
