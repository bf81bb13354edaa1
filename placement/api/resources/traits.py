"""/traits: list with filters, ensure, show, delete (1.6+)."""
import flask

from placement import versions
from placement.api.pipeline import context
from placement.api.pipeline import declaration
from placement.api.pipeline import errors
from placement.api.pipeline import responses
from placement.db import trait as trait_db
from placement.policies import trait as policies
from placement.schemas import trait as schema

blueprint = flask.Blueprint('traits', __name__)

_BAD_NAME_FILTER = (
    'Badly formatted name parameter. Expected name query string parameter '
    'in form: ?name=[in|startswith]:[name1,name2|prefix]. Got: "%s"')
_INVALID_TRAIT = (
    'The trait is invalid. A valid trait must be no longer than 255 '
    'characters, start with the prefix "CUSTOM_" and use following '
    'characters: "A"-"Z", "0"-"9" and "_"')


def _name_filter(value):
    """``in:A,B`` or ``startswith:PREFIX`` as keyword filters."""
    if value is None:
        return {}
    kind, sep, operand = value.partition(':')
    if sep and kind == 'in':
        return {'names': [n for n in operand.split(',') if n]}
    if sep and kind == 'startswith':
        return {'prefix': operand}
    raise errors.BadRequest(_BAD_NAME_FILTER % value)


def _associated_filter(value):
    if value is None:
        return {}
    # Case-insensitive, as upstream.
    value = value.lower()
    if value not in ('true', 'false'):
        raise errors.BadRequest(
            'The query parameter "associated" only accepts "true" or '
            '"false"')
    return {'associated': value == 'true'}


@blueprint.route('/traits', methods=['GET'])
@declaration.handler('List traits', {200: schema.TRAITS},
                     min_version=versions.TRAITS, query=schema.LIST_QUERY)
def list_traits() -> flask.Response:
    context.authorize(policies.TRAITS_LIST)
    params = declaration.params()
    filters = _name_filter(params.get('name'))
    filters.update(_associated_filter(params.get('associated')))
    rows = context.read(trait_db.list_all, **filters)
    return responses.json_response(
        {'traits': [r['name'] for r in rows]},
        last_modified=responses.last_modified_of(rows))


@blueprint.route('/traits/<name>', methods=['GET'])
@declaration.handler(
        'Check that a trait exists', {204: None}, min_version=versions.TRAITS,
        accept=False)
def show_trait(name: str) -> flask.Response:
    context.authorize(policies.TRAITS_SHOW)
    row = context.read(trait_db.get_by_name, name)
    return responses.empty_response(
        204, last_modified=responses.last_modified_of([row]))


@blueprint.route('/traits/<name>', methods=['PUT'])
@declaration.handler(
        'Create a custom trait if missing', {201: None, 204: None},
        min_version=versions.TRAITS)
def put_trait(name: str) -> flask.Response:
    context.authorize(policies.TRAITS_UPDATE)
    if not schema.is_custom_name(name):
        raise errors.BadRequest(_INVALID_TRAIT)
    created = context.write(trait_db.ensure, name)
    # Unlike other writes, PUT /traits carries the cache headers (1.15+).
    row = context.read(trait_db.get_by_name, name)
    return responses.empty_response(
        201 if created else 204,
        location=responses.location('/traits/' + name),
        last_modified=responses.last_modified_of([row]))


@blueprint.route('/traits/<name>', methods=['DELETE'])
@declaration.handler('Delete a custom trait', {204: None},
                     min_version=versions.TRAITS)
def delete_trait(name: str) -> flask.Response:
    context.authorize(policies.TRAITS_DELETE)
    # Unknown: 404, standard: 400, in use: 409 (the app's mapping).
    context.write(trait_db.delete, name)
    return responses.empty_response()
