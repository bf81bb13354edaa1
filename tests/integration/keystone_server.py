"""A real Keystone for the integration tests.

The ``keystone`` package from PyPI runs from its own venv (.venv-keystone,
made by tools/integration-venvs.sh) on SQLite with fernet tokens, set up
with ``keystone-manage`` and served by gunicorn. ``Keystone.client`` is a
small admin client of its v3 API for creating the identities a test needs.
"""
import concurrent.futures
import grp
import os
import pwd
import subprocess

import requests

import wsgi_process

VENV = '.venv-keystone'
REGION = 'RegionOne'
DOMAIN = 'Default'
ADMIN_PASSWORD = 'keystone-admin-secret'

# Keystone builds its configuration with oslo.config, which would parse
# gunicorn's own command line; the wrapper hides it while keystone loads.
WSGI_WRAPPER = '''\
import sys

from keystone.server import wsgi

_server_argv = sys.argv
sys.argv = _server_argv[:1]
try:
    application = wsgi.initialize_public_application()
finally:
    sys.argv = _server_argv
'''


class Keystone:
    """Keystone in ``workdir``: ``setup()`` once, then ``start()``."""

    def __init__(self, workdir):
        self.workdir = workdir
        self.manage = wsgi_process.integration_venv(VENV, 'keystone-manage')
        self.server = wsgi_process.GunicornServer(
            self.manage.parent / 'gunicorn', 'keystone_wsgi:application',
            workdir, env={'OS_KEYSTONE_CONFIG_DIR': str(workdir)},
            ready_path='/v3')
        self.config_file = workdir / 'keystone.conf'

    @property
    def url(self):
        """The identity endpoint, as in the catalog."""
        return self.server.url + '/v3'

    def setup(self):
        wsgi_process.write_config(self.config_file, {
            'database': {
                'connection': 'sqlite:///%s' % (self.workdir / 'keystone.db')},
            'token': {'provider': 'fernet'},
            'fernet_tokens': {
                'key_repository': str(self.workdir / 'fernet-keys')},
            'fernet_receipts': {
                'key_repository': str(self.workdir / 'fernet-keys')},
            'credential': {
                'key_repository': str(self.workdir / 'credential-keys')},
            'cache': {'enabled': 'false'},
            # Every token request checks a password: bcrypt's cheapest cost.
            'identity': {'password_hash_rounds': '4'},
        })
        (self.workdir / 'keystone_wsgi.py').write_text(WSGI_WRAPPER)
        owner = ['--keystone-user', pwd.getpwuid(os.getuid()).pw_name,
                 '--keystone-group', grp.getgrgid(os.getgid()).gr_name]
        # Independent steps; each keystone-manage spends seconds importing.
        with concurrent.futures.ThreadPoolExecutor(3) as pool:
            steps = [pool.submit(self._manage, *args) for args in (
                ['db_sync'], ['fernet_setup'] + owner,
                ['credential_setup'] + owner)]
            for step in steps:
                step.result()
        # The admin user, project and role (with member and reader implied),
        # admin on the system, the region and the public identity endpoint.
        self._manage('bootstrap', '--bootstrap-password', ADMIN_PASSWORD,
                     '--bootstrap-region-id', REGION,
                     '--bootstrap-public-url', self.url)
        return self

    def _manage(self, *args):
        result = subprocess.run(
            [str(self.manage), '--config-file', str(self.config_file)]
            + list(args), capture_output=True, text=True, timeout=300)
        if result.returncode:
            raise RuntimeError('keystone-manage %s failed:\n%s' % (
                ' '.join(args), result.stderr[-4000:]))

    def start(self):
        self.server.start()
        return self

    def stop(self):
        self.server.stop()

    def down(self):
        """Context manager: Keystone is unreachable within the block."""
        return self.server.stopped()

    def client(self):
        """An admin client holding a system-scoped admin token."""
        return AdminClient(self.url, self.token(
            'admin', ADMIN_PASSWORD, system=True))

    def token(self, user, password, project=None, system=False):
        """A token for ``user``: project scoped, system scoped or unscoped."""
        body = {'auth': {'identity': {
            'methods': ['password'],
            'password': {'user': {'name': user, 'password': password,
                                  'domain': {'name': DOMAIN}}}}}}
        if system:
            body['auth']['scope'] = {'system': {'all': True}}
        elif project:
            body['auth']['scope'] = {'project': {
                'name': project, 'domain': {'name': DOMAIN}}}
        response = requests.post(self.url + '/auth/tokens', json=body,
                                 timeout=60)
        response.raise_for_status()
        return response.headers['X-Subject-Token']


class AdminClient:
    """Just enough of the identity v3 API to create test identities."""

    def __init__(self, url, token):
        self.url = url
        self.session = requests.Session()
        self.session.headers['X-Auth-Token'] = token

    def _call(self, method, path, **kwargs):
        response = self.session.request(method, self.url + path, timeout=60,
                                        **kwargs)
        if not response.ok:
            raise RuntimeError('%s %s: %s %s' % (
                method, path, response.status_code, response.text))
        return response.json() if response.content else None

    def _domain_id(self):
        return self._call('GET', '/domains', params={'name': DOMAIN})[
            'domains'][0]['id']

    def project(self, name):
        """The id of project ``name``, created if needed."""
        found = self._call('GET', '/projects', params={'name': name})
        if found['projects']:
            return found['projects'][0]['id']
        return self._call('POST', '/projects', json={'project': {
            'name': name, 'domain_id': self._domain_id()}})['project']['id']

    def role(self, name):
        """The id of role ``name``, created if needed."""
        found = self._call('GET', '/roles', params={'name': name})
        if found['roles']:
            return found['roles'][0]['id']
        return self._call('POST', '/roles', json={'role': {'name': name}})[
            'role']['id']

    def user(self, name, password, project_roles=(), system_roles=()):
        """Create user ``name``; ``project_roles`` are (project, role)."""
        user_id = self._call('POST', '/users', json={'user': {
            'name': name, 'password': password,
            'domain_id': self._domain_id()}})['user']['id']
        for project, role in project_roles:
            self._call('PUT', '/projects/%s/users/%s/roles/%s' % (
                self.project(project), user_id, self.role(role)))
        for role in system_roles:
            self._call('PUT', '/system/users/%s/roles/%s' % (
                user_id, self.role(role)))
        return user_id

