"""/resource_classes: list, create, show, rename or ensure, delete."""
import flask

from placement.api import errors
from placement.api import microversion
from placement.api import wsgi
from placement.db import resource_class as rc_db
from placement import exception
from placement.policies import resource_class as policies
from placement.schemas import resource_class as schema

blueprint = flask.Blueprint('resource_classes', __name__)


def _link(name):
    return [{'rel': 'self', 'href': wsgi.href('/resource_classes/' + name)}]


def _view(row):
    return {'name': row['name'], 'links': _link(row['name'])}


def _not_found(exc):
    return errors.NotFound(str(exc))


@blueprint.route('/resource_classes', methods=['GET'])
@wsgi.handler(min_version='1.2')
def list_resource_classes():
    wsgi.authorize(policies.LIST)
    rows = wsgi.read(rc_db.list_all)
    return wsgi.json_response(
        {'resource_classes': [_view(r) for r in rows]},
        last_modified=wsgi.last_modified_of(rows))


@blueprint.route('/resource_classes', methods=['POST'])
@wsgi.handler(min_version='1.2', content=True)
def create_resource_class():
    wsgi.authorize(policies.CREATE)
    name = wsgi.json_body(schema.POST)['name']
    try:
        wsgi.write(rc_db.create, name)
    except exception.Duplicate:
        raise errors.Conflict(
            'Conflicting resource class already exists: %s' % name,
            code=errors.DUPLICATE_NAME)
    return wsgi.empty_response(
        201, location=wsgi.location('/resource_classes/' + name))


@blueprint.route('/resource_classes/<name>', methods=['GET'])
@wsgi.handler(min_version='1.2')
def show_resource_class(name):
    wsgi.authorize(policies.SHOW)
    try:
        row = wsgi.read(rc_db.get_by_name, name)
    except exception.NotFound as exc:
        raise _not_found(exc)
    return wsgi.json_response(
        _view(row), last_modified=wsgi.last_modified_of([row]))


@blueprint.route('/resource_classes/<name>', methods=['PUT'])
@wsgi.handler(min_version='1.2')
def update_resource_class(name):
    wsgi.authorize(policies.UPDATE)
    return microversion.by_version({'1.2': _rename, '1.7': _ensure})(name)


def _rename(name):
    """1.2-1.6: PUT renames a custom class."""
    wsgi.require_json_content()
    new_name = wsgi.json_body(schema.PUT)['name']
    try:
        wsgi.write(rc_db.rename, name, new_name)
    except exception.NotFound as exc:
        raise _not_found(exc)
    except exception.Invalid as exc:
        raise errors.BadRequest(str(exc))
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
@wsgi.handler(min_version='1.2')
def delete_resource_class(name):
    wsgi.authorize(policies.DELETE)
    try:
        wsgi.write(rc_db.delete, name)
    except exception.NotFound as exc:
        raise _not_found(exc)
    except exception.Invalid as exc:
        raise errors.BadRequest('Error in delete resource class: %s' % exc)
    except exception.InUse as exc:
        raise errors.Conflict('Error in delete resource class: %s' % exc)
    return wsgi.empty_response()
