"""Response bodies: their JSON schemas, each under the name the OpenAPI
document (placement.api.operations.openapi) gives it as a component.

Handlers declare the bodies they answer with (``ok={200: INVENTORIES}``)
and the document shows what they declare, so there is one copy of each
shape. A schema holds another Body where it refers to that shape. Fields
that only some versions carry are described but not required.
"""
import dataclasses
from typing import Any

from placement import versions


@dataclasses.dataclass(frozen=True, eq=False)
class Body:
    """A response body's JSON schema, named."""
    name: str
    schema: dict[str, Any]


def since(version: versions.Version) -> str:
    """The description of a field that ``version`` added."""
    return 'From microversion %s.' % versions.to_text(version)


LINKS = {
    'type': 'array',
    'items': {
        'type': 'object',
        'required': ['rel', 'href'],
        'properties': {'rel': {'type': 'string'},
                       'href': {'type': 'string'}},
    },
}
UUID = {'type': 'string', 'format': 'uuid'}
AMOUNTS = {'type': 'object', 'additionalProperties': {'type': 'integer'}}

# What every failure answers with.
ERROR = Body('Error', {
    'type': 'object',
    'required': ['errors'],
    'properties': {'errors': {
        'type': 'array',
        'minItems': 1,
        'items': {
            'type': 'object',
            'required': ['status', 'title', 'detail', 'request_id'],
            'properties': {
                'status': {'type': 'integer'},
                'title': {'type': 'string'},
                'detail': {'type': 'string'},
                'request_id': {'type': ['string', 'null']},
                'code': {'type': 'string',
                         'description': since(versions.ERROR_CODES)},
                'min_version': {'type': 'string'},
                'max_version': {'type': 'string'},
            },
        },
    }},
})
