"""Refuse to continue while allocations reference no consumer record.

Revision ID: b5c396305c25
Revises: 611cd6dffd7b
Create Date: 2019-06-11

Consumer generations rely on a consumers row for every allocation; older
deployments create the missing rows with the online data migrations.
"""

import sqlalchemy as sa

from alembic import op

revision = 'b5c396305c25'
down_revision = '611cd6dffd7b'
branch_labels = None
depends_on = None


def upgrade():
    allocations = sa.table('allocations', sa.column('consumer_id'))
    consumers = sa.table('consumers', sa.column('id'), sa.column('uuid'))
    orphans = op.get_bind().scalar(
        sa.select(sa.func.count())
        .select_from(allocations.outerjoin(
            consumers, allocations.c.consumer_id == consumers.c.uuid))
        .where(consumers.c.id.is_(None)))
    if orphans:
        raise RuntimeError(
            f'{orphans} allocation(s) have no consumer record; run '
            '"placement-manage db online_data_migrations" before upgrading.')
