"""GET /: the version document, open to unauthenticated clients."""
import flask

from placement.api import microversion
from placement.api import wsgi

blueprint = flask.Blueprint('root', __name__)


@blueprint.route('/', methods=['GET'])
@wsgi.handler('The version document', {200: 'Versions'}, accept=False)
def home():
    version = {
        'id': 'v%s' % microversion.min_version_string(),
        'max_version': microversion.max_version_string(),
        'min_version': microversion.min_version_string(),
        'status': 'CURRENT',
        'links': [{'rel': 'self', 'href': ''}],
    }
    return wsgi.json_response({'versions': [version]},
                              last_modified=wsgi.utcnow())
