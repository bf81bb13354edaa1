"""A small cloud set up through the API (as nova would write it), for
tests that then look at it another way (the explain extension, the
placement-manage tools).

Importable from any test module: tests/ is on sys.path.
"""
import uuid as uuidlib


class Cloud:
    """Providers, aggregates and consumers by name; ``uuids`` maps every
    name to its uuid.
    """

    def __init__(self, api):
        self.api = api
        self.uuids = {}
        self.generations = {}
        self.custom_traits = set()

    def _call(self, method, path, body=None, expect=200):
        response = self.api.request(method, path, json=body)
        assert response.status_code == expect, response.json
        return response.json

    def provider(self, name, parent=None, inventory=None, traits=(),
                 aggregates=()):
        """``inventory``: {class: total or {field: value}}."""
        uuid = str(uuidlib.uuid4())
        body = {'name': name, 'uuid': uuid}
        if parent:
            body['parent_provider_uuid'] = self.uuids[parent]
        self._call('POST', '/resource_providers', body)
        self.uuids[name] = uuid
        self.generations[name] = 0
        if inventory:
            self.inventory(name, inventory)
        if traits:
            for trait in traits:
                if (trait.startswith('CUSTOM_')
                        and trait not in self.custom_traits):
                    self._call('PUT', '/traits/' + trait, expect=201)
                    self.custom_traits.add(trait)
            self._put(name, 'traits', {'traits': list(traits)})
        if aggregates:
            self._put(name, 'aggregates', {
                'aggregates': [self.aggregate(a) for a in aggregates]})
        return uuid

    def inventory(self, name, inventory):
        self._put(name, 'inventories', {'inventories': {
            rc: fields if isinstance(fields, dict) else {'total': fields}
            for rc, fields in inventory.items()}})

    def aggregate(self, name):
        return self.uuids.setdefault(name, str(uuidlib.uuid4()))

    def _put(self, name, what, body):
        body['resource_provider_generation'] = self.generations[name]
        answer = self._call('PUT', '/resource_providers/%s/%s' % (
            self.uuids[name], what), body)
        self.generations[name] = answer['resource_provider_generation']

    def allocate(self, consumer, allocations, project='project'):
        """``allocations``: {provider name: {class: amount}}."""
        uuid = self.uuids.setdefault(consumer, str(uuidlib.uuid4()))
        self._call('PUT', '/allocations/' + uuid, {
            'allocations': {self.uuids[name]: {'resources': resources}
                            for name, resources in allocations.items()},
            'project_id': project, 'user_id': 'user',
            'consumer_generation': None, 'consumer_type': 'INSTANCE'},
            expect=204)
        for name in allocations:
            self.generations[name] += 1
        return uuid
