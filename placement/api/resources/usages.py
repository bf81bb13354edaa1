"""Usages of one provider, and totals of a project (and user)."""
import flask

from placement import versions
from placement.api.pipeline import context
from placement.api.pipeline import declaration
from placement.api.pipeline import microversion
from placement.api.pipeline import responses
from placement.db import usage as usage_db
from placement.policies import usage as policies
from placement.schemas import usage as schema

blueprint = flask.Blueprint('usages', __name__)


def _response(body):
    # Usages are the answer to "what is used now?": dated now.
    return responses.json_response(body, last_modified=responses.utcnow())


@blueprint.route('/resource_providers/<uuid>/usages', methods=['GET'])
@declaration.handler("A provider's usages", {200: schema.PROVIDER_USAGES})
def provider_usages(uuid: str) -> flask.Response:
    context.authorize(policies.PROVIDER_USAGES)
    provider, usages = context.read_of_provider(
        uuid, usage_db.by_provider,
        'No resource provider with uuid %(uuid)s found: %(error)s')
    return _response({'resource_provider_generation': provider['generation'],
                      'usages': usages})


@blueprint.route('/usages', methods=['GET'])
@declaration.handler("Usages of a project's (and user's) consumers",
                     {200: schema.USAGES}, min_version=versions.TOTAL_USAGES,
                     query={versions.TOTAL_USAGES: schema.QUERY,
                            versions.CONSUMER_TYPE: schema.QUERY_V1_38})
def total_usages() -> flask.Response:
    # The rule is about the project asked for (the last one, if repeated,
    # as for every parameter), and is checked before the query is.
    asked = flask.request.args.getlist('project_id')
    context.authorize(policies.TOTAL_USAGES,
                      target={'project_id': asked[-1] if asked else None})
    params = declaration.params()
    # {class: used}; from 1.38 {consumer type: {class: used}}.
    usages: dict[str, int] | dict[str, dict[str, int]]
    if microversion.is_at_least(versions.CONSUMER_TYPE):
        usages = context.read(
            usage_db.by_consumer_type, params['project_id'],
            params.get('user_id'), params.get('consumer_type'))
    else:
        usages = context.read(usage_db.by_project, params['project_id'],
                              params.get('user_id'))
    return _response({'usages': usages})
