"""Refuse to continue while providers lack a root_provider_id.

Revision ID: 611cd6dffd7b
Revises: b4ed3a175331
Create Date: 2019-05-09

Later code assumes every provider knows its root; older deployments fill
the column with the online data migrations, which must have run first.
"""

import sqlalchemy as sa

from alembic import op

revision = '611cd6dffd7b'
down_revision = 'b4ed3a175331'
branch_labels = None
depends_on = None


def upgrade():
    providers = sa.table('resource_providers', sa.column('root_provider_id'))
    missing = op.get_bind().scalar(
        sa.select(sa.func.count()).select_from(providers)
        .where(providers.c.root_provider_id.is_(None)))
    if missing:
        raise RuntimeError(
            f'{missing} resource provider(s) have no root_provider_id; run '
            '"placement-manage db online_data_migrations" before upgrading.')
