"""Initial schema, as first released by upstream Placement.

Revision ID: b4ed3a175331
Revises:
Create Date: 2018-10-19
"""

import sqlalchemy as sa

from alembic import op

revision = 'b4ed3a175331'
down_revision = None
branch_labels = None
depends_on = None


def _table(name, *items):
    """Create a table with the timestamp columns every table starts with."""
    op.create_table(
        name,
        sa.Column('created_at', sa.DateTime, nullable=True),
        sa.Column('updated_at', sa.DateTime, nullable=True),
        *items,
        mysql_engine='InnoDB', mysql_charset='utf8mb4')


def _indexes(table, **indexes):
    for name, columns in indexes.items():
        op.create_index(name, table, columns)


def _id():
    return sa.Column('id', sa.Integer, primary_key=True)


def upgrade():
    _table('resource_classes', _id(),
           sa.Column('name', sa.String(255), nullable=False),
           sa.UniqueConstraint('name', name='uniq_resource_classes0name'))

    _table('resource_providers', _id(),
           sa.Column('uuid', sa.String(36), nullable=False),
           sa.Column('name', sa.Unicode(200), nullable=True),
           sa.Column('generation', sa.Integer, nullable=True),
           sa.Column('root_provider_id', sa.Integer, nullable=True),
           sa.Column('parent_provider_id', sa.Integer, nullable=True),
           sa.ForeignKeyConstraint(['parent_provider_id'],
                                   ['resource_providers.id']),
           sa.ForeignKeyConstraint(['root_provider_id'],
                                   ['resource_providers.id']),
           sa.UniqueConstraint('name', name='uniq_resource_providers0name'),
           sa.UniqueConstraint('uuid', name='uniq_resource_providers0uuid'))
    _indexes('resource_providers',
             resource_providers_name_idx=['name'],
             resource_providers_parent_provider_id_idx=['parent_provider_id'],
             resource_providers_root_provider_id_idx=['root_provider_id'],
             resource_providers_uuid_idx=['uuid'])

    _table('inventories', _id(),
           *(sa.Column(c, sa.Integer, nullable=False) for c in (
               'resource_provider_id', 'resource_class_id', 'total',
               'reserved', 'min_unit', 'max_unit', 'step_size')),
           sa.Column('allocation_ratio', sa.Float, nullable=False),
           sa.UniqueConstraint(
               'resource_provider_id', 'resource_class_id',
               name='uniq_inventories0resource_provider_resource_class'))
    _indexes('inventories',
             inventories_resource_class_id_idx=['resource_class_id'],
             inventories_resource_provider_id_idx=['resource_provider_id'],
             inventories_resource_provider_resource_class_idx=[
                 'resource_provider_id', 'resource_class_id'])

    _table('allocations', _id(),
           sa.Column('resource_provider_id', sa.Integer, nullable=False),
           sa.Column('consumer_id', sa.String(36), nullable=False),
           sa.Column('resource_class_id', sa.Integer, nullable=False),
           sa.Column('used', sa.Integer, nullable=False))
    _indexes('allocations',
             allocations_resource_provider_class_used_idx=[
                 'resource_provider_id', 'resource_class_id', 'used'],
             allocations_resource_class_id_idx=['resource_class_id'],
             allocations_consumer_id_idx=['consumer_id'])

    _table('consumers', _id(),
           sa.Column('uuid', sa.String(36), nullable=False),
           sa.Column('project_id', sa.Integer, nullable=False),
           sa.Column('user_id', sa.Integer, nullable=False),
           sa.Column('generation', sa.Integer, nullable=False,
                     server_default=sa.text('0')),
           sa.UniqueConstraint('uuid', name='uniq_consumers0uuid'))
    _indexes('consumers',
             consumers_project_id_user_id_uuid_idx=[
                 'project_id', 'user_id', 'uuid'],
             consumers_project_id_uuid_idx=['project_id', 'uuid'])

    for table in ('projects', 'users'):
        _table(table, _id(),
               sa.Column('external_id', sa.String(255), nullable=False),
               sa.UniqueConstraint('external_id',
                                   name=f'uniq_{table}0external_id'))

    _table('traits', _id(),
           sa.Column('name', sa.Unicode(255), nullable=False),
           sa.UniqueConstraint('name', name='uniq_traits0name'))

    _table('resource_provider_traits',
           sa.Column('trait_id', sa.Integer, primary_key=True),
           sa.Column('resource_provider_id', sa.Integer, primary_key=True),
           sa.ForeignKeyConstraint(['resource_provider_id'],
                                   ['resource_providers.id']),
           sa.ForeignKeyConstraint(['trait_id'], ['traits.id']))
    _indexes('resource_provider_traits',
             resource_provider_traits_resource_provider_trait_idx=[
                 'resource_provider_id', 'trait_id'])

    _table('placement_aggregates', _id(),
           sa.Column('uuid', sa.String(36), nullable=True),
           sa.UniqueConstraint('uuid', name='uniq_placement_aggregates0uuid'))
    _indexes('placement_aggregates',
             ix_placement_aggregates_uuid=['uuid'])

    _table('resource_provider_aggregates',
           sa.Column('resource_provider_id', sa.Integer, primary_key=True),
           sa.Column('aggregate_id', sa.Integer, primary_key=True))
    _indexes('resource_provider_aggregates',
             resource_provider_aggregates_aggregate_id_idx=['aggregate_id'])
