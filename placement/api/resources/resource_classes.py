"""/resource_classes: list, create, show, rename or ensure, delete."""
import flask

from placement import exception
from placement import versions
from placement.api.pipeline import context
from placement.api.pipeline import declaration
from placement.api.pipeline import errors
from placement.api.pipeline import inputs
from placement.api.pipeline import microversion
from placement.api.pipeline import responses
from placement.db import resource_class as rc_db
from placement.policies import resource_class as policies
from placement.schemas import resource_class as schema

blueprint = flask.Blueprint('resource_classes', __name__)


def _link(name):
    return [{'rel': 'self',
             'href': responses.href('/resource_classes/' + name)}]


def _view(row):
    return {'name': row['name'], 'links': _link(row['name'])}


# Upstream's words for what went wrong, per route (errors.As). A class
# that exists already has no code of its own there (unlike a provider's
# name): placement.undefined_code.
_CREATE_ERRORS: errors.Wordings = {
    exception.Duplicate: errors.As(
        errors.Conflict, 'Conflicting resource class already exists: {error}'),
}
_RENAME_ERRORS: errors.Wordings = {
    exception.Duplicate: errors.As(
        errors.Conflict, 'Resource class already exists: {error}'),
}
_CANNOT_DELETE = 'Error in delete resource class: {error}'
_DELETE_ERRORS: errors.Wordings = {
    exception.Invalid: errors.As(errors.BadRequest, _CANNOT_DELETE),
    exception.InUse: errors.As(errors.Conflict, _CANNOT_DELETE),
}


@blueprint.route('/resource_classes', methods=['GET'])
@declaration.handler('List resource classes', {200: schema.RESOURCE_CLASSES},
                     min_version=versions.RESOURCE_CLASSES)
def list_resource_classes() -> flask.Response:
    context.authorize(policies.LIST)
    rows = context.read(rc_db.list_all)
    return responses.json_response(
        {'resource_classes': [_view(r) for r in rows]},
        last_modified=responses.last_modified_of(rows))


@blueprint.route('/resource_classes', methods=['POST'])
@declaration.handler('Create a custom resource class', {201: None},
                     min_version=versions.RESOURCE_CLASSES, body=schema.POST,
                     errors=_CREATE_ERRORS)
def create_resource_class() -> flask.Response:
    context.authorize(policies.CREATE)
    name = declaration.body()['name']
    context.write(rc_db.create, name)
    return responses.empty_response(
        201, location=responses.location('/resource_classes/' + name))


@blueprint.route('/resource_classes/<name>', methods=['GET'])
@declaration.handler('Show a resource class', {200: schema.RESOURCE_CLASS},
                     min_version=versions.RESOURCE_CLASSES)
def show_resource_class(name: str) -> flask.Response:
    context.authorize(policies.SHOW)
    row = context.read(rc_db.get_by_name, name)
    return responses.json_response(
        _view(row), last_modified=responses.last_modified_of([row]))


@blueprint.route('/resource_classes/<name>', methods=['PUT'])
@declaration.handler(
    'Rename a custom resource class (1.2-1.6); create it if missing (1.7+, '
    'no body)',
    {versions.RESOURCE_CLASSES: {200: schema.RESOURCE_CLASS},
     versions.ENSURE_RESOURCE_CLASS: {201: None, 204: None}},
    min_version=versions.RESOURCE_CLASSES,
    body={versions.RESOURCE_CLASSES: schema.PUT,
          versions.ENSURE_RESOURCE_CLASS: None},
    errors=_RENAME_ERRORS)
def update_resource_class(name: str) -> flask.Response:
    context.authorize(policies.UPDATE)
    return microversion.by_version(
        {versions.RESOURCE_CLASSES: _rename,
         versions.ENSURE_RESOURCE_CLASS: _ensure})(name)


def _rename(name):
    """1.2-1.6: PUT renames a custom class."""
    new_name = declaration.body()['name']
    context.write(rc_db.rename, name, new_name)
    return responses.json_response(_view({'name': new_name}))


def _ensure(name):
    """1.7+: PUT creates the class if needed; it carries no body."""
    inputs.validate({'name': name}, schema.PUT)
    location = responses.location('/resource_classes/' + name)
    try:
        context.write(rc_db.create, name)
    except exception.Duplicate:
        return responses.empty_response(204, location=location)
    return responses.empty_response(201, location=location)


@blueprint.route('/resource_classes/<name>', methods=['DELETE'])
@declaration.handler('Delete a custom resource class', {204: None},
                     min_version=versions.RESOURCE_CLASSES,
                     errors=_DELETE_ERRORS)
def delete_resource_class(name: str) -> flask.Response:
    context.authorize(policies.DELETE)
    context.write(rc_db.delete, name)
    return responses.empty_response()
