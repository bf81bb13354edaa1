"""Rows inserted directly, for tests that need providers, their
inventories, traits, aggregates or allocations without going through the
API that owns them.

Importable from any test module: tests/ is on sys.path (it holds the
top-level conftest.py).
"""
import uuid as uuidlib

import sqlalchemy as sa

from placement.db import consumer as consumer_db
from placement.db import resource_class as rc_db
from placement.db import resource_provider as rp_db
from placement.db import tables
from placement.db import trait as trait_db


def provider(conn, name=None, uuid=None, parent_id=None):
    """A new provider, a root unless ``parent_id`` names its parent (it
    then joins the parent's tree); returns ``resource_provider.get_by_uuid``'s
    row.
    """
    uuid = uuid or str(uuidlib.uuid4())
    rp = tables.resource_providers
    root_id = None
    if parent_id is not None:
        root_id = conn.execute(sa.select(rp.c.root_provider_id).where(
            rp.c.id == parent_id)).scalar()
    new_id = conn.execute(rp.insert().values(
        uuid=uuid, name=name or 'rp-' + uuid, generation=0,
        parent_provider_id=parent_id, root_provider_id=root_id)
    ).inserted_primary_key[0]
    if root_id is None:
        conn.execute(rp.update().where(rp.c.id == new_id)
                     .values(root_provider_id=new_id))
    return rp_db.get_by_uuid(conn, uuid)


def inventory(conn, provider_id, inventory):
    """Inventories of a provider: ``inventory`` is {class: total or
    {field: value}}; reserved defaults to 0, min_unit and step_size to 1,
    max_unit to the total and allocation_ratio to 1.0.
    """
    if not inventory:
        return
    class_ids = rc_db.ids_by_name(conn, inventory)
    rows = []
    for name, fields in inventory.items():
        fields = fields if isinstance(fields, dict) else {'total': fields}
        rows.append({
            'resource_provider_id': provider_id,
            'resource_class_id': class_ids[name],
            'total': fields['total'],
            'reserved': fields.get('reserved', 0),
            'min_unit': fields.get('min_unit', 1),
            'max_unit': fields.get('max_unit', fields['total']),
            'step_size': fields.get('step_size', 1),
            'allocation_ratio': fields.get('allocation_ratio', 1.0)})
    conn.execute(tables.inventories.insert(), rows)


def traits(conn, provider_id, names):
    """Give a provider the traits ``names``, creating those missing."""
    if not names:
        return
    for name in names:
        trait_db.ensure(conn, name)
    tr = tables.traits
    trait_ids = dict(conn.execute(sa.select(tr.c.name, tr.c.id).where(
        tr.c.name.in_(names))).all())
    conn.execute(tables.resource_provider_traits.insert(), [
        {'resource_provider_id': provider_id, 'trait_id': trait_ids[name]}
        for name in names])


def aggregates(conn, provider_id, uuids):
    """Make a provider a member of the aggregates ``uuids``, creating
    those not stored yet.
    """
    if not uuids:
        return
    pa = tables.placement_aggregates
    ids = dict(conn.execute(sa.select(pa.c.uuid, pa.c.id).where(
        pa.c.uuid.in_(uuids))).all())
    for uuid in uuids:
        if uuid not in ids:
            ids[uuid] = conn.execute(pa.insert().values(
                uuid=uuid)).inserted_primary_key[0]
    conn.execute(tables.resource_provider_aggregates.insert(), [
        {'resource_provider_id': provider_id, 'aggregate_id': ids[uuid]}
        for uuid in uuids])


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


def every_row(engine):
    """{table name: its rows in primary key order}, to compare the whole
    database before and after."""
    with engine.connect() as conn:
        return {table.name: conn.execute(
            table.select().order_by(*table.primary_key.columns)).all()
            for table in tables.metadata.sorted_tables}
