"""SQLAlchemy Core schema, identical to upstream Placement at alembic head.

Names of tables, columns, constraints and indexes are part of the on-disk
contract: existing upstream databases are adopted in place, so they must not
drift from what upstream's migrations produce.
"""

import datetime
from typing import Any

import sqlalchemy as sa

metadata = sa.MetaData()

# Upstream relies on the server's default charset; we pin 4-byte UTF-8 so
# that provider names accept any Unicode character.
_MYSQL: dict[str, Any] = {'mysql_engine': 'InnoDB', 'mysql_charset': 'utf8mb4'}


def _utcnow() -> datetime.datetime:
    """Naive UTC timestamp, the representation upstream stores."""
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def _timestamps() -> tuple[sa.Column[Any], ...]:
    # Upstream sets these client-side (no server defaults), first in order.
    return (
        sa.Column('created_at', sa.DateTime, default=_utcnow),
        sa.Column('updated_at', sa.DateTime, onupdate=_utcnow),
    )


def _table(name, *items):
    return sa.Table(name, metadata, *_timestamps(), *items, **_MYSQL)


resource_classes = _table(
    'resource_classes',
    sa.Column('id', sa.Integer, primary_key=True),
    sa.Column('name', sa.String(255), nullable=False),
    sa.UniqueConstraint('name', name='uniq_resource_classes0name'),
)

resource_providers = _table(
    'resource_providers',
    sa.Column('id', sa.Integer, primary_key=True),
    sa.Column('uuid', sa.String(36), nullable=False),
    sa.Column('name', sa.Unicode(200)),
    sa.Column('generation', sa.Integer, default=0),
    sa.Column('root_provider_id', sa.Integer),
    sa.Column('parent_provider_id', sa.Integer),
    # Declared parent-first so MySQL's generated names (..._ibfk_1/_2) match
    # the ones upstream's initial migration produced.
    sa.ForeignKeyConstraint(['parent_provider_id'], ['resource_providers.id']),
    sa.ForeignKeyConstraint(['root_provider_id'], ['resource_providers.id']),
    sa.UniqueConstraint('uuid', name='uniq_resource_providers0uuid'),
    sa.UniqueConstraint('name', name='uniq_resource_providers0name'),
    sa.Index('resource_providers_root_provider_id_idx', 'root_provider_id'),
    sa.Index('resource_providers_parent_provider_id_idx',
             'parent_provider_id'),
)

inventories = _table(
    'inventories',
    sa.Column('id', sa.Integer, primary_key=True),
    sa.Column('resource_provider_id', sa.Integer, nullable=False),
    sa.Column('resource_class_id', sa.Integer, nullable=False),
    sa.Column('total', sa.Integer, nullable=False),
    sa.Column('reserved', sa.Integer, nullable=False),
    sa.Column('min_unit', sa.Integer, nullable=False),
    sa.Column('max_unit', sa.Integer, nullable=False),
    sa.Column('step_size', sa.Integer, nullable=False),
    sa.Column('allocation_ratio', sa.Float, nullable=False),
    sa.UniqueConstraint(
        'resource_provider_id', 'resource_class_id',
        name='uniq_inventories0resource_provider_resource_class'),
    sa.Index('inventories_resource_class_id_idx', 'resource_class_id'),
)

allocations = _table(
    'allocations',
    sa.Column('id', sa.Integer, primary_key=True),
    sa.Column('resource_provider_id', sa.Integer, nullable=False),
    sa.Column('consumer_id', sa.String(36), nullable=False),
    sa.Column('resource_class_id', sa.Integer, nullable=False),
    sa.Column('used', sa.Integer, nullable=False),
    sa.Index('allocations_resource_provider_class_used_idx',
             'resource_provider_id', 'resource_class_id', 'used'),
    sa.Index('allocations_resource_class_id_idx', 'resource_class_id'),
    sa.Index('allocations_consumer_id_idx', 'consumer_id'),
)

consumer_types = _table(
    'consumer_types',
    sa.Column('id', sa.Integer, primary_key=True),
    sa.Column('name', sa.Unicode(255), nullable=False),
    sa.UniqueConstraint('name', name='uniq_consumer_types0name'),
)

consumers = _table(
    'consumers',
    sa.Column('id', sa.Integer, primary_key=True),
    sa.Column('uuid', sa.String(36), nullable=False),
    sa.Column('project_id', sa.Integer, nullable=False),
    sa.Column('user_id', sa.Integer, nullable=False),
    sa.Column('generation', sa.Integer, nullable=False,
              default=0, server_default=sa.text('0')),
    sa.Column('consumer_type_id', sa.Integer,
              sa.ForeignKey('consumer_types.id',
                            name='consumers_consumer_type_id_fkey')),
    sa.UniqueConstraint('uuid', name='uniq_consumers0uuid'),
    sa.Index('consumers_project_id_uuid_idx', 'project_id', 'uuid'),
    sa.Index('consumers_project_id_user_id_uuid_idx',
             'project_id', 'user_id', 'uuid'),
    sa.Index('consumers_consumer_type_id_idx', 'consumer_type_id'),
)

projects = _table(
    'projects',
    sa.Column('id', sa.Integer, primary_key=True),
    sa.Column('external_id', sa.String(255), nullable=False),
    sa.UniqueConstraint('external_id', name='uniq_projects0external_id'),
)

users = _table(
    'users',
    sa.Column('id', sa.Integer, primary_key=True),
    sa.Column('external_id', sa.String(255), nullable=False),
    sa.UniqueConstraint('external_id', name='uniq_users0external_id'),
)

traits = _table(
    'traits',
    sa.Column('id', sa.Integer, primary_key=True),
    sa.Column('name', sa.Unicode(255), nullable=False),
    sa.UniqueConstraint('name', name='uniq_traits0name'),
)

resource_provider_traits = _table(
    'resource_provider_traits',
    sa.Column('trait_id', sa.Integer, primary_key=True),
    sa.Column('resource_provider_id', sa.Integer, primary_key=True),
    # Same order as upstream, for the same MySQL naming reason as above.
    sa.ForeignKeyConstraint(['resource_provider_id'],
                            ['resource_providers.id']),
    sa.ForeignKeyConstraint(['trait_id'], ['traits.id']),
    sa.Index('resource_provider_traits_resource_provider_trait_idx',
             'resource_provider_id', 'trait_id'),
)

placement_aggregates = _table(
    'placement_aggregates',
    sa.Column('id', sa.Integer, primary_key=True),
    sa.Column('uuid', sa.String(36)),
    sa.UniqueConstraint('uuid', name='uniq_placement_aggregates0uuid'),
)

resource_provider_aggregates = _table(
    'resource_provider_aggregates',
    sa.Column('resource_provider_id', sa.Integer, primary_key=True),
    sa.Column('aggregate_id', sa.Integer, primary_key=True),
    sa.Index('resource_provider_aggregates_aggregate_id_idx', 'aggregate_id'),
)
