"""The WSGI callable: ``placement.wsgi.api:application``.

Configuration comes from ``$OS_PLACEMENT_CONFIG_DIR/placement.conf`` when
that variable is set, else from oslo.config's standard locations.
"""
from placement.api import service

application = service.load_application()
