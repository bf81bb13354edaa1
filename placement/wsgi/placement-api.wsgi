# The placement API for mod_wsgi, whose WSGIScriptAlias wants a file:
#   WSGIScriptAlias /placement <this file>
# It ships inside the package; print its folder with
#   python -c 'import os, placement.wsgi; print(os.path.dirname(placement.wsgi.__file__))'
# Configuration: $OS_PLACEMENT_CONFIG_DIR/placement.conf when Apache's
# environment sets that variable, else /etc/placement/placement.conf.
from placement.wsgi import api

application = api.application
