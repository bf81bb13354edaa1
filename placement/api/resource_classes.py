"""/resource_classes: list, create, show, rename or ensure, delete."""
import flask

from placement import exception
from placement.api import errors
from placement.api import microversion
from placement.api import wsgi
from placement.db import resource_class as rc_db
from placement.policies import resource_class as policies
from placement.schemas import resource_class as schema

blueprint = flask.Blueprint('resource_classes', __name__)


def _link(name):
    return [{'rel': 'self', 'href': wsgi.href('/resource_classes/' + name)}]


def _view(row):
    return {'name': row['name'], 'links': _link(row['name'])}


# Resource classes have a path of their own from 1.2.
SINCE = (1, 2)
# PUT creates a class if missing (no body) instead of renaming it.
ENSURE_VERSION = (1, 7)


@blueprint.route('/resource_classes', methods=['GET'])
@wsgi.handler('List resource classes', {200: 'ResourceClasses'},
              min_version=SINCE)
def list_resource_classes():
    wsgi.authorize(policies.LIST)
    rows = wsgi.read(rc_db.list_all)
    return wsgi.json_response(
        {'resource_classes': [_view(r) for r in rows]},
        last_modified=wsgi.last_modified_of(rows))


@blueprint.route('/resource_classes', methods=['POST'])
@wsgi.handler('Create a custom resource class', {201: None},
              min_version=SINCE, body=schema.POST)
def create_resource_class():
    wsgi.authorize(policies.CREATE)
    name = wsgi.body()['name']
    try:
        wsgi.write(rc_db.create, name)
    except exception.Duplicate:
        raise errors.Conflict(
            'Conflicting resource class already exists: %s' % name,
            code=errors.DUPLICATE_NAME)
    return wsgi.empty_response(
        201, location=wsgi.location('/resource_classes/' + name))


@blueprint.route('/resource_classes/<name>', methods=['GET'])
@wsgi.handler('Show a resource class', {200: 'ResourceClass'},
              min_version=SINCE)
def show_resource_class(name):
    wsgi.authorize(policies.SHOW)
    row = wsgi.read(rc_db.get_by_name, name)
    return wsgi.json_response(
        _view(row), last_modified=wsgi.last_modified_of([row]))


@blueprint.route('/resource_classes/<name>', methods=['PUT'])
@wsgi.handler(
    'Rename a custom resource class (1.2-1.6); create it if missing (1.7+, '
    'no body)',
    {SINCE: {200: 'ResourceClass'}, ENSURE_VERSION: {201: None, 204: None}},
    min_version=SINCE, body={SINCE: schema.PUT, ENSURE_VERSION: None})
def update_resource_class(name):
    wsgi.authorize(policies.UPDATE)
    return microversion.by_version(
        {SINCE: _rename, ENSURE_VERSION: _ensure})(name)


def _rename(name):
    """1.2-1.6: PUT renames a custom class."""
    new_name = wsgi.body()['name']
    try:
        wsgi.write(rc_db.rename, name, new_name)
    except exception.Duplicate:
        raise errors.Conflict(
            'Resource class already exists: %s' % new_name,
            code=errors.DUPLICATE_NAME)
    return wsgi.json_response(_view({'name': new_name}))


def _ensure(name):
    """1.7+: PUT creates the class if needed; it carries no body."""
    wsgi.validate({'name': name}, schema.PUT)
    location = wsgi.location('/resource_classes/' + name)
    try:
        wsgi.write(rc_db.create, name)
    except exception.Duplicate:
        return wsgi.empty_response(204, location=location)
    return wsgi.empty_response(201, location=location)


@blueprint.route('/resource_classes/<name>', methods=['DELETE'])
@wsgi.handler('Delete a custom resource class', {204: None},
              min_version=SINCE)
def delete_resource_class(name):
    wsgi.authorize(policies.DELETE)
    try:
        wsgi.write(rc_db.delete, name)
    except exception.Invalid as exc:
        raise errors.BadRequest('Error in delete resource class: %s' % exc)
    except exception.InUse as exc:
        raise errors.Conflict('Error in delete resource class: %s' % exc)
    return wsgi.empty_response()
