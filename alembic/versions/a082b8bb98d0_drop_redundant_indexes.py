"""Drop indexes already covered by unique constraints.

Revision ID: a082b8bb98d0
Revises: 422ece571366
Create Date: 2022-09-09
"""

from alembic import op

revision = 'a082b8bb98d0'
down_revision = '422ece571366'
branch_labels = None
depends_on = None

_REDUNDANT = {
    'inventories': ('inventories_resource_provider_id_idx',
                    'inventories_resource_provider_resource_class_idx'),
    'placement_aggregates': ('ix_placement_aggregates_uuid',),
    'resource_providers': ('resource_providers_name_idx',
                           'resource_providers_uuid_idx'),
}


def upgrade():
    for table, indexes in _REDUNDANT.items():
        for name in indexes:
            op.drop_index(name, table_name=table)
