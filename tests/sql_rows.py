"""Rows inserted directly, for tests that need providers or allocations
without going through the API that owns them.

Importable from any test module: tests/ is on sys.path (it holds the
top-level conftest.py).
"""
import uuid as uuidlib

from placement.db import consumer as consumer_db
from placement.db import resource_class as rc_db
from placement.db import resource_provider as rp_db
from placement.db import tables


def provider(conn, name=None, uuid=None):
    """A new root provider; returns ``resource_provider.get_by_uuid``'s row."""
    uuid = uuid or str(uuidlib.uuid4())
    rp = tables.resource_providers
    new_id = conn.execute(rp.insert().values(
        uuid=uuid, name=name or 'rp-' + uuid, generation=0)
    ).inserted_primary_key[0]
    conn.execute(rp.update().where(rp.c.id == new_id)
                 .values(root_provider_id=new_id))
    return rp_db.get_by_uuid(conn, uuid)


def allocate(conn, provider_id, resources, project='project', user='user',
             consumer_type=None, consumer=None):
    """Allocations of ``resources`` ({class: used}) on a provider for a
    new consumer, or for ``consumer`` if given; returns the consumer uuid.
    """
    if consumer is None:
        consumer = str(uuidlib.uuid4())
        type_id = None
        if consumer_type is not None:
            type_id = consumer_db.ensure_type(conn, consumer_type)
        consumer_db.create(conn, consumer, consumer_db.ensure_project(
            conn, project), consumer_db.ensure_user(conn, user), type_id, 0)
    class_ids = rc_db.ids_by_name(conn, resources)
    conn.execute(tables.allocations.insert(), [
        {'resource_provider_id': provider_id, 'consumer_id': consumer,
         'resource_class_id': class_ids[name], 'used': used}
        for name, used in resources.items()])
    return consumer
