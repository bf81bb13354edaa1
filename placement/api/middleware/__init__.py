"""WSGI middleware in front of the Flask app: authentication and the
request log."""
