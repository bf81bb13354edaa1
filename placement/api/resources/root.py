"""GET /: the version document, open to unauthenticated clients."""
import flask

from placement.api.pipeline import declaration
from placement.api.pipeline import microversion
from placement.api.pipeline import responses
from placement.schemas import root as schema

blueprint = flask.Blueprint('root', __name__)


@blueprint.route('/', methods=['GET'])
@declaration.handler('The version document', {200: schema.VERSIONS},
                     accept=False)
def home() -> flask.Response:
    version = {
        'id': 'v%s' % microversion.min_version_string(),
        'max_version': microversion.max_version_string(),
        'min_version': microversion.min_version_string(),
        'status': 'CURRENT',
        'links': [{'rel': 'self', 'href': ''}],
    }
    return responses.json_response({'versions': [version]},
                                   last_modified=responses.utcnow())
